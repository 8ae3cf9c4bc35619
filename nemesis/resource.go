package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

func init() { Register("resource-delay", resourceDelay{}) }

// resourceDelay delays one client's writes to the protected resource (the harness's) by --nemesis-duration:
// each write it sends during the fault lands that much later, after it released the lock, as a packet held
// in the network between holder and resource would (the reference's S3). Only fencing can refuse it.
type resourceDelay struct{}

type writeDelayer interface{ SetWriteDelay(time.Duration) }

func (resourceDelay) Targets(rng *rand.Rand, env *Env) []string { return pickClients(rng, env, "one") }

func (resourceDelay) Applies(env *Env) error { return needClients(env) }

func (resourceDelay) Start(_ context.Context, env *Env, targets []string) (string, error) {
	d := env.Params.Duration
	return "writes to the resource land " + d.String() + " after they are sent",
		eachDelayer(env, targets, func(w writeDelayer) { w.SetWriteDelay(d) })
}

func (resourceDelay) Stop(_ context.Context, env *Env, targets []string) error {
	return eachDelayer(env, targets, func(w writeDelayer) { w.SetWriteDelay(0) })
}

func eachDelayer(env *Env, targets []string, f func(writeDelayer)) error {
	for _, t := range targets {
		w, ok := clientOf(env, t).(writeDelayer)
		if !ok {
			return fmt.Errorf("client %q: its writes to the resource cannot be delayed", t)
		}
		f(w)
	}
	return nil
}
