// Package explore is `lockcheck explore`: a search over schedules (the genome) guided by the coverage of the
// lock's model. Runs whose schedule reached a transition no earlier run did are kept in a corpus and mutated,
// as a coverage-guided fuzzer keeps and mutates inputs; every invalid run is filed under its finding's
// signature, so that many runs of one bug are one finding. The package holds the search alone: how a run is
// played, how its coverage and signature are read, and what becomes of a finding are the caller's functions
// (cmd/lockcheck/explore.go), so that the search is tested without a process. docs/explore.md says more.
package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Caps are what the lock under test can play, for the generator and the mutators.
type Caps struct {
	Lock      string // its name, for the schedule's lock line and messages
	Family    string // "mutex", "rwlock", "semaphore" or "expirable-semaphore": the families a schedule plays
	Reentrant bool   // an actor may acquire again what it holds
	Watchdog  bool   // a lease of 0 is kept by a watchdog; --watchdog is worth varying
	// Permits is a semaphore's --permits, as the run has it (a genome may vary it): how many holders
	// fill it.
	Permits int64
	// Timeout is the run's --timeout (0: its default): how long a command whose reply is lost waits before
	// the client gives up or sends it again.
	Timeout time.Duration
	// Faults are those a schedule step may start on this deployment, each with the targets it takes.
	Faults []Fault
	// OneLease: the library takes one lease for every lock it hands out (Spring's RedisLockRegistry has
	// one expireAfter), so steps carry none and the run's lease holds: the lease shapes are left out.
	OneLease bool
}

// Fault is a fault a step may start: its name, and how it is aimed.
type Fault struct {
	Name   string
	Client bool // aimed at one of the schedule's clients (targets: [cN]); otherwise the fault's own draw
}

// Setting is one run flag explore varies beside the schedule (--watchdog), as --name=value.
type Setting struct{ Flag, Value string }

// Genome is what one run plays: a schedule and the run settings varied with it.
type Genome struct {
	Schedule *schedule.Schedule
	Settings []Setting
	// Origin says how it was made: "generated", or the mutators applied and the corpus entry they started from.
	Origin string
	names  int // the next step name's number
}

// Args are the settings as run arguments.
func (g *Genome) Args() []string {
	out := make([]string, len(g.Settings))
	for i, s := range g.Settings {
		out[i] = "--" + s.Flag + "=" + s.Value
	}
	return out
}

// Setting is the value of a varied flag, "" when it is the run's own.
func (g *Genome) Setting(flag string) string {
	for _, s := range g.Settings {
		if s.Flag == flag {
			return s.Value
		}
	}
	return ""
}

func (g *Genome) set(flag, value string) {
	g.Settings = slices.DeleteFunc(g.Settings, func(s Setting) bool { return s.Flag == flag })
	if value != "" {
		g.Settings = append(g.Settings, Setting{flag, value})
		slices.SortFunc(g.Settings, func(a, b Setting) int {
			if a.Flag < b.Flag {
				return -1
			}
			return 1
		})
	}
}

// clone is a deep copy: a mutator changes its copy, never the corpus entry.
func (g *Genome) clone() *Genome {
	s := *g.Schedule
	s.Steps = make([]schedule.Step, len(g.Schedule.Steps))
	for i, st := range g.Schedule.Steps {
		if st.Lease != nil {
			l := *st.Lease
			st.Lease = &l
		}
		if st.Wait != nil {
			w := *st.Wait
			st.Wait = &w
		}
		st.Targets = slices.Clone(st.Targets)
		s.Steps[i] = st
	}
	return &Genome{Schedule: &s, Settings: slices.Clone(g.Settings), Origin: g.Origin, names: g.names}
}

// The menus the generator and the mutators draw from. Leases span a retry delay (100 ms) to longer than a
// whole run, so that a short one can meet a long one (the shapes a lease shrinks a hold's TTL in); waits run
// from a refusal at once to longer than most holds, so that some acquires give up before the holder lets go
// and some outwait it (a slow wake-up shows); holds are the release's delay after its acquire.
var (
	leases    = durs(100*time.Millisecond, 300*time.Millisecond, time.Second, 3*time.Second, 10*time.Second)
	waits     = durs(0, 100*time.Millisecond, 500*time.Millisecond, 2*time.Second, 4*time.Second)
	holds     = durs(0, 50*time.Millisecond, 200*time.Millisecond, 500*time.Millisecond, time.Second, 2*time.Second)
	gaps      = durs(0, 20*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond)
	faultFors = durs(200*time.Millisecond, 500*time.Millisecond, time.Second, 2*time.Second)
	watchdogs = []string{"", "600ms", "1500ms"} // "": the run's own --watchdog
	// timeouts: the run's own --timeout (3 s by default, longer than any drawn fault, so that a lost reply is
	// waited out as the fault ends) or 1 s (a client that gives up on a command, or sends it again, while
	// the fault is still on: the resends of #3850's kind)
	timeouts = []string{"", "1s"}
)

func durs(d ...time.Duration) []time.Duration { return d }

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

// Limits of a generated or mutated schedule: small enough that a run costs seconds.
const (
	maxActors = 4
	maxSteps  = 24
	// maxSpan bounds a schedule's chained delays and holds; runs get --time maxSpan+.
	maxSpan = 15 * time.Second
)

// Families are the lock families explore generates schedules for.
var Families = []string{"mutex", "rwlock", "semaphore", "expirable-semaphore"}

// Ops are the acquires the family plays (the first: what a dry run takes).
func (c Caps) Ops() []schedule.Op {
	switch {
	case c.Family == "rwlock":
		return []schedule.Op{schedule.Read, schedule.Read, schedule.Write}
	case c.semaphore():
		return []schedule.Op{schedule.Permit}
	}
	return []schedule.Op{schedule.Lock}
}

// semaphore says whether the lock counts permits: its steps take permits, each a hold of its own.
func (c Caps) semaphore() bool { return c.Family == "semaphore" || c.Family == "expirable-semaphore" }

// lease is an acquire's lease: nil for a plain semaphore, whose permits have none.
func (c Caps) lease(rng *rand.Rand) *time.Duration {
	if c.Family == "semaphore" {
		return nil
	}
	d := pick(rng, leases)
	if (c.Watchdog || c.Family == "expirable-semaphore") && rng.IntN(5) == 0 {
		d = 0 // the watchdog keeps it; an expirable permit without a lease
	}
	return &d
}

// longLease is a holder's lease that outlasts what the steps around it take (nil where there is none).
func (c Caps) longLease(rng *rand.Rand) *time.Duration {
	if c.Family == "semaphore" {
		return nil
	}
	d := pick(rng, leases[3:])
	return &d
}

// permitMenu is what the permits mutator draws: one permit (a semaphore as a mutex), a few.
var permitMenu = []string{"1", "2", "3"}

// permits is how many permits the genome's run sets: its own setting, or the run's.
func (g *Genome) permits(c Caps) int64 {
	if v, err := strconv.ParseInt(g.Setting("permits"), 10, 64); err == nil && v > 0 {
		return v
	}
	return max(c.Permits, 1)
}

func wait(rng *rand.Rand) *time.Duration {
	d := pick(rng, waits)
	return &d
}

// name is the next unused step name.
func (g *Genome) name() string {
	g.names++
	return "s" + strconv.Itoa(g.names)
}

// Generate draws a fresh genome: two or three actors, each acquiring (one may re-enter) and releasing, the
// steps chained by event to a recent step so that actors overlap, and sometimes a fault after an event.
func Generate(rng *rand.Rand, c Caps) *Genome {
	for range 100 {
		gen := generate
		if fit := fitting(c); len(fit) > 0 && rng.IntN(2) == 0 { // half of them in one of the shapes
			gen = pick(rng, fit).generate
		}
		if g := gen(rng, c); g.Check(c) == nil {
			return g
		}
	}
	return smallest(c)
}

// Seeds are the search's first genomes, one of each shape the lock can play, as a fuzzer starts from its
// seed inputs: a shape drawn only now and then (one fresh genome in 8, half of them in one of 4 shapes)
// may not come up at all in a short search on a deployment whose runs take seconds.
func Seeds(rng *rand.Rand, c Caps) []*Genome {
	var out []*Genome
	for _, sh := range fitting(c) {
		for range 100 {
			if g := sh.generate(rng, c); g.Check(c) == nil {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func (sh Shape) generate(rng *rand.Rand, c Caps) *Genome {
	g := &Genome{Schedule: &schedule.Schedule{Lock: c.Lock}, Origin: "shape " + sh.Name}
	sh.Make(rng, c, g)
	return g
}

// smallest is one actor's acquire and release (never seen: what Generate gives when nothing else passes).
func smallest(c Caps) *Genome {
	g := &Genome{Schedule: &schedule.Schedule{Lock: c.Lock}, Origin: "generated"}
	g.Schedule.Steps = []schedule.Step{{Name: g.name(), Client: "c1", Acquire: c.Ops()[0]}}
	g.Schedule.Steps = append(g.Schedule.Steps, schedule.Step{Name: g.name(), After: "s1", Client: "c1", Release: true})
	return g
}

func generate(rng *rand.Rand, c Caps) *Genome {
	g := &Genome{Schedule: &schedule.Schedule{Lock: c.Lock}, Origin: "generated"}
	actors := pick(rng, []int{2, 3, 3, 4})
	for a := 1; a <= actors; a++ {
		act := actor{client: "c" + strconv.Itoa(a)}
		if a > 1 && rng.IntN(4) == 0 { // a second thread of the first client: another owner, the same instance
			act = actor{client: "c1", thread: 2}
		}
		after := g.anchor(rng)
		if i, ok := g.pickStep(rng, isAcquire); ok && rng.IntN(5) < 3 { // mostly while another holds
			after = g.Schedule.Steps[i].Name
		}
		g.addActor(rng, c, act, after)
	}
	if len(c.Faults) > 0 && rng.IntN(5) == 0 {
		g.addFault(rng, c, g.anchor(rng))
	}
	g.Schedule.About = fmt.Sprintf("explore: %d steps, generated", len(g.Schedule.Steps))
	return g
}

// Shape is a skeleton of the steps that line up the bugs of lease locks, which a fresh genome may start from
// (as a fuzzer starts from seed inputs): its leases, holds, waits and faults are still drawn, and the
// mutators take it from there. A new shape is one value in Shapes.
type Shape struct {
	Name string
	Make func(rng *rand.Rand, c Caps, g *Genome)
	// Fits says whether the lock can play it (nil: every lock): a shape of leases needs a lock with leases.
	Fits func(c Caps) bool
}

// leased: the lock's holds have leases of their own (a plain semaphore's permits have none; a library with
// one lease for every lock gives each the run's).
func leased(c Caps) bool { return c.Family != "semaphore" && !c.OneLease }

// forCaps drops the steps' leases where the library takes none per lock (Caps.OneLease): the run's lease
// holds for every acquire. It returns g.
func (g *Genome) forCaps(c Caps) *Genome {
	if c.OneLease {
		for i := range g.Schedule.Steps {
			g.Schedule.Steps[i].Lease = nil
		}
	}
	return g
}

// Shapes are the skeletons: a joiner with a shorter lease beside a long holder while a waiter asks (a
// re-entry or second reader whose lease shrinks the whole lock's); a release that comes late, after the
// work ended in time, while others take the lock (a stale release deleting another's hold); a fault aimed
// at the holder while another waits (a renewal or unlock lost on the way).
var Shapes = []Shape{
	{"short-joins-long", func(rng *rand.Rand, c Caps, g *Genome) {
		long, short := pick(rng, leases[3:]), pick(rng, leases[:3])
		hold := pick(rng, holds[3:])
		op := pick(rng, c.Ops())
		a := schedule.Step{Name: g.name(), Client: "c1", Acquire: op, Lease: &long, Wait: wait(rng)}
		g.Schedule.Steps = append(g.Schedule.Steps, a)
		joiner := actor{client: "c2"}
		if c.Reentrant && (c.Family == "mutex" || rng.IntN(3) == 0) {
			joiner = actor{client: "c1"}                  // a re-entry by the holder
			if c.Family == "rwlock" && rng.IntN(2) == 0 { // beside another reader, who comes and goes
				g.Schedule.Steps[0].Acquire, op = schedule.Read, schedule.Read
				g.addActor(rng, c, actor{client: "c4"}, a.Name)
				g.Schedule.Steps[len(g.Schedule.Steps)-1].Delay = pick(rng, holds[:4])
			} else if op == schedule.Write && rng.IntN(2) == 0 {
				op = schedule.Read // the writer reads too
			}
		} else if c.Family == "rwlock" {
			op = schedule.Read
			g.Schedule.Steps[0].Acquire = schedule.Read
		}
		b := schedule.Step{Name: g.name(), After: a.Name, Delay: pick(rng, gaps), Client: joiner.client, Acquire: op,
			Lease: &short, Wait: wait(rng)}
		g.Schedule.Steps = append(g.Schedule.Steps, b,
			schedule.Step{Name: g.name(), After: b.Name, Delay: holdFor(rng, &short), Client: joiner.client, Release: true})
		w := pick(rng, waits[2:])
		wop := c.Ops()[0]
		if c.Family == "rwlock" {
			wop = schedule.Write
		}
		cw := schedule.Step{Name: g.name(), After: b.Name, Delay: pick(rng, gaps), Client: "c3", Acquire: wop,
			Lease: c.lease(rng), Wait: &w}
		g.Schedule.Steps = append(g.Schedule.Steps, cw,
			schedule.Step{Name: g.name(), After: cw.Name, Delay: pick(rng, holds[:3]), Client: "c3", Release: true})
		if joiner.client == "c1" { // the holder's own release after its re-entry's
			g.Schedule.Steps = append(g.Schedule.Steps, schedule.Step{Name: g.name(), After: a.Name, Delay: hold, Client: "c1", Release: true})
		} else {
			g.Schedule.Steps = slices.Insert(g.Schedule.Steps, 1, schedule.Step{Name: g.name(), After: a.Name, Delay: hold, Client: "c1", Release: true})
		}
	}, leased},
	{"late-release", func(rng *rand.Rand, c Caps, g *Genome) {
		lease := pick(rng, leases[:3])
		op := pick(rng, c.Ops())
		a := schedule.Step{Name: g.name(), Client: "c1", Acquire: op, Lease: &lease, Wait: wait(rng)}
		leave := schedule.Step{Name: g.name(), After: a.Name, Delay: holdFor(rng, &lease), Client: "c1", Leave: true}
		rel := schedule.Step{Name: g.name(), After: leave.Name, Delay: lease + pick(rng, holds[1:]), Client: "c1", Release: true}
		g.Schedule.Steps = append(g.Schedule.Steps, a, leave, rel)
		for i, after := range []string{a.Name, rel.Name} {
			w := pick(rng, waits[2:])
			g.Schedule.Steps[g.addActor(rng, c, actor{client: "c" + strconv.Itoa(i+2)}, after)].Wait = &w
		}
	}, leased},
	{"fault-on-holder", func(rng *rand.Rand, c Caps, g *Genome) {
		g.addActor(rng, c, actor{client: "c1"}, "")
		if len(c.Faults) > 0 {
			g.addFault(rng, c, g.Schedule.Steps[0].Name)
		}
		w := pick(rng, waits[2:])
		g.Schedule.Steps[g.addActor(rng, c, actor{client: "c2"}, g.Schedule.Steps[0].Name)].Wait = &w
	}, nil},
	{"lost-release", lostRelease(false), nil},
	{"lost-release-own-permits", lostRelease(true), func(c Caps) bool { return c.semaphore() }},
	{"queue-outlives-slot", queueOutlivesSlot, func(c Caps) bool { return c.Family == "mutex" }},
	{"reentry-outlives-watchdog", reentryOutlivesWatchdog, func(c Caps) bool { return c.Family == "mutex" && c.Reentrant && c.Watchdog }},
	{"renewal-lost", renewalLost, func(c Caps) bool { return c.Family == "mutex" && c.Watchdog && len(c.aimed()) > 0 }},
	{"write-reenters-shorter", writeReentersShorter, func(c Caps) bool { return c.Family == "rwlock" && c.Reentrant && leased(c) }},
}

// The long menus, drawn by queue-outlives-slot alone (the others keep runs to seconds): a hold longer than
// the internal constants locks time their queues with (Redisson's fair lock gives a waiter 5 s past the
// lock's TTL in the versions of #2883), and a wait that outlasts it.
var (
	longHolds = durs(7 * time.Second)
	longWait  = 8 * time.Second
)

// queueOutlivesSlot: a holder whose lock lives on past what it had left when a waiter queued (kept by its
// watchdog's renewals, where the lock has one; else a long lease) holds for longer than a queue's internal
// slot; a waiter queues at once, willing to outwait it; another client arrives just before the holder lets
// go. A queue that times out the live waiter as stale lets the late arrival in first (fifo), the shape of
// Redisson's fair-lock queue bugs (#2883); and a watchdog that gives up leaves the waiter in early.
func queueOutlivesSlot(rng *rand.Rand, c Caps, g *Genome) {
	hold := pick(rng, longHolds)
	lease := c.longLease(rng)
	if c.Watchdog {
		// The watchdog's: renewed to a TTL of 1 to 1.5 s, the lock lives on. A waiter polls once a TTL and
		// re-queues itself when its slot ran out: a late arrival must come between the two, likelier with
		// 1.5 s than 600 ms (the twin fair-fixed-slot failed 5 of 5 runs of this shape, 0 of 5 at 600 ms).
		lease = new(time.Duration)
		g.set("watchdog", watchdogs[2])
	} else if *lease < hold+hold/3+answerSlack {
		*lease = leases[len(leases)-1]
	}
	zero, w := time.Duration(0), longWait
	a := schedule.Step{Name: g.name(), Client: "c1", Acquire: c.Ops()[0], Lease: lease, Wait: &zero}
	g.Schedule.Steps = append(g.Schedule.Steps, a,
		schedule.Step{Name: g.name(), After: a.Name, Delay: hold, Client: "c1", Release: true})
	g.Schedule.Steps[g.addActor(rng, c, actor{client: "c2"}, a.Name)].Wait = &w
	late := g.addActor(rng, c, actor{client: "c3"}, a.Name)
	g.Schedule.Steps[late].Delay = hold - 500*time.Millisecond
	lw := pick(rng, waits[3:]) // until the holder lets go, half a second later
	g.Schedule.Steps[late].Wait = &lw
	if len(c.Faults) > 0 && rng.IntN(2) == 0 { // a fault on the holder's way: a renewal lost
		g.addFault(rng, c, a.Name)
	}
}

// reentryOutlivesWatchdog: a holder on its watchdog re-enters at once, also on the watchdog, and stays
// re-entered for several of the watchdog's leases while a waiter would outwait the whole hold. A watchdog
// that renews only a lock held once (Redisson #6144's symptom, 3.44-3.45) lets the waiter in beside the
// holder; one that renews the lock as it stands keeps it out. Drawn rarely otherwise: the generator's
// re-entries take a lease of their own, and its waits end in 4 s.
func reentryOutlivesWatchdog(rng *rand.Rand, c Caps, g *Genome) {
	g.set("watchdog", watchdogs[2])
	zero, w := time.Duration(0), longWait
	hold := pick(rng, longHolds)
	a := schedule.Step{Name: g.name(), Client: "c1", Acquire: c.Ops()[0], Lease: &zero, Wait: &zero}
	in := schedule.Step{Name: g.name(), After: a.Name, Delay: pick(rng, gaps), Client: "c1", Acquire: a.Acquire,
		Lease: new(time.Duration), Wait: &zero}
	out := schedule.Step{Name: g.name(), After: in.Name, Delay: hold - time.Second, Client: "c1", Release: true}
	g.Schedule.Steps = append(g.Schedule.Steps, a, in, out,
		schedule.Step{Name: g.name(), After: out.Name, Delay: pick(rng, holds[1:4]), Client: "c1", Release: true})
	g.Schedule.Steps[g.addActor(rng, c, actor{client: "c2"}, in.Name)].Wait = &w
}

// renewalLost: a holder on its watchdog holds for several of the watchdog's leases, and a fault aimed at
// its client (a lost reply where the deployment has it) takes the renewals of a second, while a
// waiter would outwait the hold. A watchdog that gives up at its first renewal with no answer (Redisson
// before 3.44, #3194) lets the lease run out and the waiter in beside the holder; one that renews again at
// its next period keeps it out. Drawn rarely otherwise: a fault lands on the holder, long enough, during
// a hold on the watchdog, with a waiter still asking, in one genome of dozens.
func renewalLost(rng *rand.Rand, c Caps, g *Genome) {
	g.set("watchdog", watchdogs[2])
	zero, w := time.Duration(0), longWait
	a := schedule.Step{Name: g.name(), Client: "c1", Acquire: c.Ops()[0], Lease: &zero, Wait: &zero}
	g.Schedule.Steps = append(g.Schedule.Steps, a,
		schedule.Step{Name: g.name(), After: a.Name, Delay: pick(rng, longHolds), Client: "c1", Release: true},
		// at most 1 s, inside the 1.5 s lease: a watchdog that renews again once it ends keeps the lock (a 2 s
		// lost reply starved the unbroken spec's too: its renewals during it never landed)
		schedule.Step{Name: g.name(), After: a.Name, Delay: gaps[len(gaps)-1], Fault: c.releaseFault(rng),
			Targets: []string{"c1"}, For: min(pick(rng, faultFors[2:]), time.Second)})
	g.Schedule.Steps[g.addActor(rng, c, actor{client: "c2"}, a.Name)].Wait = &w
}

// writeReentersShorter: a writer with a long lease re-enters to write with a short one and stays re-entered
// past it, while a waiter that would outwait the short lease asks; then the re-entry and the hold let go. A
// write re-entry whose lease replaces what the lock had left (Redisson adds it: pttl + lease) lets the
// waiter in beside the writer when the short lease runs out. Drawn rarely otherwise: short-joins-long lets
// its joiner go within the joiner's lease, and a write re-entry's unlock sets the lock's TTL afresh.
func writeReentersShorter(rng *rand.Rand, c Caps, g *Genome) {
	long, short := leases[len(leases)-1], pick(rng, leases[:3])
	zero := time.Duration(0)
	a := schedule.Step{Name: g.name(), Client: "c1", Acquire: schedule.Write, Lease: &long, Wait: wait(rng)}
	in := schedule.Step{Name: g.name(), After: a.Name, Delay: pick(rng, gaps), Client: "c1", Acquire: schedule.Write,
		Lease: &short, Wait: &zero}
	w := pick(rng, waits[3:]) // past the short lease
	cw := schedule.Step{Name: g.name(), After: in.Name, Delay: pick(rng, gaps), Client: "c2", Acquire: pick(rng, c.Ops()),
		Lease: c.lease(rng), Wait: &w}
	inRel := schedule.Step{Name: g.name(), After: in.Name, Delay: short + pick(rng, holds[2:5]), Client: "c1", Release: true}
	g.Schedule.Steps = append(g.Schedule.Steps, a, in, cw, inRel,
		schedule.Step{Name: g.name(), After: cw.Name, Delay: pick(rng, holds[:3]), Client: "c2", Release: true},
		schedule.Step{Name: g.name(), After: inRel.Name, Delay: pick(rng, holds[1:4]), Client: "c1", Release: true})
}

// lostRelease: holders that fill the lock (its permits, or the one lock), the first with a re-entry where
// the lock has them; a fault aimed at the first's client (a reply dropped or slowed, the client frozen)
// started just before it releases (its inner hold first), so the release goes out while the fault is on
// and may be resent; then two more clients ask. A release that counts twice lets them both in beside the
// holders left (a semaphore's permits overflow); an inner unlock resent deletes the outer hold. With own, a
// semaphore's first holder takes two permits itself (a release that frees by holder frees the other too).
func lostRelease(own bool) func(rng *rand.Rand, c Caps, g *Genome) {
	return func(rng *rand.Rand, c Caps, g *Genome) {
		n := int64(1)
		if c.semaphore() {
			if rng.IntN(3) == 0 && !own {
				g.set("permits", pick(rng, permitMenu[:2]))
			}
			n = g.permits(c)
			if own && n < 2 {
				g.set("permits", "2")
				n = 2
			}
			if own && (c.Timeout == 0 || c.Timeout > time.Second) { // the resend soon: the run stays short
				g.set("timeout", timeouts[1])
			}
		}
		first := schedule.Step{Name: g.name(), Client: "c1", Acquire: pick(rng, c.Ops()), Lease: c.longLease(rng), Wait: wait(rng)}
		g.Schedule.Steps = append(g.Schedule.Steps, first)
		last, inner := first.Name, ""
		// a re-entry, or a semaphore holder's second permit (a release that frees by holder frees either), with
		// the outer hold's lease: a shorter one would show the re-entry's lease first
		if second := own && n >= 2; c.Reentrant || second {
			if second {
				n-- // the holder's two permits fill two of them
			}
			in := schedule.Step{Name: g.name(), After: first.Name, Delay: pick(rng, gaps), Client: "c1",
				Acquire: first.Acquire, Lease: first.Lease, Wait: wait(rng)}
			if in.Lease != nil {
				l := *in.Lease
				in.Lease = &l
			}
			g.Schedule.Steps = append(g.Schedule.Steps, in)
			last, inner = in.Name, in.Name
		}
		for k := int64(2); k <= n; k++ { // the other holders keep theirs while the others ask
			st := schedule.Step{Name: g.name(), After: last, Delay: pick(rng, gaps), Client: "c" + strconv.FormatInt(k, 10),
				Acquire: pick(rng, c.Ops()), Lease: c.longLease(rng), Wait: wait(rng)}
			keep := 5 * time.Second
			if st.Lease != nil {
				keep = min(keep, fitIn(*st.Lease))
			}
			g.Schedule.Steps = append(g.Schedule.Steps, st,
				schedule.Step{Name: g.name(), After: st.Name, Delay: keep, Client: st.Client, Release: true})
			last = st.Name
		}
		f := c.releaseFault(rng)
		if f == "" {
			return
		}
		fault := schedule.Step{Name: g.name(), After: last, Delay: pick(rng, gaps), Fault: f, Targets: []string{"c1"},
			For: pick(rng, faultFors[1:])} // longer than the release takes to answer
		rel := schedule.Step{Name: g.name(), After: fault.Name, Delay: pick(rng, gaps[:2]), Client: "c1", Release: true}
		g.Schedule.Steps = append(g.Schedule.Steps, fault, rel)
		if inner != "" { // the outer hold's release, later; a first permit's after the others asked
			later := holds[1:4]
			if c.semaphore() {
				later = holds[3:]
			}
			g.Schedule.Steps = append(g.Schedule.Steps, schedule.Step{Name: g.name(), After: rel.Name,
				Delay: pick(rng, later), Client: "c1", Release: true})
		}
		for k := n + 1; k <= n+2; k++ { // each holds a while, so that both are in at once
			w, cl := pick(rng, waits[2:]), "c"+strconv.FormatInt(k, 10)
			st := schedule.Step{Name: g.name(), After: rel.Name, Delay: pick(rng, gaps), Client: cl,
				Acquire: pick(rng, c.Ops()), Lease: c.longLease(rng), Wait: &w}
			g.Schedule.Steps = append(g.Schedule.Steps, st,
				schedule.Step{Name: g.name(), After: st.Name, Delay: pick(rng, holds[3:5]), Client: cl, Release: true})
		}
	}
}

// releaseFault is a fault aimed at one client for a release to go out under: a lost reply (the one a
// resend follows) where the deployment has it, else any fault aimed at a client (the mutators move and
// add others).
func (c Caps) releaseFault(rng *rand.Rand) string {
	aimed := c.aimed()
	if slices.Contains(aimed, "drop-reply") {
		return "drop-reply"
	}
	if len(aimed) == 0 {
		return ""
	}
	return pick(rng, aimed)
}

// aimed are the faults the deployment can aim at one client.
func (c Caps) aimed() []string {
	var out []string
	for _, f := range c.Faults {
		if f.Client {
			out = append(out, f.Name)
		}
	}
	return out
}

// fitting are the shapes the lock can play.
func fitting(c Caps) []Shape {
	var out []Shape
	for _, sh := range Shapes {
		if sh.Fits == nil || sh.Fits(c) {
			out = append(out, sh)
		}
	}
	return out
}

type actor struct {
	client string
	thread int64
}

// anchor is a recent step to follow ("" for the first step).
func (g *Genome) anchor(rng *rand.Rand) string {
	n := len(g.Schedule.Steps)
	if n == 0 {
		return ""
	}
	return g.Schedule.Steps[max(0, n-1-rng.IntN(min(n, 3)))].Name
}

// addActor appends an actor's acquire after the anchor, maybe a re-entry, and its release; it returns the
// acquire's index.
func (g *Genome) addActor(rng *rand.Rand, c Caps, a actor, after string) int {
	op := pick(rng, c.Ops())
	acq := schedule.Step{Name: g.name(), After: after, Client: a.client, Thread: a.thread, Acquire: op,
		Lease: c.lease(rng), Wait: wait(rng)}
	if op == schedule.Write && rng.IntN(2) == 0 { // a writer that outwaits the readers: a grant beside one shows
		w := pick(rng, waits[2:])
		acq.Wait = &w
	}
	if after != "" {
		acq.Delay = pick(rng, gaps)
	}
	g.Schedule.Steps = append(g.Schedule.Steps, acq)
	at := len(g.Schedule.Steps) - 1
	last := acq.Name
	if c.Reentrant && rng.IntN(4) == 0 {
		last = g.addReentry(rng, c, len(g.Schedule.Steps)-1)
	}
	hold := holdFor(rng, acq.Lease)
	rel := schedule.Step{Name: g.name(), After: last, Delay: hold, Client: a.client, Thread: a.thread, Release: true}
	if rng.IntN(5) == 0 { // the work ends in time, the release comes late
		leave := schedule.Step{Name: g.name(), After: last, Delay: hold, Client: a.client, Thread: a.thread, Leave: true}
		g.Schedule.Steps = append(g.Schedule.Steps, leave)
		rel.After, rel.Delay = leave.Name, pick(rng, holds)
	}
	g.Schedule.Steps = append(g.Schedule.Steps, rel)
	return at
}

// holdFor is a hold that fits the lease (Check's margin kept): a holder that outlives its lease is no
// finding. A lease of 0 (the watchdog's) or none (a plain semaphore's) takes any.
func holdFor(rng *rand.Rand, lease *time.Duration) time.Duration {
	var fit []time.Duration
	for _, h := range holds {
		if lease == nil || *lease == 0 || h <= fitIn(*lease) {
			fit = append(fit, h)
		}
	}
	if len(fit) == 0 {
		return 0
	}
	return pick(rng, fit)
}

// fitIn is the longest hold Check lets a lease have: its margin and an answer's slack kept.
func fitIn(lease time.Duration) time.Duration {
	return lease - max(100*time.Millisecond, lease/4) - answerSlack
}

// addReentry inserts after step i (an acquire) a re-entry by its actor with a lease of its own and that
// re-entry's release; it returns the release's name.
func (g *Genome) addReentry(rng *rand.Rand, c Caps, i int) string {
	outer := g.Schedule.Steps[i]
	op := outer.Acquire
	if op == schedule.Write && rng.IntN(2) == 0 { // a writer may read too (Redisson's read inside a write)
		op = schedule.Read
	}
	in := schedule.Step{Name: g.name(), After: outer.Name, Delay: pick(rng, gaps), Client: outer.Client,
		Thread: outer.Thread, Acquire: op, Lease: c.lease(rng), Wait: wait(rng)}
	out := schedule.Step{Name: g.name(), After: in.Name, Delay: pick(rng, holds), Client: outer.Client,
		Thread: outer.Thread, Release: true}
	g.Schedule.Steps = slices.Insert(g.Schedule.Steps, i+1, in, out)
	return out.Name
}

// addFault appends a fault started after the anchor.
func (g *Genome) addFault(rng *rand.Rand, c Caps, after string) {
	f := pick(rng, c.Faults)
	st := schedule.Step{Name: g.name(), After: after, Fault: f.Name, For: pick(rng, faultFors)}
	if after == "" {
		st.At = pick(rng, holds)
	}
	if f.Client {
		st.Targets = []string{pick(rng, g.clients())}
	}
	g.Schedule.Steps = append(g.Schedule.Steps, st)
}

// clients are the clients the steps name, in order of first use.
func (g *Genome) clients() []string {
	var out []string
	for _, st := range g.Schedule.Steps {
		if st.Client != "" && !slices.Contains(out, st.Client) {
			out = append(out, st.Client)
		}
	}
	if len(out) == 0 {
		out = []string{"c1"}
	}
	return out
}

// actors are the actors the steps name, in order of first use.
func (g *Genome) actors() []actor {
	var out []actor
	for _, st := range g.Schedule.Steps {
		a := actor{st.Client, st.Thread}
		if st.Client != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Check parses the genome's schedule back from its text (every rule a file obeys) and checks it against the
// lock, and that every holder's work fits its lease: what fails is never run.
func (g *Genome) Check(c Caps) error {
	if len(g.Schedule.Steps) == 0 || len(g.Schedule.Steps) > maxSteps {
		return fmt.Errorf("%d steps", len(g.Schedule.Steps))
	}
	if len(g.actors()) > maxActors+1 {
		return fmt.Errorf("%d actors", len(g.actors()))
	}
	s, err := schedule.Parse(g.Schedule.Marshal(), "explore")
	if err != nil {
		return err
	}
	if err := s.Check(schedule.Caps{Lock: c.Lock, Family: c.Family, Reentrant: c.Reentrant}); err != nil {
		return err
	}
	tm := timesOf(s, g.timeout(c))
	if tm.end > maxSpan {
		return fmt.Errorf("spans %s", tm.end)
	}
	return tm.holdsFit(s)
}

// times are when each step can start and be done at the earliest (lo) and at the latest (hi): a step
// starts at its at, after the step it follows (and its delay) and after its actor's previous step; an
// acquire is done within its wait (and a little more: the answer's way back); an acquire or a release whose
// answer a fault may hold back is done that much later (see held).
type times struct {
	lo, hi []time.Duration // lo: start and done alike; hi: done
	start  []time.Duration // latest start
	end    time.Duration   // the latest any step is done
	anc    []uint64        // the steps each waits for, directly or through others (a bit per step)
}

// answerSlack is how long past its wait an acquire's answer may take on a loaded machine.
const answerSlack = 300 * time.Millisecond

// defaultTimeout is the run's --timeout when the caps do not say it.
const defaultTimeout = 3 * time.Second

// A fault holds a command's answer back while it is on: a node's (paused, failing over, restarting) every
// client's, a client's (frozen, its replies slowed or dropped) its own. A dropped reply costs more: the
// client waits its timeout and may send the command again (Redisson resends once more after that).
var (
	nodeHolds   = []string{"pause", "failover", "kill"}
	clientHolds = []string{"client-pause", "client-stall", "drop-reply", "latency"}
)

// window is a fault that may hold answers back: from its earliest start to its latest end, the client it
// is aimed at ("" for any), and how much later an answer it holds may come.
type window struct {
	from, to time.Duration
	client   string
	extra    time.Duration
}

// timesOf computes the steps' times. A fault may start after a step listed later (explore appends faults),
// so the answers it holds back are added in a second pass, and a third where that moved the faults too.
func timesOf(s *schedule.Schedule, timeout time.Duration) times {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	var held []window
	t := timesWith(s, nil)
	for range 3 {
		w := windowsOf(s, t, timeout)
		if slices.Equal(w, held) {
			break
		}
		held = w
		t = timesWith(s, held)
	}
	return t
}

func windowsOf(s *schedule.Schedule, t times, timeout time.Duration) []window {
	var out []window
	for j, st := range s.Steps {
		node, client := slices.Contains(nodeHolds, st.Fault), slices.Contains(clientHolds, st.Fault)
		if !node && !client {
			continue
		}
		extra := st.For
		if st.Fault == "drop-reply" {
			extra += 2 * timeout
		}
		if node || len(st.Targets) != 1 {
			out = append(out, window{t.lo[j], t.start[j] + st.For, "", extra})
			continue
		}
		out = append(out, window{t.lo[j], t.start[j] + st.For, st.Targets[0], extra})
	}
	return out
}

func timesWith(s *schedule.Schedule, held []window) times {
	n := len(s.Steps)
	t := times{lo: make([]time.Duration, n), hi: make([]time.Duration, n), start: make([]time.Duration, n), anc: make([]uint64, n)}
	index, prev := map[string]int{}, map[string]int{}
	for i, st := range s.Steps {
		lo, hi := st.At, st.At
		if st.After != "" {
			j := index[st.After]
			lo, hi = max(lo, t.lo[j]+st.Delay), max(hi, t.hi[j]+st.Delay)
			t.anc[i] |= t.anc[j] | 1<<j
		}
		if st.Client != "" {
			if j, ok := prev[st.Actor()]; ok {
				lo, hi = max(lo, t.lo[j]), max(hi, t.hi[j])
				t.anc[i] |= t.anc[j] | 1<<j
			}
			prev[st.Actor()] = i
		}
		t.start[i] = hi
		if st.Acquire != "" {
			hi += answerSlack
			if st.Wait != nil {
				hi += *st.Wait
			} else {
				hi += 5 * time.Second // the run's --wait
			}
		}
		if st.Acquire != "" || st.Release {
			for _, w := range held {
				if (w.client == "" || w.client == st.Client) && w.from <= t.start[i] && w.to >= lo {
					hi += w.extra
				}
			}
		}
		t.lo[i], t.hi[i] = lo, hi
		t.end = max(t.end, hi)
		if st.Name != "" {
			index[st.Name] = i
		}
	}
	return t
}

// holdsFit refuses a schedule in which a holder may still be working when its own lease has run out: the
// time from an outermost acquire (its earliest grant) to the end of its critical section (its actor's next
// leave, or the release that gives the key back; the end of the steps when none does), and any pause of
// its client in between, must stay a margin inside its lease. A holder that outlives its lease breaks any lease lock, by design: explore looks for the
// lock's own faults (a late release after a leave is the application's right, and stays).
func (t times) holdsFit(s *schedule.Schedule) error {
	for i, st := range s.Steps {
		// A re-entry's lease is free to differ from its hold's; a second permit is a hold of its own, until
		// the actor's next release (the last permit taken is the first given back).
		if st.Acquire == "" || st.Lease == nil || *st.Lease == 0 || st.Acquire != schedule.Permit && outerHeld(s, i) {
			continue
		}
		end, endAt := t.end, -1
		depth := 0
		for j := i; j < len(s.Steps); j++ {
			o := s.Steps[j]
			if o.Actor() != st.Actor() || o.Client == "" || o.KeyName() != st.KeyName() {
				continue
			}
			switch {
			case o.Acquire != "":
				depth++
			case o.Release:
				depth--
			}
			if o.Leave || depth == 0 {
				end, endAt = t.start[j], j
				break
			}
		}
		margin := max(100*time.Millisecond, *st.Lease/4)
		hold := end - t.lo[i] + t.frozen(s, st.Client, t.lo[i], end)
		if endAt >= 0 && t.anc[endAt]&(1<<i) != 0 { // the section's end waits for the grant: counted from it,
			// and a pause of the client that may fall in it still counts
			hold = end - t.hi[i] + t.frozen(s, st.Client, t.lo[i], end)
		}
		if hold > *st.Lease-margin {
			return fmt.Errorf("%s: %s may hold for %s on a %s lease", s.Label(i), st.Actor(), hold, *st.Lease)
		}
	}
	return nil
}

// freezing are the faults that stop a client's own work (its threads, or its whole process): a holder
// frozen while it holds works on past its lease when it wakes, by design of every lease lock.
var freezing = []string{"client-pause", "client-stall"}

// frozen is how long the client may be frozen between from and to: the length of every freezing fault
// aimed at it (or drawn, so perhaps at it) that may start in that span.
func (t times) frozen(s *schedule.Schedule, client string, from, to time.Duration) time.Duration {
	var d time.Duration
	for j, st := range s.Steps {
		if !slices.Contains(freezing, st.Fault) || len(st.Targets) > 0 && !slices.Contains(st.Targets, client) {
			continue
		}
		if t.hi[j] >= from && t.lo[j] <= to {
			d += st.For
		}
	}
	return d
}

// outerHeld says whether step i's actor already holds its key: a re-entry, whose lease is free to differ.
func outerHeld(s *schedule.Schedule, i int) bool {
	st, depth := s.Steps[i], 0
	for _, o := range s.Steps[:i] {
		if o.Client == "" || o.Actor() != st.Actor() || o.KeyName() != st.KeyName() {
			continue
		}
		switch {
		case o.Acquire != "":
			depth++
		case o.Release:
			depth--
		}
	}
	return depth > 0
}

// Span is how long the genome's steps can take at most, for the run's --time.
func (g *Genome) Span(c Caps) time.Duration { return timesOf(g.Schedule, g.timeout(c)).end }

// timeout is the --timeout the genome's run gets: its own setting, else the run's.
func (g *Genome) timeout(c Caps) time.Duration {
	if d, err := time.ParseDuration(g.Setting("timeout")); err == nil && d > 0 {
		return d
	}
	return c.Timeout
}
