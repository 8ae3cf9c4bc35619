package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Faults on the nodes' wall clocks (through the clockshift library each node lockcheck starts preloads).
// Redis expires keys by wall clock, so leases on those nodes end early.
func init() {
	Register("clock", nodeClock{})
	Register("clock-strobe", strobe{})
	Register("clock-drift", clockDrift{})
	RegisterTriggered("clock", "grant", holderNodes)
	RegisterTriggered("clock-strobe", "grant", holderNodes)
}

// DriftPPM is how fast clock-drift makes a clock run: 25 % fast, far beyond Redlock's 1 % drift factor, so
// a 2 s lease on a drifting node ends after 1.6 s of real time.
const DriftPPM = 250_000

// nodeClock jumps the wall clock of a majority of the nodes ahead by the clock bump and resets it when the
// fault ends.
type nodeClock struct{}

func (nodeClock) Needs() Needs { return NeedsClockLib }

func (nodeClock) Targets(rng *rand.Rand, env *Env) []Target {
	return named(pickNodes(rng, env, "majority"))
}

func (nodeClock) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	d := env.Params.ClockBump
	return "clock offset +" + d.String(), resetClocks(env, targets),
		eachNode(env, targets, func(p Process) error { return p.SetClockOffset(d) })
}

func resetClocks(env *Env, targets []Target) Heal {
	return func(context.Context) error {
		return eachNode(env, targets, func(p Process) error { return p.SetClockOffset(0) })
	}
}

// strobe flips the clocks of a majority of the nodes between true time and +bump every 100 ms for the
// fault's length (Jepsen's strobe-time), then resets them.
type strobe struct{}

func (strobe) Needs() Needs { return NeedsClockLib }

func (strobe) Targets(rng *rand.Rand, env *Env) []Target { return nodeClock{}.Targets(rng, env) }

func (strobe) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	reset := resetClocks(env, targets)
	if err := eachNode(env, targets, func(p Process) error { return p.SetClockOffset(env.Params.ClockBump) }); err != nil {
		return "", reset, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		on := true
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				on = !on
				d := time.Duration(0)
				if on {
					d = env.Params.ClockBump
				}
				_ = eachNode(env, targets, func(p Process) error { return p.SetClockOffset(d) })
			}
		}
	}()
	heal := func(hctx context.Context) error {
		cancel()
		return reset(hctx)
	}
	return "clock flips between +0 and +" + env.Params.ClockBump.String() + " every 100ms", heal, nil
}

// clockDrift makes the wall clocks of a majority of the nodes run fast (a rate, not a jump: the reference's
// S8) until the fault ends, when they are set back to the real time: leases on those nodes end early by a
// share of their length.
type clockDrift struct{}

func (clockDrift) Needs() Needs { return NeedsClockLib }

func (clockDrift) Targets(rng *rand.Rand, env *Env) []Target {
	return named(pickNodes(rng, env, "majority"))
}

func (clockDrift) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	return fmt.Sprintf("clock runs %+d ppm fast", DriftPPM), resetClocks(env, targets), eachNode(env, targets, func(p Process) error {
		d, ok := p.(interface{ SetClockDrift(ppm int64) error })
		if !ok {
			return fmt.Errorf("this node's clock cannot drift (lockcheck's own redis-server processes only)")
		}
		return d.SetClockDrift(DriftPPM)
	})
}

// NeedsNodeClock reports whether any of faults moves a node's clock: those nodes must preload the clock
// library.
func NeedsNodeClock(faults []string) bool {
	return slices.ContainsFunc(faults, func(f string) bool { return NeedsOf(f)&NeedsClockLib != 0 })
}

// holderNodes aims a node fault at the nodes that hold the lock just granted, as many as the plan drew,
// topped up with the planned ones.
func holderNodes(ev Event, planned []Target) []Target {
	var out []Target
	held := make([]Target, 0, len(ev.Nodes)+len(planned))
	for _, n := range ev.Nodes {
		held = append(held, NameTarget(n))
	}
	for _, t := range append(held, planned...) {
		if len(out) < len(planned) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
