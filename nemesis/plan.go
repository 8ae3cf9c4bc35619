package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Step is one planned fault: what, on which targets, from Start to End (offsets from the run's start).
type Step struct {
	Fault   string        `json:"fault"`
	Targets []string      `json:"targets"`
	Start   time.Duration `json:"start_ns"`
	End     time.Duration `json:"end_ns"`
}

// Plan is the whole fault schedule of a run. It is a pure function of its inputs, so the same seed gives
// the same plan.
type Plan struct {
	Seed  int64  `json:"seed"`
	Steps []Step `json:"steps"`
	// HealAt is when every fault has been healed and the quiet period begins.
	HealAt time.Duration `json:"heal_at_ns"`
}

// Schedule says how faults are spread over a run.
type Schedule struct {
	Faults   []string
	Total    time.Duration // the run's --time
	Interval time.Duration // healthy time between faults
	Duration time.Duration // how long each fault lasts
	Quiet    time.Duration // fault-free time at the end
}

// NewPlan alternates healthy intervals (jittered ±25%) and faults chosen from the list, until the quiet
// period.
func NewPlan(seed int64, s Schedule, env *Env) (Plan, error) {
	p := Plan{Seed: seed, HealAt: max(s.Total-s.Quiet, 0)}
	if len(s.Faults) == 0 {
		return p, nil
	}
	if s.Interval <= 0 || s.Duration <= 0 {
		return p, fmt.Errorf("--nemesis-interval and --nemesis-duration must be positive")
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65))
	jitter := func(d time.Duration) time.Duration {
		return d*3/4 + time.Duration(rng.Int64N(int64(d)/2+1))
	}
	t := jitter(s.Interval)
	for t+s.Duration <= p.HealAt {
		name := s.Faults[rng.IntN(len(s.Faults))]
		f, ok := registry[name]
		if !ok {
			return p, fmt.Errorf("unknown fault %q", name)
		}
		p.Steps = append(p.Steps, Step{Fault: name, Targets: f.Targets(rng, env), Start: t, End: t + s.Duration})
		t += s.Duration + jitter(s.Interval)
	}
	return p, nil
}

// Faults lists the fault kinds the plan uses.
func (p Plan) Faults() []string {
	var out []string
	for _, st := range p.Steps {
		if !slices.Contains(out, st.Fault) {
			out = append(out, st.Fault)
		}
	}
	return out
}

// Recorder receives fault events.
type Recorder interface {
	Fault(kind, phase string, targets []string, detail string)
}

// Run carries out the plan against env, measuring offsets from start. It returns when the plan is done or
// ctx ends; either way every fault it started is stopped. HealAll should still follow, as a backstop.
func (p Plan) Run(ctx context.Context, env *Env, rec Recorder, start time.Time) {
	env.Note = func(fault string, targets []string, detail string) { rec.Fault(fault, "step", targets, detail) }
	for _, st := range p.Steps {
		if !sleepUntil(ctx, start.Add(st.Start)) {
			return
		}
		f := registry[st.Fault]
		// The primary is named when the fault starts, and the same nodes are healed.
		targets, err := resolve(ctx, env, st.Targets)
		if err != nil {
			rec.Fault(st.Fault, "error", st.Targets, "start: "+err.Error())
			continue
		}
		detail, err := f.Start(ctx, env, targets)
		if err != nil {
			rec.Fault(st.Fault, "error", targets, "start: "+err.Error())
			// Undo whatever part applied before the error.
			hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = f.Stop(hctx, env, targets)
			cancel()
			continue
		}
		rec.Fault(st.Fault, "start", targets, detail)
		sleepUntil(ctx, start.Add(st.End))
		// Heal even when ctx has ended: a fault must never outlive the run.
		hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = f.Stop(hctx, env, targets)
		cancel()
		if err != nil {
			rec.Fault(st.Fault, "stop", targets, "heal failed: "+err.Error())
			continue
		}
		rec.Fault(st.Fault, "stop", targets, "")
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// HealAll undoes every fault whatever the plan did: every link healed, every paused node resumed, every
// killed node restarted. It returns what it had to fix.
func HealAll(ctx context.Context, env *Env) (fixed []string, err error) {
	for _, c := range append([]string{"*", "bus"}, env.Clients...) { // the nodes' shared front and bus proxies
		for _, n := range env.Nodes {
			if l := env.Link(c, n); l != nil {
				_ = l.Heal()
			}
		}
	}
	if r := env.Replication; r != nil {
		if rerr := r.Restore(ctx); rerr != nil && err == nil {
			err = rerr
		}
	}
	for _, c := range env.Clients {
		if cl := clientOf(env, c); cl != nil {
			cl.SetClockOffset(0)
			cl.Resume()
		}
	}
	for _, n := range env.Nodes {
		p := env.Node(n)
		if p == nil {
			continue
		}
		_ = p.Resume()          // harmless on a running node; an error means it is down
		_ = p.SetClockOffset(0) // an error means it never had the clock library
		if !p.Running() {
			if rerr := p.Restart(ctx); rerr != nil && err == nil {
				err = fmt.Errorf("restart %s: %w", n, rerr)
			}
			fixed = append(fixed, "restarted "+n)
		}
	}
	return fixed, err
}

func clientOf(env *Env, name string) Client {
	if env.Client == nil {
		return nil
	}
	return env.Client(name)
}
