package lockspec

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/runflag"
)

// controlFlags are the run flags a negative control may set: the workload's shape and timing, nothing
// else. Each value is read and bounded as the run's own flag is (runflag), so a value the command line
// refuses is refused when the spec is read. A control's flags come from a file, which may come from a pull
// request, and are applied as if typed: a flag naming a file, a command, an address, a backend, a results
// directory or a fault would let that file run or reach anything.
var controlFlags = []string{"--clients", "--keys", "--group", "--permits", "--count", "--lease", "--hold", "--wait",
	"--watchdog", "--timeout", "--threads", "--reentry", "--readers", "--time", "--quiet"}

// ControlFlags lists the flags a negative control may set, sorted.
func ControlFlags() []string {
	out := append([]string(nil), controlFlags...)
	sort.Strings(out)
	return out
}

// CheckControlFlags checks a negative control's flags: "--flag value" pairs, each flag one of
// ControlFlags, each value of its flag's form and within its range (runflag). The error is one line.
func CheckControlFlags(flags []string) error {
	if len(flags)%2 != 0 {
		return fmt.Errorf("flags come in pairs (--flag value)")
	}
	for i := 0; i < len(flags); i += 2 {
		name, value := flags[i], flags[i+1]
		f, ok := runflag.Lookup(name)
		if !ok || !slices.Contains(controlFlags, name) {
			return fmt.Errorf("flags: %q is not a flag a control may set (only the workload's: %s)",
				name, strings.Join(ControlFlags(), ", "))
		}
		if err := f.Check(value); err != nil {
			if errors.As(err, new(runflag.RangeError)) { // its line names the flag and the value
				return fmt.Errorf("flags: %v", err)
			}
			return fmt.Errorf("flags: %s %q: %v", name, value, err)
		}
	}
	return nil
}
