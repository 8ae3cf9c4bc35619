package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
)

func init() { Register("clock-drift", clockDrift{}) }

// DriftPPM is how fast clock-drift makes a clock run: 25 % fast, far beyond Redlock's 1 % drift factor, so
// a 2 s lease on a drifting node ends after 1.6 s of real time.
const DriftPPM = 250_000

// clockDrift makes the wall clocks of a majority of the nodes run fast (a rate, not a jump: the reference's
// S8) until the fault ends, when they are set back to the real time. Redis expires keys by wall clock, so
// leases on those nodes end early by a share of their length.
type clockDrift struct{}

func (clockDrift) Targets(rng *rand.Rand, env *Env) []string { return pickNodes(rng, env, "majority") }

func (clockDrift) Start(_ context.Context, env *Env, targets []string) (string, error) {
	return fmt.Sprintf("clock runs %+d ppm fast", DriftPPM), eachNode(env, targets, func(p Process) error {
		d, ok := p.(interface{ SetClockDrift(ppm int64) error })
		if !ok {
			return fmt.Errorf("this node's clock cannot drift (lockcheck's own redis-server processes only)")
		}
		return d.SetClockDrift(DriftPPM)
	})
}

func (clockDrift) Stop(_ context.Context, env *Env, targets []string) error {
	return eachNode(env, targets, func(p Process) error { return p.SetClockOffset(0) })
}

// nodeClockFault marks the faults that move a node's clock: those nodes must preload the clock library.
type nodeClockFault interface{ movesNodeClock() }

func (clockDrift) movesNodeClock() {}
func (nodeClock) movesNodeClock()  {}
func (*strobe) movesNodeClock()    {}

// NeedsNodeClock reports whether any of faults moves a node's clock.
func NeedsNodeClock(faults []string) bool {
	for _, f := range faults {
		if _, ok := registry[f].(nodeClockFault); ok {
			return true
		}
	}
	return false
}
