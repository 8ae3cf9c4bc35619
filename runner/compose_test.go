package runner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/runflag"
	"github.com/spf13/pflag"
)

// Every duration flag of lockcheck run has its row in runflag's table, and a value out of its row's range
// is refused in one line, the same line from the run's command line (Prepare) and from a spec's negative
// control (lockspec, when the spec is read): the range is checked in one place. Before runflag, a spec's
// --lease 1ns or --time 25h was read as valid and only its run refused it.
func TestEveryDurationFlagIsBoundedOnce(t *testing.T) {
	o := Defaults()
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.Flags(f)
	f.VisitAll(func(fl *pflag.Flag) {
		if fl.Value.Type() != "duration" {
			return
		}
		if _, ok := runflag.Lookup("--" + fl.Name); !ok {
			t.Errorf("--%s: a duration flag with no row in runflag.Flags", fl.Name)
		}
	})
	control := lockspec.ControlFlags()
	checked, fromSpec := 0, 0
	for _, row := range runflag.Flags {
		if !row.Bounded() {
			continue
		}
		bad := []string{"-1s", (row.Max + time.Hour).String()}
		if row.Min > 0 {
			bad = append(bad, (row.Min / 2).String())
			if row.Form == runflag.DurationRange {
				bad = append(bad, "0s-"+(2*row.Min).String()) // a draw may fall under the minimum
			}
		}
		for _, v := range bad {
			o := quickOptions(t)
			if err := o.setFlag(strings.TrimPrefix(row.Name, "--"), v); err != nil {
				t.Fatalf("%s %s: %v", row.Name, v, err)
			}
			_, err := Prepare(o)
			if err == nil || !IsUsage(err) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), row.Name) {
				t.Errorf("run %s %s: %v, want one line of bad input naming the flag", row.Name, v, err)
				continue
			}
			checked++
			if !slices.Contains(control, row.Name) {
				continue
			}
			serr := lockspec.CheckControlFlags([]string{row.Name, v})
			if serr == nil || serr.Error() != "flags: "+err.Error() {
				t.Errorf("spec control %s %s: %v, want the run's own line %q", row.Name, v, serr, err)
			}
			fromSpec++
		}
	}
	if checked < 30 || fromSpec < 10 {
		t.Errorf("only %d out-of-range values checked, %d of them from a spec", checked, fromSpec)
	}
	// lockcheck check's own --check-timeout is held to the same row.
	if err := CheckCheckTimeout(25 * time.Hour); err == nil || !errors.As(err, new(UsageError)) ||
		err.Error() != "--check-timeout must be at most 24h0m0s, got 25h0m0s" {
		t.Errorf("check --check-timeout 25h: %v", err)
	}
}

// Prepare reads top to bottom: its stages, in order, are the one path from options to a Test. A stage
// that is not reached when an earlier one refuses cannot have changed the options (the worker's and a
// control's flags are applied before anything is checked, and the checks before anything is made).
func TestStagesApplyFlagsBeforeChecking(t *testing.T) {
	var names []string
	for _, s := range stages {
		names = append(names, s.name)
	}
	order := []string{"worker control flags", "schedule", "lock kind", "control run", "bounds", "deployment"}
	for i := 1; i < len(order); i++ {
		if slices.Index(names, order[i-1]) > slices.Index(names, order[i]) || slices.Index(names, order[i]) < 0 {
			t.Fatalf("stages %q: want %q before %q", names, order[i-1], order[i])
		}
	}
	// A control's flag that puts the run out of range is refused by the same checks as the user's own: a
	// control cannot slip past them by being applied after the check, and a flag the user gave stays.
	text, err := os.ReadFile(filepath.Join("..", "examples", "locks", "setnx-broken.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "quiet.yaml")
	text = []byte(strings.Replace(string(text), `"400ms-1s"]`, `"400ms-1s", "--quiet", "2s"]`, 1))
	if err := os.WriteFile(spec, text, 0o644); err != nil {
		t.Fatal(err)
	}
	o := quickOptions(t)
	o.LockSpec, o.Given, o.Time = spec, map[string]bool{"time": true}, time.Second
	if _, err := Prepare(o); err == nil || err.Error() != "--quiet must be in [0, --time), got 2s" {
		t.Errorf("a control's --quiet 2s beside --time 1s: %v, want the run's own bound", err)
	}
	o.Given["quiet"] = true
	if test, err := Prepare(o); err != nil || test.Options.Quiet != o.Quiet || test.Options.Lease != 300*time.Millisecond {
		t.Errorf("the user's --quiet given: %v, quiet %v", err, test)
	}
}
