package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Faults on the lock clients themselves: frozen, their clocks moved, their writes to the resource delayed.
func init() {
	Register("client-pause", clientPause{})
	RegisterTriggered("client-pause", "grant", toCaller)
	Register("client-stall", clientStall{})
	// At an unlock the caller has left its critical section but still holds the lock: frozen there, its
	// lease runs out with nobody inside, as when a process hangs or dies before it releases. Only the lock
	// itself can then wake its waiters: liveness, not exclusion, is what this fault tests.
	RegisterTriggered("client-stall", "unlock", toCaller)
	Register("client-clock", clientClock{})
	RegisterTriggered("client-clock", "attempt", callerClock)
	Register("resource-delay", resourceDelay{})
	// resource-delay right after a grant delays that holder's writes: its first one lands after its lease,
	// whoever holds the lock then (a delay drawn on a random client mostly found it holding nothing).
	RegisterTriggered("resource-delay", "grant", func(ev Event, planned []Target) []Target {
		if ev.Client == "" {
			return planned
		}
		return toCaller(ev, planned)
	})
}

// clientPause freezes one client entirely (commands, watchdog, its critical section) right after its next
// grant, as a long GC pause after acquire would; at the end of the fault it resumes where it stopped, still
// believing it holds what it held. A client granted nothing during the fault is never frozen.
type clientPause struct{}

func (clientPause) Needs() Needs { return NeedsClients }

func (clientPause) Targets(rng *rand.Rand, env *Env) []Target {
	return named(pickClients(rng, env, "one"))
}

func (clientPause) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	return "armed: the client freezes at its next grant, inside its critical section", resumeClients(env, targets),
		eachClient(env, targets, Client.Arm)
}

// clientStall freezes one client entirely (commands, watchdog, workload; a worker's process) at once, or
// with --nemesis-trigger as it begins an unlock, until the fault stops. Unlike client-pause it does not wait
// for a grant, so the client is frozen outside any critical section.
type clientStall struct{}

// Needs: it needs no proxy, yet an external deployment refused it without toxiproxy, as a link fault;
// NeedsLinks keeps that refusal (a refactor changes no behaviour).
func (clientStall) Needs() Needs { return NeedsClients | NeedsLinks }

func (clientStall) Targets(rng *rand.Rand, env *Env) []Target {
	return named(pickClients(rng, env, "one"))
}

func (clientStall) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	return "frozen: commands, watchdog and workload stop", resumeClients(env, targets), eachClient(env, targets, Client.Pause)
}

func resumeClients(env *Env, targets []Target) Heal {
	return func(context.Context) error { return eachClient(env, targets, Client.Resume) }
}

// clientClock moves one client's wall clock ahead or behind by the clock bump: it feeds the scripts that take
// client time (fair lock deadlines, expirable-semaphore leases).
type clientClock struct{}

func (clientClock) Needs() Needs { return NeedsClients }

func (clientClock) Targets(rng *rand.Rand, env *Env) []Target {
	d := env.Params.ClockBump
	if rng.IntN(2) == 0 {
		d = -d
	}
	var out []Target
	for _, c := range pickClients(rng, env, "one") {
		out = append(out, ClockTarget(c, d))
	}
	return out
}

func (clientClock) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	var detail []string
	var errs []error
	for _, t := range targets {
		c := clientOf(env, t.Name)
		if c == nil {
			errs = append(errs, fmt.Errorf("no client %q", t.Name))
			continue
		}
		c.SetClockOffset(t.Offset)
		detail = append(detail, "offset "+strings.TrimPrefix(t.String(), t.Name+"@"))
	}
	heal := func(context.Context) error {
		return eachClient(env, targets, func(c Client) { c.SetClockOffset(0) })
	}
	return strings.Join(detail, ", "), heal, errors.Join(errs...)
}

// eachClient applies f to each target's client.
func eachClient(env *Env, targets []Target, f func(Client)) error {
	var errs []error
	for _, t := range targets {
		c := clientOf(env, t.Name)
		if c == nil {
			errs = append(errs, fmt.Errorf("no client %q", t.Name))
			continue
		}
		f(c)
	}
	return errors.Join(errs...)
}

func clientOf(env *Env, name string) Client {
	if env.Client == nil {
		return nil
	}
	return env.Client(name)
}

// toCaller aims a client fault at the event's caller.
func toCaller(ev Event, _ []Target) []Target { return []Target{NameTarget(ev.Client)} }

// callerClock moves a client-clock fault ("c2@+1m0s") from the planned client to the caller, keeping the
// drawn shift: a caller that arrives with its clock ahead purges the waiters or permits it sees as lapsed,
// one behind stamps a deadline already past.
func callerClock(ev Event, planned []Target) []Target {
	return toTheCaller(ev, planned, ClientClock, func(t *Target) { t.Name = ev.Client })
}

// resourceDelay delays one client's writes to the protected resource (the harness's) by --nemesis-duration:
// each write it sends during the fault lands that much later, after it released the lock, as a packet held
// in the network between holder and resource would (the reference's S3). Only fencing can refuse it.
type resourceDelay struct{}

type writeDelayer interface{ SetWriteDelay(time.Duration) }

// Needs: as client-stall's, NeedsLinks keeps the refusal an external deployment without toxiproxy gave it.
func (resourceDelay) Needs() Needs { return NeedsClients | NeedsLinks }

func (resourceDelay) Targets(rng *rand.Rand, env *Env) []Target {
	return named(pickClients(rng, env, "one"))
}

func (resourceDelay) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	d := env.Params.Duration
	heal := func(context.Context) error {
		return eachDelayer(env, targets, func(w writeDelayer) { w.SetWriteDelay(0) })
	}
	return "writes to the resource land " + d.String() + " after they are sent", heal,
		eachDelayer(env, targets, func(w writeDelayer) { w.SetWriteDelay(d) })
}

func eachDelayer(env *Env, targets []Target, f func(writeDelayer)) error {
	for _, t := range targets {
		w, ok := clientOf(env, t.Name).(writeDelayer)
		if !ok {
			return fmt.Errorf("client %q: its writes to the resource cannot be delayed", t.Name)
		}
		f(w)
	}
	return nil
}
