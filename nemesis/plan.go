package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Step is one planned fault: what, on which targets, from Start to End (offsets from the run's start).
type Step struct {
	Fault   string        `json:"fault"`
	Targets []Target      `json:"targets"`
	Start   time.Duration `json:"start_ns"`
	End     time.Duration `json:"end_ns"`
	// Trigger (--nemesis-trigger) names the lock event that fires the fault once Start has passed: the
	// (Skip+1)-th such event, so the same seed picks the same grant. It then lasts End-Start. A trigger
	// that does not come by End leaves the step unapplied (recorded as an error).
	Trigger string `json:"trigger,omitempty"`
	Skip    int    `json:"skip,omitempty"`
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
	Trigger  bool          // --nemesis-trigger: faults that take a trigger are fired by lock events
}

// NewPlan alternates healthy intervals (jittered ±25%) and faults chosen from the list, until the quiet
// period. With several kinds, they come in rounds, each kind once per round in a seeded order, so that a
// run of at least MinTotal has every kind in it. A plan that cannot hold every kind is refused: a run
// under --nemesis whose faults never happen would pass as tested.
func NewPlan(seed int64, s Schedule, env *Env) (Plan, error) {
	p := Plan{Seed: seed, HealAt: max(s.Total-s.Quiet, 0)}
	if len(s.Faults) == 0 {
		if env != nil && env.Targets.String() != "" {
			return p, fmt.Errorf("--nemesis-targets %s: there is no fault to aim (--nemesis none)", env.Targets)
		}
		return p, nil
	}
	if s.Interval <= 0 || s.Duration <= 0 {
		return p, fmt.Errorf("--nemesis-interval and --nemesis-duration must be positive")
	}
	for _, name := range s.Faults {
		if _, ok := registry[name]; !ok {
			return p, fmt.Errorf("unknown fault %q", name)
		}
	}
	if err := checkTargets(s.Faults, env); err != nil {
		return p, err
	}
	if least := s.MinTotal(); s.Total < least {
		return p, fmt.Errorf("--nemesis %s needs --time of at least %s, so that %s for any seed (each "+
			"fault may wait up to --nemesis-interval %s +25%% and lasts --nemesis-duration %s, then --quiet %s); "+
			"raise --time or lower those", strings.Join(s.Faults, ","), least, fitWhat(s.Faults), s.Interval,
			s.Duration, s.Quiet)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65))
	jitter := func(d time.Duration) time.Duration {
		return d*3/4 + time.Duration(rng.Int64N(int64(d)/2+1))
	}
	var round []string
	next := func() string {
		if stepsForAll(s.Faults) == 1 { // one kind: draw as before, so a seed keeps its single-fault plan
			return s.Faults[rng.IntN(len(s.Faults))]
		}
		if len(round) == 0 {
			for _, i := range rng.Perm(len(s.Faults)) {
				round = append(round, s.Faults[i])
			}
		}
		name := round[0]
		round = round[1:]
		return name
	}
	t := jitter(s.Interval)
	for t+s.Duration <= p.HealAt {
		name := next()
		p.Steps = append(p.Steps, Step{Fault: name, Targets: registry[name].Targets(rng, env), Start: t, End: t + s.Duration})
		t += s.Duration + jitter(s.Interval)
	}
	if err := aimTriggers(&p, s); err != nil {
		return p, err
	}
	for _, name := range s.Faults { // MinTotal guarantees this; a plan missing a kind must never run
		if !slices.ContainsFunc(p.Steps, func(st Step) bool { return st.Fault == name }) {
			return p, fmt.Errorf("--nemesis %s: the plan has no %s fault", strings.Join(s.Faults, ","), name)
		}
	}
	return p, nil
}

// maxJitter is the longest healthy interval the plan draws from d (d +25%).
func maxJitter(d time.Duration) time.Duration { return d*3/4 + d/2 }

// stepsForAll is how many steps it takes to have every listed kind: 1 for a single kind, else the list's length
// (one round).
func stepsForAll(faults []string) int {
	for _, f := range faults {
		if f != faults[0] {
			return len(faults)
		}
	}
	return 1
}

// MinTotal is the shortest --time whose plan holds every listed fault kind whatever the seed: one round
// of the longest intervals and the faults, then the quiet period. Zero without faults.
func (s Schedule) MinTotal() time.Duration {
	if len(s.Faults) == 0 {
		return 0
	}
	return s.Quiet + time.Duration(stepsForAll(s.Faults))*(maxJitter(s.Interval)+s.Duration)
}

func fitWhat(faults []string) string {
	if stepsForAll(faults) == 1 {
		return "one fault fits"
	}
	return fmt.Sprintf("each of its %d faults fits", len(faults))
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

// Recorder receives fault events; a history writes the targets as TargetStrings spells them.
type Recorder interface {
	Fault(kind, phase string, targets []string, detail string)
}

// record writes one fault event.
func record(rec Recorder, kind, phase string, targets []Target, detail string) {
	rec.Fault(kind, phase, TargetStrings(targets), detail)
}

// healWithin runs heal (when there is one) with its own deadline: a fault must never outlive the run,
// so it heals even when the run's context has ended.
func healWithin(heal Heal) error {
	if heal == nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return heal(hctx)
}

// Run carries out the plan against env, measuring offsets from start. It returns when the plan is done or
// ctx ends; either way every fault it started is stopped. HealAll should still follow, as a backstop.
func (p Plan) Run(ctx context.Context, env *Env, rec Recorder, start time.Time) {
	env.Note = func(fault string, targets []Target, detail string) { record(rec, fault, "step", targets, detail) }
	for _, st := range p.Steps {
		if !sleepUntil(ctx, start.Add(st.Start)) {
			return
		}
		f := registry[st.Fault]
		if tb, ok := triggeredBy[st.Fault]; ok && st.Trigger != "" && env.Triggers != nil && !tb.phase {
			runTriggered(ctx, env, rec, start, st, f, tb)
			continue
		}
		var ph *phaseArm
		if tb, ok := triggeredBy[st.Fault]; ok && st.Trigger != "" && env.Triggers != nil && tb.phase {
			ph = &phaseArm{step: st, fired: make(chan time.Time, 1)}
		}
		stop, ok := startFault(ctx, env, rec, st.Fault, f, st.Targets, ph)
		if !ok {
			continue
		}
		sleepUntil(ctx, start.Add(st.End))
		// A decisive phase fired late still lasts two thirds of the step, as the untriggered one does (up to
		// the quiet period): a primary isolated just before the heal would have had no replica promoted.
		if ph != nil {
			select {
			case at := <-ph.fired:
				sleepUntil(ctx, phaseEnd(ctx, at, st))
			default:
			}
		}
		stop()
	}
}

// startFault starts fault f (named name) on targets, the primary named as it starts (and the same nodes
// healed), with ph armed for its decisive phase, and records the start. It returns what heals it and records
// the stop; ok is false when it did not start (recorded as an error, whatever part applied undone).
func startFault(ctx context.Context, env *Env, rec Recorder, name string, f Fault, targets []Target, ph *phaseArm) (stop func(), ok bool) {
	planned := targets
	targets, err := resolve(ctx, env, targets)
	if err != nil {
		record(rec, name, "error", planned, "start: "+err.Error())
		return nil, false
	}
	if ph != nil { // only a plan's step has one: a schedule's faults start side by side and leave env alone
		env.phase = ph
		defer func() { env.phase = nil }()
	}
	detail, heal, err := f.Start(ctx, env, targets)
	if err != nil {
		record(rec, name, "error", targets, "start: "+err.Error())
		_ = healWithin(heal) // undo whatever part applied before the error
		return nil, false
	}
	record(rec, name, "start", targets, detail)
	return func() { stopFault(rec, name, targets, heal) }, true
}

// stopFault heals a started fault and records its stop.
func stopFault(rec Recorder, name string, targets []Target, heal Heal) {
	if err := healWithin(heal); err != nil {
		record(rec, name, "stop", targets, "heal failed: "+err.Error())
		return
	}
	record(rec, name, "stop", targets, "")
}

// phaseEnd is when a decisive phase fired at at ends: two thirds of its step later, or at the quiet
// period (ctx's deadline) if that comes first.
func phaseEnd(ctx context.Context, at time.Time, st Step) time.Time {
	end := at.Add((st.End - st.Start) * 2 / 3)
	if q, ok := ctx.Deadline(); ok && q.Before(end) {
		return q
	}
	return end
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
	for _, c := range append([]string{Front, Bus}, env.Clients...) { // the nodes' shared front and bus proxies
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
