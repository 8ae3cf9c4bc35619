package kinds

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
)

// extraChecks are the checker groups a run turns on by name (--check NAME, a suite's flags: {check: NAME}),
// beyond what its family always runs: each sets its field of the recorded Checks, so an offline check of
// the history runs them too. A new group is one value here and one field of Checks.
var extraChecks = map[string]func(*Checks){
	"liveness": func(c *Checks) { c.Liveness = true },
}

// Ask turns on the comma-separated groups in names ("" turns on none).
func (c *Checks) Ask(names string) error {
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		set, ok := extraChecks[n]
		if !ok {
			var have []string
			for k := range extraChecks {
				have = append(have, k)
			}
			sort.Strings(have)
			return fmt.Errorf("--check %q: want one of %s", n, strings.Join(have, ", "))
		}
		set(c)
	}
	return nil
}

// liveness is the liveness group: slow wake-ups and starvation after the last heal. The read-write lock,
// semaphores and the latch promise other things and are not judged by it; nor is the multi lock, whose
// groups of keys one waiter may wait on for any of them.
func liveness(c Checks) []checker.Checker {
	if !c.Liveness || c.Group {
		return nil
	}
	return []checker.Checker{checker.SlowWakeup{}, checker.Starvation{Fair: c.Fair}, checker.KeptAlive{}}
}
