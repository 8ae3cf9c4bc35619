package shrink

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads"
)

// Reducer is one way to make a run smaller: a flag and the values to try for it, most reducing first
// (none: nothing left to try). Adding one is one value in Reducers.
type Reducer struct {
	Name string // what it tries, in words
	Flag string
	Next func(c Cmd) []string
}

// Reducers are tried in this order, each again while it is accepted: the time first, because every
// later candidate then runs shorter; then the faults, the owners and keys, the optional operations, and
// last the ranges, which matter least to a reader.
var Reducers = []Reducer{
	{"halve the run's time", "time", halveTime},
	{"halve the quiet time", "quiet", halveDuration("quiet", time.Second)},
	{"drop a fault kind", "nemesis", dropFault},
	{"fewer fault events", "nemesis-interval", fewerEvents},
	{"fire the faults by the lock's events", "nemesis-trigger", triggered},
	{"halve the clients", "clients", halveCount("clients")},
	{"halve the threads", "threads", halveCount("threads")},
	{"fewer keys", "keys", fewerKeys},
	{"no re-entry", "reentry", zero("reentry")},
	{"no cross-thread operations", "cross-thread", zero("cross-thread")},
	{"no force-unlocks", "force-unlock", zero("force-unlock")},
	{"narrow the hold range", "hold", narrow("hold")},
	{"narrow the lease range", "lease", narrow("lease")},
	{"narrow the wait range", "wait", narrow("wait")},
}

func halveDuration(flag string, floor time.Duration) func(Cmd) []string {
	return func(c Cmd) []string {
		d, err := time.ParseDuration(c.Get(flag))
		if err != nil || d <= floor {
			return nil
		}
		return []string{max(d/2, floor).String()}
	}
}

// halveTime halves --time down to 2 s, and never to or below --quiet, which must fit inside it.
func halveTime(c Cmd) []string {
	quiet, _ := time.ParseDuration(c.Get("quiet"))
	return halveDuration("time", max(2*time.Second, quiet+time.Second))(c)
}

func halveCount(flag string) func(Cmd) []string {
	return func(c Cmd) []string {
		n, err := strconv.Atoi(c.Get(flag))
		if err != nil || n <= 1 {
			return nil
		}
		return []string{strconv.Itoa(n / 2)}
	}
}

// fewerKeys tries one key, then half of them (0 is the lock's default: not fewer).
func fewerKeys(c Cmd) []string {
	n, err := strconv.Atoi(c.Get("keys"))
	if err != nil || n <= 1 {
		return nil
	}
	out := []string{"1"}
	if n/2 > 1 {
		out = append(out, strconv.Itoa(n/2))
	}
	return out
}

func zero(flag string) func(Cmd) []string {
	return func(c Cmd) []string {
		if v, err := strconv.ParseFloat(c.Get(flag), 64); err != nil || v == 0 {
			return nil
		}
		return []string{"0"}
	}
}

// faults is the run's fault list (none: empty).
func faults(c Cmd) []string {
	v := c.Get("nemesis")
	if v == "" || v == "none" {
		return nil
	}
	return strings.Split(v, ",")
}

// dropFault tries the list without each of its faults in turn, and a single fault's run without it.
func dropFault(c Cmd) []string {
	fs := faults(c)
	if len(fs) == 1 {
		return []string{"none"}
	}
	var out []string
	for i := range fs {
		out = append(out, strings.Join(slices.Delete(slices.Clone(fs), i, i+1), ","))
	}
	return out
}

// fewerEvents doubles the healthy time between faults while more than one fits in the run.
func fewerEvents(c Cmd) []string {
	iv, err1 := time.ParseDuration(c.Get("nemesis-interval"))
	run, err2 := time.ParseDuration(c.Get("time"))
	if len(faults(c)) == 0 || err1 != nil || err2 != nil || iv <= 0 || 2*iv > run {
		return nil
	}
	return []string{(2 * iv).String()}
}

// triggered fires the faults at the lock's own events, where every fault of the run takes a trigger:
// each event then lands on a holder instead of at a time.
func triggered(c Cmd) []string {
	fs := faults(c)
	if len(fs) == 0 || c.Get("nemesis-trigger") == "true" {
		return nil
	}
	for _, f := range fs {
		if !nemesis.HasTrigger(f) {
			return nil
		}
	}
	return []string{"true"}
}

// narrow tries the lower and then the upper half of a range, until it is a quarter of its low end wide.
func narrow(flag string) func(Cmd) []string {
	return func(c Cmd) []string {
		r, err := workloads.ParseRange(c.Get(flag))
		if err != nil || r.Max-r.Min <= max(r.Min/4, 10*time.Millisecond) {
			return nil
		}
		mid := (r.Min + r.Max) / 2
		return []string{workloads.Span(r.Min, mid).Text(), workloads.Span(mid, r.Max).Text()}
	}
}
