package checker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// Proof is the part of an invalid history that still proves a checker's violation: indices into the
// history's Ops, Faults, Sections and Events. Excerpt makes it a history of its own.
type Proof struct {
	Checker  string
	Ops      []int
	Faults   []int
	Sections []int
	Events   []int
	// Minimal says no single operation of Ops can be dropped: the minimisation ran to its end within its
	// bound (else Ops is the smallest set it had proved when the bound ran out).
	Minimal bool
	// Tried counts the candidates searched; Window the commands of the key the search read (those around
	// the violation).
	Tried, Window int
}

// Excerpt is the proof as a history: h's meta and end records around the proof's records.
func (p Proof) Excerpt(h *history.History) *history.History {
	x := &history.History{Meta: h.Meta, MetaLine: 1, Run: h.Run, RunErr: h.RunErr, Ended: h.Ended}
	x.Ops = pick(h.Ops, p.Ops)
	x.Faults = pick(h.Faults, p.Faults)
	x.Sections = pick(h.Sections, p.Sections)
	x.Events = pick(h.Events, p.Events)
	return x
}

func pick[T any](all []T, idx []int) []T {
	var out []T
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}

// Minimize is delta debugging (Zeller's ddmin) over items 0..n-1, which proves must hold of: the
// smallest subset it finds that proves still holds of, in increasing order. It tries each half-, quarter-,
// ... chunk alone and each chunk's complement, keeping the first that still proves, until no single item
// can be dropped (minimal true). ctx bounds the whole: once it is done, the smallest subset proved so far
// is returned with minimal false.
func Minimize(ctx context.Context, n int, proves func(keep []int) bool) (keep []int, minimal bool) {
	keep = allOf(n)
	parts := 2
	for len(keep) >= 2 {
		if ctx.Err() != nil {
			return keep, false
		}
		chunks := split(keep, parts)
		next := []int(nil)
		for _, c := range chunks {
			if proves(c) {
				next, parts = c, 2
				break
			}
		}
		for i := 0; next == nil && len(chunks) > 2 && i < len(chunks); i++ { // two chunks: each complement is the other
			if c := complement(chunks, i); proves(c) {
				next, parts = c, max(parts-1, 2)
			}
		}
		if next != nil {
			keep = next
			continue
		}
		if ctx.Err() != nil {
			return keep, false
		}
		if parts >= len(keep) {
			break
		}
		parts = min(2*parts, len(keep))
	}
	return keep, ctx.Err() == nil || len(keep) <= 1
}

// split cuts s into k chunks of nearly equal length, in order.
func split(s []int, k int) [][]int {
	out := make([][]int, 0, k)
	for i := range k {
		lo, hi := i*len(s)/k, (i+1)*len(s)/k
		if hi > lo {
			out = append(out, s[lo:hi])
		}
	}
	return out
}

// complement is every chunk but chunks[skip], in order.
func complement(chunks [][]int, skip int) []int {
	var out []int
	for i, c := range chunks {
		if i != skip {
			out = append(out, c...)
		}
	}
	return out
}

// ProofBound bounds the minimisation of one proof (Linearizable.Proof); proofCandidate bounds the search
// of each candidate, and a candidate it leaves undecided counts as not proving the violation.
const (
	ProofBound     = 30 * time.Second
	proofCandidate = 2 * time.Second
)

// Proof minimises an invalid verdict of l on h (res, from a Check with l's model) to a few operations of
// its illegal key: delta debugging (Minimize) over the commands porcupine read on that key, each command's
// call and return kept together. A candidate proves the violation when the key's commands have no legal
// order even with every command outside it weakened to an unknown outcome within its own interval (it
// may or may not have taken effect): that history allows every behaviour the recorded one does, so no
// dropped command can be what made the candidate illegal (dropping them outright would: a release alone,
// its acquire gone, has no legal order from a free lock), and the candidate alone has none either. Each
// candidate is searched within proofCandidate; one left undecided does not prove it. bound bounds the
// whole (then Minimal is false). The fault windows in force during the kept commands, the run's meta and
// end records and the wire recorder's verdict on itself come along, as they decide how the records read.
// ok is false when res is not invalid, names no key, or no proof was confirmed within the bound: the
// excerpt is checked once more, by a fresh copy of l, as `lockcheck check` would. res is never changed.
func (l *Linearizable) Proof(ctx context.Context, h *history.History, res Result, bound time.Duration) (p Proof, ok bool) {
	d, _ := res.Details.(map[string]any)
	key, _ := d["key"].(string)
	if res.Valid != Invalid || key == "" {
		return Proof{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var ops []porcupine.Operation
	for _, o := range l.Operations(h) {
		if c, isCmd := o.Input.(Command); isCmd && c.Key == key {
			ops = append(ops, o)
		}
	}
	if w := widened(ops); w != nil {
		ops = w // each API grant's whole call: the more lenient search, as confirm's
	}
	ops, m := proofWindow(ctx, l.Model, ops, res.At)
	p = Proof{Checker: l.Label, Window: len(ops)}
	proves := func(keep []int) bool {
		if ctx.Err() != nil {
			return false
		}
		p.Tried++
		return weakenedIllegal(ctx, m, ops, keep)
	}
	keep, minimal := Minimize(ctx, len(ops), proves)
	if len(keep) == len(ops) && !proves(keep) {
		return Proof{}, false
	}
	at := map[[2]any]bool{}           // (call, thread) of the kept commands
	resent := map[string][][2]int64{} // thread -> the sends of its kept resent unlocks, first to last
	for _, i := range keep {
		c := ops[i].Input.(Command)
		at[[2]any{c.Call, c.Client}] = true
		if c.Resent {
			resent[c.Client] = append(resent[c.Client], [2]int64{c.Call, c.LastSend})
		}
	}
	for i := range h.Ops {
		inv := h.Ops[i].Invoke
		if nodeKey(inv) != key {
			continue
		}
		kept := at[[2]any{inv.Time, threadName(inv)}]
		for _, r := range resent[threadName(inv)] {
			kept = kept || inv.F == "release" && inv.Time >= r[0] && inv.Time <= r[1]
		}
		if kept {
			p.Ops = append(p.Ops, i)
		}
	}
	p.Minimal = minimal
	for i, e := range h.Events {
		if e.Client == history.WireClient {
			p.Events = append(p.Events, i)
		}
	}
	p.Faults = faultsInForce(h, p.Ops)
	if !p.excerptInvalid(ctx, h, l) { // the faults in force do not suffice: every fault record
		p.Faults = p.Faults[:0]
		for i := range h.Faults {
			p.Faults = append(p.Faults, i)
		}
	}
	return p, p.excerptInvalid(ctx, h, l)
}

// weakenedIllegal reports whether ops have no legal order under m with every command but those at keep
// weakened to an unknown outcome within its own interval (or, for one that only tests the state, left
// out), searched within proofCandidate.
func weakenedIllegal(ctx context.Context, m porcupine.NondeterministicModel, ops []porcupine.Operation, keep []int) bool {
	kept := make([]bool, len(ops))
	for _, i := range keep {
		kept[i] = true
	}
	weak := make([]porcupine.Operation, 0, len(ops))
	for i, o := range ops {
		switch {
		case kept[i]:
		case guard(o):
			continue // it only tests the state: without it every order stays legal, and the search is smaller
		default:
			o.Output = Reply{Outcome: Unsure}
		}
		weak = append(weak, o)
	}
	if _, _, lapsed := lapsedRelease(weak); lapsed {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, proofCandidate)
	defer cancel()
	return frontierKey(ctx, m, weak).res == porcupine.Illegal
}

// proofWindow narrows a key's commands (in order of call) to those between two quiet moments around the
// illegal command called at at (nothing in flight across either), and returns the model to search them
// with. A window that starts after the first command starts from every state the lock can be in there
// (the mutex model's: free, or held by any owner with any count its acquires allow, its lease ending at
// any time), so a window with no legal order proves the whole history has none; it widens back until
// that holds. Models without such states keep the whole prefix from the lock's first state.
func proofWindow(ctx context.Context, m porcupine.NondeterministicModel, ops []porcupine.Operation, at int64) ([]porcupine.Operation, porcupine.NondeterministicModel) {
	quiet, to := QuietMoments(ops, at)
	if _, mutex := m.Init()[0].(MutexState); !mutex {
		return ops[:to], m
	}
	for back := time.Duration(0); ctx.Err() == nil; back = max(2*back, 100*time.Millisecond) {
		from := 0
		for _, i := range quiet {
			if ops[i].Call <= at-int64(back) {
				from = i
			}
		}
		if from == 0 {
			break
		}
		anyState := m
		init := anyMutexState(ops[:from], ops[from:to])
		anyState.Init = func() []interface{} { return init }
		if weakenedIllegal(ctx, anyState, ops[from:to], allOf(to-from)) {
			return ops[from:to], anyState
		}
	}
	return ops[:to], m
}

// QuietMoments are the indices of a key's commands (in order of call) called after every command called
// before them had returned (nothing in flight across that moment), and to, the first of them called after
// the command called at at returned (len(ops) when none is): the commands a violation at at can rest on
// end before to.
func QuietMoments(ops []porcupine.Operation, at int64) (quiet []int, to int) {
	culprit := int64(math.MinInt64)
	for _, o := range ops {
		if o.Call == at {
			culprit = max(culprit, o.Return)
		}
	}
	reach := int64(math.MinInt64)
	for i, o := range ops {
		if reach < o.Call {
			quiet = append(quiet, i)
		}
		reach = max(reach, o.Return)
	}
	to = len(ops)
	if culprit == math.MinInt64 {
		return quiet, to
	}
	for _, i := range quiet {
		if ops[i].Call > culprit {
			return quiet, i
		}
	}
	return quiet, to
}

// anyMutexState is every state the mutex model can be in after before, as far as the commands of window
// can tell them apart: free, or held by an owner that acquired in before, with any count up to its
// acquires, its lease ending at any time. An owner with no command in window is one representative (none
// of them acts there: only the lease tells their holds apart), and a count above the owner's releases in
// window + 1 is that (no release in window can take it to zero): without these a reentrant history gave
// thousands of start states, and every candidate searched them all.
func anyMutexState(before, window []porcupine.Operation) []interface{} {
	releases := map[string]int{}
	for _, o := range window {
		if in := o.Input.(Command); in.F == "release" || in.F == "force_release" {
			releases[in.Owner]++
		}
	}
	holds := map[string]int{}
	var owners []string
	outsider := ""
	for _, o := range before {
		in := o.Input.(Command)
		if in.F != "acquire" {
			continue
		}
		if _, acts := releases[in.Owner]; !acts && !actsIn(window, in.Owner) {
			outsider = in.Owner
			continue
		}
		if holds[in.Owner] == 0 {
			owners = append(owners, in.Owner)
		}
		holds[in.Owner]++
	}
	out := []interface{}{MutexState{}}
	if outsider != "" {
		out = append(out, MutexState{Owner: outsider, Holds: 1, Hi: math.MaxInt64})
	}
	for _, owner := range owners {
		for k := 1; k <= min(holds[owner], releases[owner]+2); k++ {
			out = append(out, MutexState{Owner: owner, Holds: k, Hi: math.MaxInt64})
		}
	}
	return out
}

func actsIn(ops []porcupine.Operation, owner string) bool {
	return slices.ContainsFunc(ops, func(o porcupine.Operation) bool { return o.Input.(Command).Owner == owner })
}

func allOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// excerptInvalid checks p's excerpt as `lockcheck check` would, with a fresh copy of l, within
// proofCandidate (after the minimisation's bound too: this check is what confirms a proof).
func (p Proof) excerptInvalid(ctx context.Context, h *history.History, l *Linearizable) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), proofCandidate)
	defer cancel()
	c := Linearizable{Label: l.Label, Model: l.Model, Convert: l.Convert, Level: l.Level, NoTimeline: true,
		Timeout: proofCandidate}
	return c.Check(ctx, p.Excerpt(h)).Valid == Invalid
}

// faultsInForce are the fault records in force (faultsDuring) while the operations ops of h were in flight,
// an unknown outcome up to the history's end.
func faultsInForce(h *history.History, ops []int) []int {
	end := h.End()
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, i := range ops {
		o := h.Ops[i]
		t := end // an unknown outcome may take effect up to the end
		if o.Complete != nil && o.Complete.Type != history.Unknown {
			t = o.Complete.Time
		}
		lo, hi = min(lo, o.Invoke.Time), max(hi, t)
	}
	return faultsDuring(h, lo, hi)
}

// faultsDuring are the indices of h's fault records whose window (start to stop, paired as history.Windows
// pairs them; open to the history's end) overlaps [lo, hi], the other fault records inside it, and the
// final heal: the faults that can bear on what happened then.
func faultsDuring(h *history.History, lo, hi int64) []int {
	end := h.End()
	type window struct {
		recs       []int
		start, end int64
	}
	var windows []*window
	open := map[string]*window{} // by kind and targets
	var out []int
	for i, f := range h.Faults {
		k := f.F + fmt.Sprint(f.Targets)
		w, inWindow := open[k]
		switch {
		case f.Phase == "start":
			w = &window{recs: []int{i}, start: f.Time, end: end}
			open[k] = w
			windows = append(windows, w)
		case f.Phase == "final" || f.Phase != "plan" && !inWindow && f.Time >= lo && f.Time <= hi:
			out = append(out, i)
		case inWindow:
			w.recs = append(w.recs, i)
			if f.Phase == "stop" {
				w.end = f.Time
				delete(open, k)
			}
		}
	}
	for _, w := range windows {
		if w.start <= hi && w.end >= lo {
			out = append(out, w.recs...)
		}
	}
	slices.Sort(out)
	return out
}

// Citer is a checker whose violation cites records of the history: Cite gives them as its proof (the
// interval checkers: the sections, grants and faults their first violation rests on).
type Citer interface {
	Cite(h *history.History, r Result) (Proof, bool)
}

// Cite is the proof of mutual-exclusion's invalid verdict: the first overlap's two critical sections, each
// holder's grant (its latest granted tryLock and acquire on the key called before it entered), and the fault
// windows in force from the first grant to the later exit.
func (x Exclusion) Cite(h *history.History, r Result) (Proof, bool) {
	d, _ := r.Details.(map[string]any)
	o, ok := d["first"].(Overlap)
	if r.Valid != Invalid || !ok {
		return Proof{}, false
	}
	p := Proof{Checker: x.Name(), Minimal: true}
	lo, hi := int64(math.MaxInt64), int64(0)
	for i, s := range h.Sections {
		if s.Key != o.Key || !(s.Owner == o.HolderOwner && s.Enter == o.HeldFrom || s.Owner == o.IntruderOwner && s.Enter == o.Entered) {
			continue
		}
		p.Sections = append(p.Sections, i)
		hi = max(hi, s.Exit)
		for _, f := range []string{"tryLock", "acquire"} {
			g := grantBefore(h, s, f)
			if g >= 0 {
				p.Ops = append(p.Ops, g)
				lo = min(lo, h.Ops[g].Invoke.Time)
			}
		}
	}
	if len(p.Sections) < 2 {
		return Proof{}, false
	}
	slices.Sort(p.Ops)
	p.Faults = faultsDuring(h, min(lo, o.HeldFrom), hi)
	return p, true
}

// grantBefore is the index of the latest granted operation f of section s's owner on its key called before
// it entered, or -1.
func grantBefore(h *history.History, s history.Record, f string) int {
	g := -1
	for i, o := range h.Ops {
		inv := o.Invoke
		if inv.Time > s.Enter {
			break // Ops are in invoke order
		}
		if inv.F == f && inv.Src == "" && inv.Key == s.Key && inv.Owner == s.Owner && o.Outcome() == history.Ok {
			g = i
		}
	}
	return g
}

// Cite is the proof of lost-lock's invalid verdict: the first loss's owner's commands on the key from its
// acknowledged grant to the command that found the lock gone (the renewals between set how long the lease
// surely lasted), the refused acquire that found the key still held where there is one, and the fault
// windows in force meanwhile.
func (c LostLock) Cite(h *history.History, r Result) (Proof, bool) {
	losses, _ := r.Details.([]Loss)
	if r.Valid != Invalid || len(losses) == 0 {
		return Proof{}, false
	}
	l := losses[0]
	p := Proof{Checker: c.Name(), Minimal: true}
	nm := newNames()
	found := false
	for i := range h.Ops {
		inv := &h.Ops[i].Invoke
		if inv.Src != "" || nm.key(inv) != l.Key || !slices.Contains(mutexCommands, inv.F) {
			continue
		}
		mine := nm.owner(inv) == l.Owner && inv.Time >= l.Acquired && inv.Time <= l.Call
		kept := l.KeptBy != "" && nm.owner(inv) == l.KeptBy && inv.F == "acquire" && inv.Time <= l.KeptAt &&
			h.Ops[i].Complete != nil && h.Ops[i].Complete.Time == l.KeptAt
		if mine || kept {
			p.Ops = append(p.Ops, i)
			found = found || mine && inv.Time == l.Call && inv.F == l.F
		}
	}
	if !found {
		return Proof{}, false
	}
	p.Faults = faultsInForce(h, p.Ops)
	return p, true
}

// Cite is the proof of told-of-loss's invalid verdict: the first silence's holder's grant, the other
// owner's grant after it, the holder's interaction answered ok since, and the fault windows in force.
func (c ToldOfLoss) Cite(h *history.History, r Result) (Proof, bool) {
	found, _ := r.Details.([]Silence)
	if r.Valid != Invalid || len(found) == 0 {
		return Proof{}, false
	}
	s := found[0]
	p := Proof{Checker: c.Name(), Minimal: true}
	nm := newNames()
	answered := func(o history.Operation, at int64) bool {
		return o.Outcome() == history.Ok && o.Complete.Time == at
	}
	cited := 0
	for i, o := range h.Ops {
		inv := &h.Ops[i].Invoke
		if inv.Src != "" || nm.key(inv) != s.Key {
			continue
		}
		owner := nm.owner(inv)
		if inv.F == "acquire" && (owner == s.Holder && answered(o, s.Granted) || owner == s.Other && answered(o, s.OtherGranted)) ||
			owner == s.Holder && inv.F == s.F && inv.Time == s.Call {
			p.Ops = append(p.Ops, i)
			cited++
		}
	}
	if cited < 3 {
		return Proof{}, false
	}
	p.Faults = faultsInForce(h, p.Ops)
	return p, true
}
