package main

import (
	"time"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workloads"
)

// durationRange is a duration flag that also takes a range, "1s-10s", drawn per acquire: it sets the
// range's ends, lo and hi (hi 0 for a single value, so options that take one value read lo as before).
type durationRange struct{ lo, hi *time.Duration }

func (r durationRange) String() string { return workloads.Span(*r.lo, *r.hi).Text() }

func (r durationRange) Set(s string) (err error) {
	*r.lo, *r.hi, err = runner.ParseDurationRange(s)
	return err
}

func (r durationRange) Type() string { return "duration" }
