package lockspec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/workloads"
)

// controlFlags are the run flags a negative control may set, each with a check of its value's form (the
// run checks its range): the workload's shape and timing, nothing else. A control's flags come from a
// file, which may come from a pull request, and are applied as if typed: a flag naming a file, a command,
// an address, a backend, a results directory or a fault would let that file run or reach anything.
var controlFlags = map[string]func(string) error{
	"--clients": integer, "--keys": integer, "--group": integer, "--permits": integer, "--count": integer,
	"--lease": durationRange, "--hold": holdRange, "--wait": durationRange, "--watchdog": duration, "--timeout": duration,
	"--threads": integer,
	"--reentry": fraction, "--readers": ratio, "--time": duration, "--quiet": duration,
}

// ControlFlags lists the flags a negative control may set, sorted.
func ControlFlags() []string {
	out := make([]string, 0, len(controlFlags))
	for f := range controlFlags {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// CheckControlFlags checks a negative control's flags: "--flag value" pairs, each flag one of
// ControlFlags, each value of its flag's form. The error is one line.
func CheckControlFlags(flags []string) error {
	if len(flags)%2 != 0 {
		return fmt.Errorf("flags come in pairs (--flag value)")
	}
	for i := 0; i < len(flags); i += 2 {
		name, value := flags[i], flags[i+1]
		check, ok := controlFlags[name]
		if !ok {
			return fmt.Errorf("flags: %q is not a flag a control may set (only the workload's: %s)",
				name, strings.Join(ControlFlags(), ", "))
		}
		if err := check(value); err != nil {
			return fmt.Errorf("flags: %s %q: %v", name, value, err)
		}
	}
	return nil
}

func integer(s string) error {
	if _, err := strconv.ParseInt(s, 10, 64); err != nil {
		return fmt.Errorf("want an integer")
	}
	return nil
}

func duration(s string) error {
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Errorf("want a duration such as 300ms")
	}
	return nil
}

// durationRange is --lease's and --wait's form: a duration, or a range of two drawn per acquire.
func durationRange(s string) error {
	if _, err := workloads.ParseRange(s); err != nil {
		return fmt.Errorf("want a duration such as 300ms, or a range such as 1s-10s")
	}
	return nil
}

func holdRange(s string) error {
	_, err := workloads.ParseRange(s)
	return err
}

func fraction(s string) error {
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || workloads.CheckChance("", p) != nil {
		return fmt.Errorf("want a chance in [0, 1] such as 0.2")
	}
	return nil
}

// ratio is --readers' READERS:WRITERS, two integers (the run checks their values).
func ratio(s string) error {
	r, w, ok := strings.Cut(s, ":")
	if integer(r) != nil || integer(w) != nil || !ok {
		return fmt.Errorf("want READERS:WRITERS, e.g. 3:1")
	}
	return nil
}
