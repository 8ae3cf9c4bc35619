package runner

import (
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// maxDuration bounds every duration flag: nothing in a run is meant to last longer than a day, and the
// bound keeps sums of them (the plan's minimum time, a lease's end) from overflowing.
const maxDuration = 24 * time.Hour

// durationBound is one duration flag's sane range. A zero min means any positive value; zeroOK admits 0
// as a value of its own (off, or "let the watchdog decide").
type durationBound struct {
	flag   string
	d      time.Duration
	to     time.Duration // a range's upper end (--lease 1s-10s), drawn up to; 0 for a single value
	min    time.Duration
	max    time.Duration
	zeroOK bool
	why    string // said when the value is positive but under min
}

// checkBounds refuses a duration flag outside its range, with one line naming the flag and the range.
func (o Options) checkBounds() error {
	ms := time.Millisecond
	inWholeMs := "it is sent to Redis in whole milliseconds"
	for _, b := range []durationBound{
		{flag: "--time", d: o.Time, max: maxDuration},
		// A fault shorter than a schedule's shortest is nothing a node or client can feel, and faults that
		// close together only flood the history with their records.
		{flag: "--nemesis-interval", d: o.NemesisInterval, min: schedule.MinFor, max: maxDuration, why: "a plan of faults closer together floods the history"},
		{flag: "--nemesis-duration", d: o.NemesisDuration, min: schedule.MinFor, max: maxDuration, why: "a shorter fault is nothing a node or client can feel"},
		{flag: "--lease", d: o.Lease, to: o.LeaseTo, min: ms, max: maxDuration, zeroOK: true, why: inWholeMs},
		{flag: "--watchdog", d: o.Watchdog, min: ms, max: maxDuration, why: "it is the lease, " + inWholeMs},
		{flag: "--wait", d: o.Wait, to: o.WaitTo, max: maxDuration, zeroOK: true},
		{flag: "--timeout", d: o.Timeout, max: maxDuration},
		{flag: "--check-timeout", d: o.CheckTimeout, max: maxDuration},
		{flag: "--latency", d: o.Latency, min: ms, max: time.Hour, zeroOK: true, why: "toxiproxy delays in whole milliseconds"},
		{flag: "--jitter", d: o.Jitter, min: ms, max: time.Hour, zeroOK: true, why: "toxiproxy delays in whole milliseconds"},
		{flag: "--clock-bump", d: o.ClockBump, min: ms, max: maxDuration, why: "a smaller jump is no clock fault"},
	} {
		if err := b.check(); err != nil {
			return err
		}
	}
	if o.Quiet < 0 || o.Quiet >= o.Time {
		if o.Given != nil && !o.Given["quiet"] && o.Quiet == Defaults().Quiet { // the user never wrote --quiet
			return usagef("--time %s is not longer than --quiet's default %s (the fault-free end of the run): "+
				"give a longer --time, or --quiet below %s (0 for none)", o.Time, o.Quiet, o.Quiet)
		}
		return usagef("--quiet must be in [0, --time), got %s", o.Quiet)
	}
	if faults, _ := nemesis.Parse(o.Nemesis, nil); slices.Contains(faults, "latency") && o.Latency == 0 && o.Jitter == 0 {
		return usagef("--nemesis latency with --latency 0 and --jitter 0 delays nothing")
	}
	return nil
}

func (b durationBound) check() error {
	if b.to != 0 {
		span := workloads.Span(b.d, b.to).Text()
		switch {
		case b.to < b.d:
			return usagef("%s %s-%s: want min <= max", b.flag, b.d, b.to)
		case b.to > b.max:
			return usagef("%s %s: at most %s", b.flag, span, b.max)
		case b.d < b.min: // a draw may fall anywhere in the range, 0 < draw < min too
			return usagef("%s %s: every value drawn from the range must be at least %s (%s): start it at %s or more",
				b.flag, span, b.min, b.why, b.min)
		}
	}
	switch {
	case b.d == 0 && b.zeroOK:
		return nil
	case b.d <= 0 && !b.zeroOK:
		return usagef("%s must be positive, got %s", b.flag, b.d)
	case b.d < 0:
		return usagef("%s must not be negative, got %s", b.flag, b.d)
	case b.d < b.min:
		return usagef("%s must be at least %s (%s), got %s", b.flag, b.min, b.why, b.d)
	case b.d > b.max:
		return usagef("%s must be at most %s, got %s", b.flag, b.max, b.d)
	}
	return nil
}

// nodesFor is the node count to start: --nodes (given: 0 when unset) only means something for redlock; an
// external deployment names its own nodes. A --nodes that would be ignored is refused.
func nodesFor(topo string, given int, ext *topology.External) (int, error) {
	k := topology.KindNamed(topo)
	switch {
	case given < 0:
		return 0, usagef("--nodes must be at least 1, got %d", given)
	case ext != nil && given != 0:
		return 0, usagef("--nodes %d: --backend external uses the deployment's own %d node(s)", given, len(ext.Nodes))
	case ext != nil:
		return len(ext.Nodes), nil
	case k.Masters && given == 0:
		return k.DefaultMasters, nil
	case k.Masters || !k.Known():
		return given, nil // an unknown topology is reported by its own check
	case given != 0:
		return 0, usagef("--nodes %d: only --topology redlock takes it (%s has %d node(s))", given, topo,
			topology.NodeCount(topo, 0))
	}
	return 0, nil
}

// CheckCheckTimeout bounds `lockcheck check --check-timeout` as `run` bounds its own.
func CheckCheckTimeout(d time.Duration) error {
	return durationBound{flag: "--check-timeout", d: d, max: maxDuration}.check()
}
