package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Single faults: one fault started and healed by a caller rather than by a Plan (a schedule's fault steps,
// workloads/schedule), recorded exactly as a plan's are.

// Aim draws the targets of one occurrence of fault name from rng and env's names, narrowed by sel as
// --nemesis-targets narrows a plan's (a schedule step's own targets); a sel the fault would ignore, or one
// it uses only part of, is refused as --nemesis-targets is.
func Aim(name string, sel Selector, rng *rand.Rand, env *Env) ([]Target, error) {
	f := registry[name]
	if f == nil {
		return nil, fmt.Errorf("unknown fault %q (have: %s)", name, strings.Join(Names(), ", "))
	}
	if err := f.Needs().check(name, env); err != nil {
		return nil, err
	}
	probe := *env
	probe.Targets = sel
	if err := checkTargets([]string{name}, &probe); err != nil {
		return nil, err
	}
	probe.used = nil
	return f.Targets(rng, &probe), nil
}

// Apply starts fault name now on targets (the primary is named as it starts) for d, records the start, and
// returns what heals it and records the stop, to be called once (d later); a fault that fails to start is
// recorded as an error (whatever part of it applied undone) and its heal does nothing. The fault sees d as
// its duration (what a plan's step gets from --nemesis-duration): a held reply is heard d late.
func Apply(ctx context.Context, env *Env, rec Recorder, name string, targets []Target, d time.Duration) (heal func()) {
	f := registry[name]
	if f == nil {
		record(rec, name, "error", targets, "start: unknown fault")
		return func() {}
	}
	e := *env
	e.Params.Duration = d
	if stop, ok := startFault(ctx, &e, rec, name, f, targets, nil); ok {
		return stop
	}
	return func() {}
}
