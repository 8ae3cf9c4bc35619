package checker

import (
	"context"
	"fmt"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// ToldOfLoss judges a library's loss signals. Once another owner was granted a lock that a holder still held
// (the holder had an acknowledged grant and no release yet), the holder has lost it, whether its lease ran
// out or the server forgot it. A library must then tell its holder before or at the holder's next interaction
// with the lock: a lost event, a refused renewal or extend, a refused release (or a refused re-entry). A
// library that answers that interaction "ok" (renewed, extended, released), and so says nothing until the
// hold ends, is flagged with the grant that proves the loss.
//
// Named for the promise it holds a library to: a holder is told of its loss. It reads each owner's commands
// (a worker's calls, or the Go clients' commands with their watchdog's renewals) and the workers' lost
// events. Only acknowledged grants prove a loss: an acquire of unknown outcome was relied on by nobody,
// and with a compare-and-set renewal, as every library has, a later "ok" of the holder proves it did not
// take effect. A grant whose order against the holder's own grant the times cannot tell, or a re-entry of
// unknown outcome that may have taken the lock afresh, leaves the case undecided: unknown, never valid.
// Fair locks and read holds are skipped (a fair unlock answers 1 for a gone lock; co-readers share).
type ToldOfLoss struct{}

// Name is the checker's stable name.
func (ToldOfLoss) Name() string { return "told-of-loss" }

// WholeHistory marks a checker of what the application saw that also reads the wire records where a run
// has them (kinds passes it the whole history, not the clients' records alone).
type WholeHistory interface {
	Checker
	WholeHistory()
}

// WholeHistory: the wire's grants place a worker's grants in time (wireGrants.narrow).
func (ToldOfLoss) WholeHistory() {}

// Silence is one interaction a holder made with a lock it had lost without being told.
type Silence struct {
	Key          string `json:"key"`
	Holder       string `json:"holder"` // client/thread
	Granted      int64  `json:"granted_ns"`
	Other        string `json:"other"`
	OtherGranted int64  `json:"other_granted_ns"` // when the other owner's grant was answered
	F            string `json:"f"`                // renew (a renewal or extend) or release
	Call         int64  `json:"call_ns"`
	Return       int64  `json:"return_ns"`
	Heard        string `json:"heard"`
	Undecided    string `json:"undecided,omitempty"`
}

// lossOp is one command of the history as this checker reads it.
type lossOp struct {
	ownerOp
	raw string // the key as the worker names it in its events (Command.Key may carry a node)
	// at and by bound when a grant took effect: its call and return, or narrower, the span of its
	// client's grants on the wire inside them (a worker's tapped link: when its Redis said yes).
	at, by int64
}

func (o lossOp) grant() bool { return o.c.F == "acquire" && o.out.Outcome == Applied }

// Check walks each owner's commands on each key and, at each "ok" it got while holding, looks for another
// owner's grant between its own grant and that interaction.
func (ToldOfLoss) Check(_ context.Context, h *history.History) Result {
	split := splitBrain(h)
	wire := wireGrantsOf(h)
	byKey := map[string][]lossOp{}
	var keys []string
	eachCommand(h, newNames(), mutexCommands, func(i int, c Command, out Reply) {
		if c.Fair || c.Read || c.F == "expire" || h.Ops[i].Invoke.Src != "" {
			return // the wire records, where there are, say again what the clients' own say
		}
		if c.Replay || out.Outcome == Applied && split(h.Ops[i].Invoke.Client, c.Call) {
			out = Reply{Outcome: Unsure} // its answer says nothing certain (a replayed unlock, a demoted primary)
		}
		if byKey[c.Key] == nil {
			keys = append(keys, c.Key)
		}
		o := lossOp{ownerOp: ownerOp{c, out, i}, raw: h.Ops[i].Invoke.Key, at: c.Call, by: c.Return}
		if o.grant() {
			o.at, o.by = wire.narrow(h.Ops[i].Invoke.Client, o.raw, o.at, o.by)
		}
		byKey[c.Key] = append(byKey[c.Key], o)
	})
	told := lostEvents(h)
	var found, undecided []Silence
	for _, k := range keys {
		ops := byKey[k]
		sort.SliceStable(ops, func(a, b int) bool {
			return ops[a].c.Call < ops[b].c.Call || ops[a].c.Call == ops[b].c.Call && ops[a].i < ops[b].i
		})
		owners := map[string][]lossOp{}
		var order []string
		for _, o := range ops {
			if owners[o.c.Owner] == nil {
				order = append(order, o.c.Owner)
			}
			owners[o.c.Owner] = append(owners[o.c.Owner], o)
		}
		gs := grantsOf(ops)
		for _, owner := range order {
			f, u := silences(owners[owner], gs, told[[2]string{ops[0].raw, owner}])
			found, undecided = append(found, f...), append(undecided, u...)
		}
	}
	if len(found) > 0 {
		sort.SliceStable(found, func(a, b int) bool { return found[a].Return < found[b].Return })
		s := found[0]
		return Result{Valid: Invalid,
			Summary:   fmt.Sprintf("%d time(s) a holder that had lost its lock to another owner was answered ok, not told", len(found)),
			Violation: s.String(), At: s.OtherGranted, End: s.Return, Details: found}
	}
	if len(undecided) > 0 {
		s := undecided[0]
		return Result{Valid: Unknown,
			Summary:   fmt.Sprintf("%d holder interaction(s) answered ok after another owner may have been granted the lock", len(undecided)),
			Violation: s.String() + " (undecided: " + s.Undecided + ")", Details: undecided}
	}
	return Result{Valid: Valid, Summary: "every holder whose lock another owner was granted was told before or at its next interaction"}
}

func (s Silence) String() string {
	what := map[string]string{"renew": "renewal or extend", "release": "release"}[s.F]
	return fmt.Sprintf("%s was granted %s at %s and had not released it; %s was granted it at %s; %s's next %s, answered at %s, "+
		"heard %s: the library did not tell its holder that the lock was lost", s.Holder, s.Key, Secs(s.Granted), s.Other,
		Secs(s.OtherGranted), s.Holder, what, Secs(s.Return), s.Heard)
}

// lostEvents are the times of the workers' lost events, by (key, owner).
func lostEvents(h *history.History) map[[2]string][]int64 {
	out := map[[2]string][]int64{}
	for _, e := range h.Events {
		if e.F != "lost" || e.Client == history.WireClient {
			continue
		}
		k := [2]string{e.Key, ownerName(history.Call{Client: e.Client, Owner: e.Owner})}
		out[k] = append(out[k], e.Time)
	}
	return out
}

// silences judges one owner's commands on a key (mine, in order of call) against the key's grants.
func silences(mine []lossOp, all grants, events []int64) (found, undecided []Silence) {
	var g *lossOp       // the grant the holder's hold began with; nil: not holding
	var toldHold bool   // the holder was told (or flagged) during this hold: nothing more to judge
	var reentry *lossOp // a re-entry of unknown outcome since g: it may have taken the lock afresh
	heardSince := func(from, to int64) bool {
		for _, t := range events {
			if t >= from && t <= to {
				return true
			}
		}
		return false
	}
	for j := range mine {
		x := &mine[j]
		switch {
		case x.c.F == "acquire" && x.out.Outcome == Applied:
			// A re-entry into the hold changes nothing here; one after another owner's grant took the lock
			// afresh (Redisson answers a re-entry into a lost lock so): a new hold begins.
			if g != nil && all.after(x.c.Owner, g, x.c.Call) == nil {
				continue
			}
			g, toldHold, reentry = x, false, nil
			continue
		case g == nil:
			continue
		case x.out.Outcome == Refused:
			toldHold = true // a refused renewal, release or re-entry tells the holder
			if x.c.F == "release" {
				g = nil
			}
			continue
		case x.out.Outcome == Unsure:
			if x.c.F == "acquire" && reentry == nil {
				reentry = x
			}
			if x.c.F == "release" {
				g = nil // the holder does not know whether it still holds: nothing more is judged
			}
			continue
		}
		// x is an "ok" the holder got for a renewal or release while holding since g.
		if !toldHold && !heardSince(g.c.Call, x.c.Return) {
			s := Silence{Key: x.c.Key, Holder: x.c.Owner, Granted: g.c.Return, F: x.c.F, Call: x.c.Call, Return: x.c.Return,
				Heard: heard(x)}
			if p := all.after(x.c.Owner, g, x.c.Call); p != nil {
				s.Other, s.OtherGranted = p.c.Owner, p.c.Return
				if reentry != nil && reentry.c.Return > p.at {
					s.Undecided = fmt.Sprintf("its re-entry at %s has an unknown outcome and may have taken the lock afresh",
						Secs(reentry.c.Call))
					undecided = append(undecided, s)
				} else {
					found = append(found, s)
				}
				toldHold = true
			} else if p := all.overlapping(x.c.Owner, g, x.c.Call); p != nil {
				s.Other, s.OtherGranted = p.c.Owner, p.c.Return
				s.Undecided = fmt.Sprintf("%s's grant overlaps %s's own (%s to %s), so which came first is not known",
					p.c.Owner, x.c.Owner, Secs(g.at), Secs(g.by))
				undecided = append(undecided, s)
				toldHold = true
			}
		}
		if x.c.F == "release" && x.out.Value != 0 {
			g = nil // released: the hold ended
		}
	}
	return found, undecided
}

// grants are a key's acknowledged grants in order of call, and the longest time one took to answer (a
// grant that overlaps a moment was called at most that long before it).
type grants struct {
	ops     []*lossOp
	longest int64
}

func grantsOf(ops []lossOp) grants {
	var g grants
	for i := range ops {
		if p := &ops[i]; p.grant() {
			g.ops = append(g.ops, p)
			g.longest = max(g.longest, p.by-p.at)
		}
	}
	sort.SliceStable(g.ops, func(a, b int) bool { return g.ops[a].at < g.ops[b].at })
	return g
}

// wireGrants are the grants the wire recorder saw, by client and key, in order of call.
type wireGrants map[[2]string][][2]int64

func wireGrantsOf(h *history.History) wireGrants {
	out := wireGrants{}
	for _, o := range h.Ops {
		if o.Invoke.Src == history.WireSrc && o.Invoke.F == "acquire" && o.Outcome() == history.Ok {
			k := [2]string{o.Invoke.Client, o.Invoke.Key}
			out[k] = append(out[k], [2]int64{o.Invoke.Time, o.Complete.Time})
		}
	}
	for _, ws := range out {
		sort.Slice(ws, func(a, b int) bool { return ws[a][0] < ws[b][0] })
	}
	return out
}

// narrow bounds a client's grant on key, called at call and answered at ret, by the span of that client's
// wire grants inside it: its Redis said yes in one of them (a tap sees a command after the client sent it,
// and the reply before the client reads it). Without any, the grant's own interval stands.
func (w wireGrants) narrow(client, key string, call, ret int64) (int64, int64) {
	ws := w[[2]string{client, key}]
	lo, hi := int64(-1), int64(-1)
	for i := sort.Search(len(ws), func(i int) bool { return ws[i][0] >= call }); i < len(ws) && ws[i][0] <= ret; i++ {
		if ws[i][1] <= ret {
			if lo < 0 {
				lo = ws[i][0]
			}
			hi = max(hi, ws[i][1])
		}
	}
	if lo < 0 {
		return call, ret
	}
	return lo, hi
}

// after is the first acknowledged grant of another owner that surely took effect after g (answered at
// from), and was answered before to, or nil. Surely after: called after from; or answered after from and
// called less than its own lease before it. For on a correct server a grant that came first must have
// lapsed (its lease run out: its owner's release follows its answer) before the later one took effect, so
// it took effect at least its lease before from. A grant answered before g's lease could run out is left
// out: the server granted the lock twice, which porcupine and exclusion judge, and no signal is owed.
func (gs grants) after(owner string, g *lossOp, to int64) *lossOp {
	from := g.by
	first := sort.Search(len(gs.ops), func(i int) bool { return gs.ops[i].at >= from-gs.longest })
	for i := first; i < len(gs.ops); i++ {
		p := gs.ops[i]
		if p.at >= to {
			break
		}
		if p.c.Owner != owner && p.by < to && mayFollow(g, p) && (p.at > from ||
			p.by > from && p.c.Lease > 0 && p.at > from-p.c.Lease+Epsilon(p.c.Lease)) {
			return p
		}
	}
	return nil
}

// overlapping is another owner's acknowledged grant, answered after g was and before to, whose call came
// before g was answered, so that it may have taken effect after g (a loss) or before it; nil if none. A
// grant answered before g was is one the holder was granted over (from its point of view its hold began
// later), not lost to. And on a correct server a grant after g's comes only once g's lease may have run
// out: a grant answered before then came first.
func (gs grants) overlapping(owner string, g *lossOp, to int64) *lossOp {
	first := sort.Search(len(gs.ops), func(i int) bool { return gs.ops[i].at >= g.by-gs.longest })
	for i := first; i < len(gs.ops) && gs.ops[i].at <= g.by; i++ {
		p := gs.ops[i]
		if p.c.Owner != owner && p.by < to && p.by > g.by && mayFollow(g, p) {
			return p
		}
	}
	return nil
}

// mayFollow reports whether p may have been granted after g on a correct server: once g's lease may have
// run out.
func mayFollow(g, p *lossOp) bool {
	return g.c.Lease <= 0 || p.by >= g.at+g.c.Lease-Epsilon(g.c.Lease)
}

// heard says what the holder was answered instead of being told.
func heard(x *lossOp) string {
	if x.c.F == "renew" {
		return "renewed (ok)"
	}
	if x.out.Value == 0 {
		return "released (ok, a re-entrant hold left)"
	}
	return "released (ok)"
}
