package shrink

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runflag"
	"github.com/lockcheck/lockcheck/workloads"
)

// Reducer is one way to make a run smaller: a flag and the values to try for it, most reducing first
// (none: nothing left to try). Adding one is one value in Reducers.
type Reducer struct {
	Name string // what it tries, in words
	Flag string
	Next func(c Cmd) []string
	Then func(c Cmd) Cmd // optional: tidies a candidate (flags its change left without meaning)
}

// Reducers are tried in this order, each again while it is accepted: the time first, because every
// later candidate then runs shorter; then the faults, the owners and keys, the optional operations, and
// last the ranges, which matter least to a reader.
var Reducers = []Reducer{
	{"halve the run's time", "time", halveTime, nil},
	{"halve the quiet time", "quiet", halveDuration("quiet", time.Second), nil},
	{"drop a fault kind", "nemesis", random(dropFault), faultFree},
	{"fire the faults by the lock's events", "nemesis-trigger", random(triggered), nil},
	{"halve the clients", "clients", random(halveCount("clients")), nil},
	{"halve the threads", "threads", random(halveCount("threads")), nil},
	{"fewer keys", "keys", random(fewerKeys), nil},
	{"no re-entry", "reentry", random(zero("reentry")), nil},
	{"no cross-thread operations", "cross-thread", random(zero("cross-thread")), nil},
	{"no force-unlocks", "force-unlock", random(zero("force-unlock")), nil},
	{"narrow the hold range", "hold", random(narrow("hold")), nil},
	{"narrow the lease range", "lease", random(narrow("lease")), nil},
	{"narrow the wait range", "wait", random(narrow("wait")), nil},
}

// random is a reducer of the random workload or the fault plan: a run that plays a schedule (--schedule)
// has neither (its steps say the clients, leases, holds and faults), so it tries nothing there.
func random(next func(Cmd) []string) func(Cmd) []string {
	return func(c Cmd) []string {
		if c.Get("schedule") != "" {
			return nil
		}
		return next(c)
	}
}

func halveDuration(flag string, floor time.Duration) func(Cmd) []string {
	return func(c Cmd) []string {
		d, err := time.ParseDuration(c.Get(flag))
		if err != nil || d <= floor {
			return nil
		}
		return []string{max(roundDuration(d/2), floor).String()} // never rounded below the floor
	}
}

// roundDuration keeps two significant digits of a halved value, so that a minimal command reads as a person
// would write it: 16ms, not 15.9375ms; 330ms, not 333.333333ms; 1.9s, not 1.875s.
func roundDuration(d time.Duration) time.Duration {
	unit := time.Millisecond
	for unit*100 <= d {
		unit *= 10
	}
	if r := d.Round(unit); r > 0 {
		return r
	}
	return d
}

// halveTime halves --time down to 2 s, never below what the fault plan needs (nemesis.Schedule's
// MinTotal: every fault kind fits, then the quiet time), nor to --quiet itself. It is also the reducer of
// fault events: a run at that floor has one event of each kind.
func halveTime(c Cmd) []string {
	s := faultPlan(c)
	floor := max(2*time.Second, s.Quiet+time.Second, s.MinTotal())
	if floor > s.Total*3/4 { // a step that saves less than a quarter is not worth its runs (yet: fewer faults lower the floor)
		return nil
	}
	return halveDuration("time", floor)(c)
}

// faultPlan is the command's fault schedule, as far as the plan's length needs it.
func faultPlan(c Cmd) nemesis.Schedule {
	d := func(flag string) time.Duration {
		v, _ := time.ParseDuration(c.Get(flag))
		return v
	}
	return nemesis.Schedule{Faults: faults(c), Total: d("time"), Interval: d("nemesis-interval"),
		Duration: d("nemesis-duration"), Quiet: d("quiet")}
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

// faultFlags only mean something with faults: a fault-free run is refused with --nemesis-targets.
var faultFlags = []string{"nemesis-targets", "nemesis-trigger", "nemesis-interval", "nemesis-duration"}

// faultFree drops faultFlags from a run without faults, and --nemesis-trigger from one whose faults take
// no trigger (the runner refuses both).
func faultFree(c Cmd) Cmd {
	fs := faults(c)
	if len(fs) == 0 {
		return c.Without(faultFlags...)
	}
	if !slices.ContainsFunc(fs, nemesis.HasTrigger) {
		return c.Without("nemesis-trigger")
	}
	return c
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
		r, err := runflag.ParseSpan(c.Get(flag)) // read as the run reads the flag
		if err != nil || r.Max-r.Min <= max(r.Min/4, 10*time.Millisecond) {
			return nil
		}
		mid := roundDuration((r.Min + r.Max) / 2)
		if mid <= r.Min || mid >= r.Max {
			return nil
		}
		return []string{workloads.Span(r.Min, mid).Text(), workloads.Span(mid, r.Max).Text()}
	}
}
