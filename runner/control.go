package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/workloads"
)

// controlRun fills in a negative control's own run flags (Kind.Flags) where the user gave none, and says
// so: these are the fault-free runs on which the control must be flagged. It does so only for options from
// a command line (Given), a fault-free run, and the lock's own clients (a worker's control brings its own
// flags). Only the workload flags of lockspec.ControlFlags are applied: a spec's control comes from a file,
// and is checked against the same list when it is read; the built-in controls are held to it here.
func (o *Options) controlRun(k *kinds.Kind) (string, error) {
	if o.Given == nil || o.Worker.active() || (o.Nemesis != "none" && o.Nemesis != "") || k.Broken == "" || o.Schedule != "" {
		return "", nil
	}
	if err := lockspec.CheckControlFlags(k.Flags); err != nil {
		return "", usagef("negative control %s: %v", k.Name, err)
	}
	applied, err := o.applyControl(k.Flags)
	if err != nil {
		return "", usagef("negative control %s: %v", k.Name, err)
	}
	return fmt.Sprintf("%s is a negative control: it %s; it must be flagged%s", k.Name, k.Broken, applied), nil
}

// workerControl gives a registered worker's run its lock when the command line names none and, for a
// fault-free run, the worker's own control flags (Spec.Flags: trusted code, so a control may also set the
// nemesis flags that show its flaw) wherever the command line gave none.
func (o *Options) workerControl() (string, error) {
	if o.Given == nil || o.Worker.Client == "" {
		return "", nil
	}
	name, _, err := SplitClient(o.Worker.Client) // NAME[@VERSION],go: the worker's defaults too
	if err != nil {
		return "", err
	}
	s, _, err := worker.Lookup(name)
	if err != nil {
		return "", UsageError{err}
	}
	if !o.Given["lock"] && !o.Given["lock-spec"] && s.Lock != "" {
		o.Lock = s.Lock
	}
	if o.Nemesis != "none" && o.Nemesis != "" || o.Schedule != "" { // a schedule states its own steps
		return "", nil
	}
	applied, err := o.applyControl(s.Flags)
	if err != nil {
		return "", fmt.Errorf("worker %s: %v", s.Name, err)
	}
	if s.Broken == "" {
		return "", nil
	}
	return fmt.Sprintf("worker %s is a negative control: it %s; it must be flagged%s", s.Name, s.Broken, applied), nil
}

// applyControl sets a control's flags ("--flag value" pairs) the command line did not give, and says
// which it set, " (run with ...)", or "" when the command line gave them all: a hint to run with flags
// already given reads as if they had been ignored.
func (o *Options) applyControl(flags []string) (string, error) {
	var applied []string
	for i := 0; i+1 < len(flags); i += 2 {
		name := strings.TrimPrefix(flags[i], "--")
		if o.Given[name] {
			continue
		}
		if err := o.setFlag(name, flags[i+1]); err != nil {
			return "", err
		}
		applied = append(applied, flags[i], flags[i+1])
	}
	if len(applied) == 0 {
		return "", nil
	}
	return " (run with " + strings.Join(applied, " ") + ")", nil
}

// ParseDurationRange reads --lease's and --wait's form: a duration, or a range drawn per acquire ("1s-10s").
// It gives the range's ends, hi 0 for a single value (so that options taking one value read lo as before).
func ParseDurationRange(s string) (lo, hi time.Duration, err error) {
	if d, err := time.ParseDuration(s); err == nil { // a single value: its bounds are checked with the others'
		return d, 0, nil
	}
	v, err := workloads.ParseRange(s)
	if err != nil {
		return 0, 0, err
	}
	if v.Max != v.Min {
		hi = v.Max
	}
	return v.Min, hi, nil
}
