package explore

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Mutator is one small change to a genome. Apply changes g (a copy) and says whether it could; other is a
// second corpus entry, for a splice. Adding a mutator is one value in Mutators.
type Mutator struct {
	Name  string
	Apply func(rng *rand.Rand, c Caps, g, other *Genome) bool
}

// Mutators are the changes explore makes to a corpus entry, as AFL's havoc stage stacks a few of its own.
var Mutators = []Mutator{
	{"lease", func(rng *rand.Rand, c Caps, g, _ *Genome) bool {
		i, ok := g.pickStep(rng, isAcquire)
		if ok {
			g.Schedule.Steps[i].Lease = c.lease(rng)
		}
		return ok
	}},
	{"wait", func(rng *rand.Rand, _ Caps, g, _ *Genome) bool {
		i, ok := g.pickStep(rng, isAcquire)
		if ok {
			g.Schedule.Steps[i].Wait = wait(rng)
		}
		return ok
	}},
	{"delay", func(rng *rand.Rand, _ Caps, g, _ *Genome) bool {
		i, ok := g.pickStep(rng, func(st schedule.Step) bool { return st.After != "" })
		if ok {
			g.Schedule.Steps[i].Delay = pick(rng, holds)
		}
		return ok
	}},
	{"op", func(rng *rand.Rand, c Caps, g, _ *Genome) bool { // read <-> write
		i, ok := g.pickStep(rng, isAcquire)
		if !ok || c.Family != "rwlock" {
			return false
		}
		st := &g.Schedule.Steps[i]
		st.Acquire = map[schedule.Op]schedule.Op{schedule.Read: schedule.Write, schedule.Write: schedule.Read}[st.Acquire]
		return true
	}},
	{"reenter", func(rng *rand.Rand, c Caps, g, _ *Genome) bool { // on a semaphore: a second permit
		i, ok := g.pickStep(rng, isAcquire)
		ok = ok && (c.Reentrant || c.semaphore())
		if ok {
			g.addReentry(rng, c, i)
		}
		return ok
	}},
	{"add-actor", func(rng *rand.Rand, c Caps, g, _ *Genome) bool {
		a := actor{client: "c" + strconv.Itoa(len(g.clients())+1)}
		if rng.IntN(3) == 0 {
			a = actor{client: pick(rng, g.clients()), thread: int64(2 + rng.IntN(2))}
		}
		if slices.Contains(g.actors(), a) || len(g.actors()) >= maxActors {
			return false
		}
		after := g.Schedule.Steps[rng.IntN(len(g.Schedule.Steps))].Name
		if i, ok := g.pickStep(rng, isAcquire); ok && rng.IntN(2) == 0 { // while another holds
			after = g.Schedule.Steps[i].Name
		}
		g.addActor(rng, c, a, after)
		return true
	}},
	{"fault-on-event", func(rng *rand.Rand, c Caps, g, _ *Genome) bool {
		if len(c.Faults) == 0 {
			return false
		}
		g.addFault(rng, c, g.Schedule.Steps[rng.IntN(len(g.Schedule.Steps))].Name)
		return true
	}},
	{"move-fault", func(rng *rand.Rand, _ Caps, g, _ *Genome) bool {
		i, ok := g.pickStep(rng, func(st schedule.Step) bool { return st.Fault != "" })
		if !ok || i == 0 {
			return false
		}
		st := &g.Schedule.Steps[i]
		st.At, st.After, st.Delay = 0, g.Schedule.Steps[rng.IntN(i)].Name, pick(rng, gaps)
		return true
	}},
	{"leave", func(rng *rand.Rand, _ Caps, g, _ *Genome) bool { // the work ends, the release comes late
		i, ok := g.pickStep(rng, func(st schedule.Step) bool { return st.Release })
		if !ok {
			return false
		}
		rel := g.Schedule.Steps[i]
		leave := schedule.Step{Name: g.name(), After: rel.After, Delay: rel.Delay, Client: rel.Client, Thread: rel.Thread, Leave: true}
		rel.After, rel.Delay = leave.Name, pick(rng, holds)
		g.Schedule.Steps[i] = rel
		g.Schedule.Steps = slices.Insert(g.Schedule.Steps, i, leave)
		return true
	}},
	{"drop", func(rng *rand.Rand, _ Caps, g, _ *Genome) bool {
		if len(g.Schedule.Steps) < 3 {
			return false
		}
		return g.drop(rng.IntN(len(g.Schedule.Steps)))
	}},
	{"splice", func(rng *rand.Rand, _ Caps, g, other *Genome) bool {
		if other == nil {
			return false
		}
		return g.splice(rng, other)
	}},
	{"watchdog", func(rng *rand.Rand, c Caps, g, _ *Genome) bool {
		if !c.Watchdog {
			return false
		}
		g.set("watchdog", pick(rng, watchdogs))
		return true
	}},
	{"timeout", func(rng *rand.Rand, c Caps, g, _ *Genome) bool {
		if c.Timeout > 0 && c.Timeout <= time.Second { // the run's is short already
			return false
		}
		g.set("timeout", pick(rng, timeouts))
		return true
	}},
	{"permits", func(rng *rand.Rand, c Caps, g, _ *Genome) bool { // fewer permits: fewer holders fill them
		if !c.semaphore() {
			return false
		}
		g.set("permits", pick(rng, permitMenu))
		return true
	}},
}

func isAcquire(st schedule.Step) bool { return st.Acquire != "" }

// pickStep is a random step that is.
func (g *Genome) pickStep(rng *rand.Rand, is func(schedule.Step) bool) (int, bool) {
	var idx []int
	for i, st := range g.Schedule.Steps {
		if is(st) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return 0, false
	}
	return pick(rng, idx), true
}

// drop removes step i; the steps that came after it come after what it came after. An acquire's own
// releases go too (Check refuses what is left inconsistent).
func (g *Genome) drop(i int) bool {
	st := g.Schedule.Steps[i]
	g.Schedule.Steps = slices.Delete(g.Schedule.Steps, i, i+1)
	for j := range g.Schedule.Steps {
		o := &g.Schedule.Steps[j]
		if o.After == st.Name && st.Name != "" {
			o.After, o.Delay, o.At = st.After, o.Delay+st.Delay, max(o.At, st.At)
			if o.After == "" {
				o.Delay = 0
			}
		}
	}
	return true
}

// splice appends other's steps, its actors moved onto clients g does not use and its names made new, the
// first following a random step of g: two interleavings that each reached something, side by side.
func (g *Genome) splice(rng *rand.Rand, other *Genome) bool {
	used := len(g.clients())
	if used+len(other.clients()) > maxActors || len(g.Schedule.Steps)+len(other.Schedule.Steps) > maxSteps {
		return false
	}
	client := map[string]string{}
	for i, c := range other.clients() {
		client[c] = "c" + strconv.Itoa(used+1+i)
	}
	name := map[string]string{}
	anchor := g.Schedule.Steps[rng.IntN(len(g.Schedule.Steps))].Name
	for _, st := range other.clone().Schedule.Steps {
		if st.Client != "" {
			st.Client = client[st.Client]
		}
		for k, t := range st.Targets {
			if c, ok := client[t]; ok {
				st.Targets[k] = c
			}
		}
		if st.Name != "" {
			n := g.name()
			name[st.Name], st.Name = n, n
		}
		if st.After != "" {
			st.After = name[st.After]
		} else {
			st.After, st.Delay, st.At = anchor, st.At, 0
		}
		g.Schedule.Steps = append(g.Schedule.Steps, st)
	}
	return true
}

// Mutate is a copy of g with one to three mutators applied (other is a splice's partner), checked against
// the lock; it tries again on a copy that fails, and gives nil after enough tries.
func Mutate(rng *rand.Rand, c Caps, g, other *Genome) *Genome {
	for range 20 {
		m := g.clone()
		var applied []string
		for range 1 + rng.IntN(3) {
			mu := pick(rng, Mutators)
			if mu.Apply(rng, c, m, other) {
				applied = append(applied, mu.Name)
			}
		}
		if len(applied) == 0 || m.Check(c) != nil {
			continue
		}
		m.Origin = joinNames(applied)
		return m
	}
	return nil
}

func joinNames(s []string) string {
	out := ""
	for i, n := range s {
		if i > 0 {
			out += "+"
		}
		out += n
	}
	return out
}
