package main

import (
	"time"

	"github.com/lockcheck/lockcheck/workloads"
)

// durationRange is a duration flag that also takes a range, "1s-10s", drawn per acquire: it sets the
// range's ends, lo and hi (hi 0 for a single value, so options that take one value read lo as before).
type durationRange struct{ lo, hi *time.Duration }

func (r durationRange) String() string { return workloads.Span(*r.lo, *r.hi).Text() }

func (r durationRange) Set(s string) error {
	if d, err := time.ParseDuration(s); err == nil { // a single value: its bounds are checked with the others'
		*r.lo, *r.hi = d, 0
		return nil
	}
	v, err := workloads.ParseRange(s)
	if err != nil {
		return err
	}
	*r.lo, *r.hi = v.Min, 0
	if v.Max != v.Min {
		*r.hi = v.Max
	}
	return nil
}

func (r durationRange) Type() string { return "duration" }
