package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// maxSkip bounds the seeded number of matching events a trigger lets pass: small, so that the fault
// still comes early in its window, and seeded, so that different seeds pick different grants.
const maxSkip = 3

// aimTriggers marks the steps whose fault takes a trigger, with a seeded skip. It draws from its own
// generator, so a plan's steps and targets are the same with and without --nemesis-trigger.
func aimTriggers(p *Plan, s Schedule) error {
	if !s.Trigger {
		return nil
	}
	any := false
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x74726967))
	for i := range p.Steps {
		tb, ok := triggeredBy[p.Steps[i].Fault]
		if !ok {
			continue
		}
		any = true
		p.Steps[i].Trigger = tb.trigger
		p.Steps[i].Skip = rng.IntN(maxSkip)
	}
	if !any && len(s.Faults) > 0 {
		return fmt.Errorf("--nemesis-trigger: none of --nemesis %s takes a trigger (those that do: %s)",
			strings.Join(s.Faults, ","), strings.Join(TriggerNames(), ", "))
	}
	return nil
}

type firing struct {
	targets []Target
	heal    Heal
	at      time.Time
	err     error
}

// runTriggered carries out one triggered step: armed at its start, the fault starts in the goroutine that
// recorded the event (before that client goes on), lasts the step's length, and is healed.
func runTriggered(ctx context.Context, env *Env, rec Recorder, start time.Time, st Step, f Fault, tb triggered) {
	planned, err := resolve(ctx, env, st.Targets) // before the event, so the start is quick
	if err != nil {
		record(rec, st.Fault, "error", st.Targets, "start: "+err.Error())
		return
	}
	if p, ok := f.(interface {
		prepare(context.Context, *Env, []Target)
	}); ok {
		p.prepare(ctx, env, planned)
	}
	done := make(chan firing, 1)
	disarm, err := env.Triggers.arm(st.Trigger, st.Skip, env.Targets.Clients, func(ev Event) {
		targets := planned
		if env.Targets.String() == "" { // named targets stay as named: the trigger only times the fault
			targets = tb.aim(ev, planned)
		}
		detail, heal, err := f.Start(ctx, env, targets)
		if err == nil {
			record(rec, st.Fault, "start", targets, detail+"; fired by "+describe(ev))
		}
		done <- firing{targets: targets, heal: heal, at: time.Now(), err: err}
	})
	if err != nil {
		record(rec, st.Fault, "error", planned, "start: "+err.Error())
		return
	}
	var fd firing
	deadline := time.NewTimer(time.Until(start.Add(st.End)))
	defer deadline.Stop()
	select {
	case fd = <-done:
	case <-deadline.C:
		if disarm() {
			record(rec, st.Fault, "error", planned, fmt.Sprintf("not applied: no %s event (after %d skipped) in its window", st.Trigger, st.Skip))
			return
		}
		fd = <-done
	case <-ctx.Done():
		if disarm() {
			return
		}
		fd = <-done
	}
	if fd.err != nil {
		record(rec, st.Fault, "error", fd.targets, "start: "+fd.err.Error())
		_ = healWithin(fd.heal)
		return
	}
	sleepUntil(ctx, fd.at.Add(st.End-st.Start))
	stopFault(rec, st.Fault, fd.targets, fd.heal)
}

// awaitPhase arms the trigger of the step being started (env.phase) for a fault's decisive phase: fire
// runs in the recording goroutine. It returns false when no trigger applies; wait blocks until the phase
// fired or stop is closed (then it disarms).
func awaitPhase(env *Env, fire func(Event)) (wait func(stop <-chan struct{}), ok bool) {
	ph := env.phase
	if ph == nil || env.Triggers == nil {
		return nil, false
	}
	fired := make(chan struct{})
	disarm, err := env.Triggers.arm(ph.step.Trigger, ph.step.Skip, env.Targets.Clients, func(ev Event) {
		defer close(fired)
		fire(ev)
		ph.fired <- time.Now()
	})
	if err != nil {
		return nil, false
	}
	return func(stop <-chan struct{}) {
		select {
		case <-fired:
		case <-stop:
			if !disarm() {
				<-fired
			}
		}
	}, true
}

func describe(ev Event) string {
	what := ev.F
	switch {
	case ev.F == "tryLock" && ev.Type == "ok":
		what = "grant"
	case ev.F == "unlock" && ev.Type == "ok":
		what = "release"
	}
	s := fmt.Sprintf("%s's %s", ev.Client, what)
	if ev.Key != "" {
		s += " on " + ev.Key
	}
	if len(ev.Nodes) > 0 {
		s += " (held on " + strings.Join(ev.Nodes, " ") + ")"
	}
	return s + fmt.Sprintf(" at %.3fs", float64(ev.Time)/1e9)
}
