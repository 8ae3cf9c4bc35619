package nemesis

import (
	"context"
	"math/rand/v2"
)

func init() {
	Register("client-stall", clientStall{})
	// At an unlock the caller has left its critical section but still holds the lock: frozen there, its
	// lease runs out with nobody inside, as when a process hangs or dies before it releases. Only the lock
	// itself can then wake its waiters: liveness, not exclusion, is what this fault tests.
	RegisterTriggered("client-stall", "unlock", func(ev Event, _ []string) []string { return []string{ev.Client} })
}

// clientStall freezes one client entirely (commands, watchdog, workload; a worker's process) at once, or
// with --nemesis-trigger as it begins an unlock, until the fault stops. Unlike client-pause it does not wait
// for a grant, so the client is frozen outside any critical section.
type clientStall struct{}

func (clientStall) Targets(rng *rand.Rand, env *Env) []string { return pickClients(rng, env, "one") }

func (clientStall) Applies(env *Env) error { return needClients(env) }

func (clientStall) Start(_ context.Context, env *Env, targets []string) (string, error) {
	return "frozen: commands, watchdog and workload stop", eachClient(env, targets, func(c Client, _ string) { c.Pause() })
}

func (clientStall) Stop(_ context.Context, env *Env, targets []string) error {
	return eachClient(env, targets, func(c Client, _ string) { c.Resume() })
}
