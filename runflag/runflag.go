// Package runflag is how a run's flag values are read and bounded, in one table: each flag's form (an
// integer, a duration, a range drawn per acquire, a chance, a ratio) and each duration flag's sane range.
// lockcheck run's flags (runner), a negative control's flags from a spec file (lockspec) and shrink's
// narrowed ranges all read and check a value through it, so a value refused on the command line is refused
// in a spec file too, in the same words.
package runflag

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/workloads"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// MaxDuration bounds every duration flag: nothing in a run is meant to last longer than a day, and the
// bound keeps sums of them (the plan's minimum time, a lease's end) from overflowing.
const MaxDuration = 24 * time.Hour

// Form is how a flag's value is written.
type Form int

const (
	Integer       Form = iota + 1
	Duration           // 300ms
	DurationRange      // a duration, or a range drawn per acquire: 1s-10s (--lease, --wait)
	Range              // always a range, a single value a range of one: --hold 10ms-200ms
	Chance             // a probability in [0, 1]
	Ratio              // READERS:WRITERS
)

// Flag is one run flag's form and, for a duration, its sane range. A zero Min means any positive value;
// ZeroOK admits 0 as a value of its own (off, or "let the watchdog decide").
type Flag struct {
	Name   string // with its "--"
	Form   Form
	Min    time.Duration
	Max    time.Duration
	ZeroOK bool
	Why    string // said when a value is positive but under Min
}

const inWholeMs = "it is sent to Redis in whole milliseconds"

// Flags is every run flag whose value this package reads: one row per flag. A new duration flag of
// runner.Options needs its row here (TestEveryDurationFlagHasItsRow); --quiet's range is --time's, checked
// by the run beside the others.
var Flags = []Flag{
	{Name: "--time", Form: Duration, Max: MaxDuration},
	// A fault shorter than a schedule's shortest is nothing a node or client can feel, and faults that
	// close together only flood the history with their records.
	{Name: "--nemesis-interval", Form: Duration, Min: schedule.MinFor, Max: MaxDuration, Why: "a plan of faults closer together floods the history"},
	{Name: "--nemesis-duration", Form: Duration, Min: schedule.MinFor, Max: MaxDuration, Why: "a shorter fault is nothing a node or client can feel"},
	{Name: "--lease", Form: DurationRange, Min: time.Millisecond, Max: MaxDuration, ZeroOK: true, Why: inWholeMs},
	{Name: "--watchdog", Form: Duration, Min: time.Millisecond, Max: MaxDuration, Why: "it is the lease, " + inWholeMs},
	{Name: "--wait", Form: DurationRange, Max: MaxDuration, ZeroOK: true},
	{Name: "--timeout", Form: Duration, Max: MaxDuration},
	{Name: "--check-timeout", Form: Duration, Max: MaxDuration},
	{Name: "--latency", Form: Duration, Min: time.Millisecond, Max: time.Hour, ZeroOK: true, Why: "toxiproxy delays in whole milliseconds"},
	{Name: "--jitter", Form: Duration, Min: time.Millisecond, Max: time.Hour, ZeroOK: true, Why: "toxiproxy delays in whole milliseconds"},
	{Name: "--clock-bump", Form: Duration, Min: time.Millisecond, Max: MaxDuration, Why: "a smaller jump is no clock fault"},
	{Name: "--quiet", Form: Duration},
	{Name: "--hold", Form: Range},
	{Name: "--reentry", Form: Chance},
	{Name: "--readers", Form: Ratio},
	{Name: "--clients", Form: Integer}, {Name: "--threads", Form: Integer}, {Name: "--keys", Form: Integer},
	{Name: "--group", Form: Integer}, {Name: "--permits", Form: Integer}, {Name: "--count", Form: Integer},
}

// Lookup is the row of a flag ("--lease").
func Lookup(name string) (Flag, bool) {
	for _, f := range Flags {
		if f.Name == name {
			return f, true
		}
	}
	return Flag{}, false
}

// Bounded reports whether the flag's values have a range of their own (Check refuses a value outside it).
func (f Flag) Bounded() bool { return f.Max > 0 }

// Check reads a value as the flag's form and refuses it outside the flag's range: one line, naming the
// flag for a bound ("--lease must be at least 1ms ..."), or saying what form was wanted.
func (f Flag) Check(value string) error {
	switch f.Form {
	case Integer:
		return integer(value)
	case Duration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("want a duration such as 300ms")
		}
		return f.Bound(d, 0)
	case DurationRange:
		lo, hi, err := ParseDurationRange(value)
		if err != nil {
			return fmt.Errorf("want a duration such as 300ms, or a range such as 1s-10s")
		}
		return f.Bound(lo, hi)
	case Range:
		_, err := workloads.ParseRange(value)
		return err
	case Chance:
		p, err := strconv.ParseFloat(value, 64)
		if err != nil || workloads.CheckChance("", p) != nil {
			return fmt.Errorf("want a chance in [0, 1] such as 0.2")
		}
	case Ratio: // two integers; the run checks their values
		r, w, ok := strings.Cut(value, ":")
		if !ok || integer(r) != nil || integer(w) != nil {
			return fmt.Errorf("want READERS:WRITERS, e.g. 3:1")
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

// RangeError is a value of the right form outside its flag's range; its line names the flag.
type RangeError struct{ error }

func rangef(format string, a ...any) error { return RangeError{fmt.Errorf(format, a...)} }

// Bound refuses a duration (or the range d-to, to 0 for a single value) outside the flag's range, with one
// line naming the flag and the range. A flag with no range of its own takes any value.
func (f Flag) Bound(d, to time.Duration) error {
	if !f.Bounded() {
		return nil
	}
	if to != 0 {
		span := workloads.Span(d, to).Text()
		switch {
		case to < d:
			return rangef("%s %s-%s: want min <= max", f.Name, d, to)
		case to > f.Max:
			return rangef("%s %s: at most %s", f.Name, span, f.Max)
		case d < f.Min: // a draw may fall anywhere in the range, 0 < draw < min too
			return rangef("%s %s: every value drawn from the range must be at least %s (%s): start it at %s or more",
				f.Name, span, f.Min, f.Why, f.Min)
		}
	}
	switch {
	case d == 0 && f.ZeroOK:
		return nil
	case d <= 0 && !f.ZeroOK:
		return rangef("%s must be positive, got %s", f.Name, d)
	case d < 0:
		return rangef("%s must not be negative, got %s", f.Name, d)
	case d < f.Min:
		return rangef("%s must be at least %s (%s), got %s", f.Name, f.Min, f.Why, d)
	case d > f.Max:
		return rangef("%s must be at most %s, got %s", f.Name, f.Max, d)
	}
	return nil
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

// ParseSpan reads a value of a DurationRange or Range flag as the range it draws from (a single value a
// range of one).
func ParseSpan(s string) (workloads.Range, error) {
	lo, hi, err := ParseDurationRange(s)
	if err != nil {
		return workloads.Range{}, err
	}
	return workloads.Span(lo, hi), nil
}
