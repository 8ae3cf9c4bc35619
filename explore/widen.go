package explore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// A found schedule may fail only through the machine's delays: a re-entry's release drawn 200 ms after it,
// inside its 300 ms lease, fails when the release comes more than 100 ms late, once in five on a loaded
// machine; a holder that leaves 1 ms after a re-entry's lease ended fails on a stall. Before a finding is
// confirmed, Widen moves each step that races a lease later, past that lease by a margin, and keeps the
// move when the schedule still fails the same way: the confirmation then measures the flaw, not the
// machine.

// Widening is one move: step Step made to come Margin after the end of Lease's lease (from its grant).
type Widening struct {
	Step, Lease string // the steps' names
	By          time.Duration
	genome      *Genome
}

func (w Widening) String() string {
	return fmt.Sprintf("%s after %s by its lease + %s", w.Step, w.Lease, w.By)
}

// widenMargin is how far past a lease a widened step comes: half the lease, at least 200 ms (a loaded
// machine's delays, and a clock's skew between the client and Redis).
func widenMargin(lease time.Duration) time.Duration { return max(lease/2, 200*time.Millisecond) }

// Widenings are g's moves, each a checked copy of g with one step that races a lease moved later: a
// release or leave by the holder of a lease'd acquire (its own, or a re-entry's), or another actor's
// acquire of that key, that may come before the lease has run out plus a margin. The step then follows the
// acquire by the lease and the margin. A move that breaks a rule of Check (a holder's work past its own
// lease) is left out: that would be the holder's doing, not the lock's. The releases and leaves come
// first, shorter leases first: a short lease is the one that races.
func Widenings(c Caps, g *Genome) []Widening {
	s := g.Schedule
	t := timesOf(s, c.Timeout)
	var out []Widening
	for j, l := range s.Steps {
		if l.Acquire == "" || l.Lease == nil || *l.Lease == 0 || l.Name == "" {
			continue
		}
		by := *l.Lease + widenMargin(*l.Lease)
		for i, st := range s.Steps {
			if t.anc[i]&(1<<j) == 0 || st.Client == "" || st.KeyName() != l.KeyName() || t.lo[i]-t.lo[j] >= by {
				continue // it does not follow the grant, or it is past the lease already
			}
			own := st.Actor() == l.Actor()
			if own && st.Acquire != "" || !own && st.Acquire == "" || !openAt(s, t, j, i, t.lo[j]+by) {
				continue
			}
			if own && st.Release && leftBefore(s, j, i) {
				continue // a late release after the work ended: the schedule chose its moment, no lease races it
			}
			m := g.clone()
			ms := &m.Schedule.Steps[i]
			ms.At, ms.After, ms.Delay = 0, l.Name, by
			if m.Check(c) != nil {
				continue
			}
			out = append(out, Widening{Step: st.Name, Lease: l.Name, By: by - *l.Lease, genome: m})
		}
	}
	rank := func(w Widening) int { // releases and leaves before waiters
		if g.step(w.Step).Acquire != "" {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b Widening) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(*g.step(a.Lease).Lease, *g.step(b.Lease).Lease))
	})
	return out
}

// step is the step of that name.
func (g *Genome) step(name string) schedule.Step {
	i := slices.IndexFunc(g.Schedule.Steps, func(st schedule.Step) bool { return st.Name == name })
	return g.Schedule.Steps[i]
}

// openAt says whether acquire j's hold is open when step i starts: for its own actor by file order (an
// actor plays its steps in order); for another's, whether it is surely still open at until, where the move
// would put step i (its release comes no sooner): a waiter moved past a hold that may have been given back
// races nothing, and may meet another step there instead (explore moved a reader past a late release's
// 100 ms lease onto another reader's start, and the finding, which needed their order, failed 0 of 2).
func openAt(s *schedule.Schedule, t times, j, i int, until time.Duration) bool {
	a, depth := s.Steps[j], 0
	for k := j; k < len(s.Steps); k++ {
		o := s.Steps[k]
		if o.Actor() != a.Actor() || o.Client == "" || o.KeyName() != a.KeyName() {
			continue
		}
		if k == i {
			return true
		}
		switch {
		case o.Acquire != "":
			depth++
		case o.Release:
			depth--
		}
		if depth == 0 { // j's release
			return s.Steps[i].Actor() != a.Actor() && t.lo[k] >= until
		}
	}
	return true
}

// leftBefore says whether acquire j's actor left its section on the key between step j and step i.
func leftBefore(s *schedule.Schedule, j, i int) bool {
	a := s.Steps[j]
	return slices.ContainsFunc(s.Steps[j+1:i], func(o schedule.Step) bool {
		return o.Leave && o.Actor() == a.Actor() && o.KeyName() == a.KeyName()
	})
}

// Widen tries g's moves one after another (at most tries of them), each on the genome kept so far, and
// keeps a move when still says the moved schedule still fails the same way. It returns the genome kept
// (g itself when no move was) and the moves kept.
func Widen(ctx context.Context, c Caps, g *Genome, tries int, still func(context.Context, *Genome) bool) (*Genome, []Widening) {
	return reduce(ctx, g, tries, " widened", func(g *Genome) []Widening { return Widenings(c, g) }, still)
}

func (w Widening) key() string        { return w.Step + " " + w.Lease }
func (w Widening) candidate() *Genome { return w.genome }

// change is a candidate for reduce: a changed copy of a genome, and what names the change across rounds.
type change interface {
	key() string
	candidate() *Genome
}

// reduce tries the changes of the genome kept so far one after another, the first not yet tried each
// round (at most tries of them), and keeps a change when still says its schedule still fails the same way.
func reduce[C change](ctx context.Context, g *Genome, tries int, suffix string, changes func(*Genome) []C,
	still func(context.Context, *Genome) bool) (*Genome, []C) {
	var kept []C
	tried := map[string]bool{}
	for n := 0; n < tries && ctx.Err() == nil; n++ {
		cs := changes(g)
		i := slices.IndexFunc(cs, func(c C) bool { return !tried[c.key()] })
		if i < 0 {
			break
		}
		next := cs[i]
		tried[next.key()] = true
		m := next.candidate()
		m.Origin = g.Origin + suffix
		if still(ctx, m) {
			g = m
			kept = append(kept, next)
		}
	}
	return g, kept
}
