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
	if o.Given == nil || o.Worker.active() || (o.Nemesis != "none" && o.Nemesis != "") || k.Broken == "" {
		return "", nil
	}
	if err := lockspec.CheckControlFlags(k.Flags); err != nil {
		return "", usagef("negative control %s: %v", k.Name, err)
	}
	for i := 0; i+1 < len(k.Flags); i += 2 {
		name := strings.TrimPrefix(k.Flags[i], "--")
		if o.Given[name] {
			continue
		}
		if err := o.setFlag(name, k.Flags[i+1]); err != nil {
			return "", usagef("negative control %s: %v", k.Name, err)
		}
	}
	note := fmt.Sprintf("%s is a negative control: it %s; it must be flagged", k.Name, k.Broken)
	if len(k.Flags) > 0 {
		note += fmt.Sprintf(" (run with %s)", strings.Join(k.Flags, " "))
	}
	return note, nil
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
	if o.Nemesis != "none" && o.Nemesis != "" {
		return "", nil
	}
	for i := 0; i+1 < len(s.Flags); i += 2 {
		name := strings.TrimPrefix(s.Flags[i], "--")
		if o.Given[name] {
			continue
		}
		if err := o.setFlag(name, s.Flags[i+1]); err != nil {
			return "", fmt.Errorf("worker %s: %v", s.Name, err)
		}
	}
	if s.Broken == "" {
		return "", nil
	}
	return fmt.Sprintf("worker %s is a negative control: it %s; it must be flagged (run with %s)",
		s.Name, s.Broken, strings.Join(s.Flags, " ")), nil
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
