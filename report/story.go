package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
)

// ViolationKind is what went wrong in a run, as its story tells it: `lockcheck shrink` keeps a smaller
// run only when it fails with the same kind.
type ViolationKind string

// The kinds of violation a story tells. A checker without a kind of its own (fifo, tokens, liveness...)
// gives OtherViolation, and the story's Checker names it.
const (
	NoViolation    ViolationKind = ""
	Overlap        ViolationKind = "overlap"         // two owners inside one key's critical section at once
	OverCapacity   ViolationKind = "over-capacity"   // more holders than permits
	LockLost       ViolationKind = "lost-lock"       // an acknowledged lock gone before its lease could end
	NotTold        ViolationKind = "not-told"        // a holder answered ok after another owner was granted its lock
	NoLegalOrder   ViolationKind = "no-legal-order"  // the library's answers cannot all be true
	OtherViolation ViolationKind = "other-violation" // another promise broken: see Checker
)

// kindOf maps each checker (by its stable name) to the kind of violation it finds.
var kindOf = map[string]ViolationKind{"mutual-exclusion": Overlap, "lost-lock": LockLost, "told-of-loss": NotTold,
	"porcupine": NoLegalOrder}

// leadKinds are the kinds a reader files first, in that order: two owners at once (what the application
// suffered), a lock gone early, a holder not told, answers with no legal order; any other after them.
var leadKinds = []ViolationKind{Overlap, LockLost, NotTold, NoLegalOrder}

// KindOf is the kind of violation a checker finds (OtherViolation for a checker without a kind of its own).
func KindOf(checkerName string) ViolationKind {
	if k, ok := kindOf[checkerName]; ok {
		return k
	}
	return OtherViolation
}

// Rank orders checkers' findings by leadKinds: the story leads with the lowest, and shrink keeps it.
func Rank(c checker.Result) int {
	if i := slices.Index(leadKinds, KindOf(c.Checker)); i >= 0 {
		return i
	}
	return len(leadKinds)
}

// Story is a run in one or two plain sentences, composed once from every checker's findings, the faults
// and the library's answers, with its parts typed: every output (the verdict table, the summary page,
// JUnit, the Action, suite, compare and repro lines) prints Text, and results.json keeps the parts.
// Every time is on the run's clock (Results.ClockText).
type Story struct {
	Kind    ViolationKind `json:"kind,omitempty"`
	Checker string        `json:"checker,omitempty"` // the checker whose finding leads
	Key     string        `json:"key,omitempty"`
	Node    string        `json:"node,omitempty"` // where a lock spans masters
	Owners  []StoryOwner  `json:"owners,omitempty"`
	At      int64         `json:"at_ns,omitempty"`  // when the violation began
	For     int64         `json:"for_ns,omitempty"` // how long two owners were inside together
	Faults  []StoryFault  `json:"faults,omitempty"` // the faults in force between the first grant and the violation
	Told    string        `json:"told,omitempty"`   // what the library told the first owner
	// Agree says how the other checkers' verdicts fit this one, in words ("" when they all agree).
	Agree string `json:"agree,omitempty"`
	// Lease is, for an overlap, which side of the first owner's lease the second owner entered on: within
	// it (the lock let it in early) or past it (the first owner worked on after its lease ended).
	Lease LeaseSide `json:"lease,omitempty"`
	// SetUpBy are the schedule steps (--schedule) that touched the key between the first owner's grant and
	// the violation, other than the second owner's acquire: what set the violation up, each as its line.
	SetUpBy []string `json:"set_up_by,omitempty"`
	// Shortened is set where a re-entry of the first owner had replaced its lease with a shorter one
	// (Redisson's re-entry sets the lease anew) before the second owner entered.
	Shortened bool `json:"shortened,omitempty"`
	// Stopped is set where the unlock of a re-entry with a lease of its own had stopped the watchdog that
	// kept the first owner's outer hold (Redisson's read-write lock: kinds.LeasePerHold), so the hold ran
	// out unrenewed before the second owner entered.
	Stopped bool `json:"watchdog_stopped,omitempty"`
	// Outlived is set where the first owner held on past a fixed lease of its own that nothing had
	// shortened or stopped: the application's hold outlasted the lease it asked for.
	Outlived bool `json:"outlived,omitempty"`
	// GaveUp is set where the first owner's watchdog renewed no more after a renewal that got no answer,
	// though it had renewed every period before and the hold went on: the watchdog gave up (Redisson
	// before 3.44, #3194), where a slow link's renewals are still in flight or answered.
	GaveUp bool `json:"watchdog_gave_up,omitempty"`
	// Late is set where the first owner's grant came back after the fixed lease it asked for could have
	// ended (a reply held back by a slow link, a stalled client): the lock may have granted it before the
	// second owner, whose grant came back first, and let the second in when that lease ran out. The first
	// owner entered past its own lease (Outlived too); a lock that subtracts the time a grant took from its
	// lease, as Redlock's validity time does, would have told it so.
	Late bool   `json:"late_grant,omitempty"`
	Text string `json:"text"`
	// leaseEnd is, for an overlap, the earliest the first holder's own lease could end (its granting
	// call plus the lease it asked for; 0: no fixed lease): an intruder before it was let in early.
	leaseEnd int64
}

// LeaseSide is where a violation fell against the first owner's lease.
type LeaseSide string

// The sides of a lease.
const (
	WithinLease LeaseSide = "within" // the promise a lease lock makes was broken
	PastLease   LeaseSide = "past"   // the lock kept its promise; the holder outlived its lease
)

// StoryOwner is one owner in a story: who, when it was granted (-1: not in the history), when it entered
// its critical section and when it left (0: not a section's owner).
type StoryOwner struct {
	Name    string `json:"name"`
	Granted int64  `json:"granted_ns"`
	Entered int64  `json:"entered_ns,omitempty"`
	Left    int64  `json:"left_ns,omitempty"`
}

// StoryFault is a fault window a story names.
type StoryFault struct {
	Fault   string   `json:"fault"`
	Targets []string `json:"targets,omitempty"`
	Start   int64    `json:"start_ns"`
	End     int64    `json:"end_ns"`
}

// TellStory composes r's story from its checkers' results (with their typed details, as the checkers
// returned them), its faults and coverage, and the clients' records in h. lib names the library for "what
// it told" (a worker's library, or the lock).
func TellStory(h *history.History, r *Results, lib string) *Story {
	byName := map[string]checker.Result{}
	for _, c := range r.Checkers {
		byName[c.Checker] = c
	}
	invalid := func(name string) bool { c, ok := byName[name]; return ok && c.Valid == checker.Invalid }
	own := h.OnlySrc("")
	s := &Story{}
	lead, ok := leadOf(r.Checkers)
	switch {
	case !ok:
		s.Text = validText(r)
		return s
	case lead.Checker == "mutual-exclusion":
		s.overlap(own, h, lead, byName, lib, r.Faults)
	case lead.Checker == "lost-lock":
		s.lost(lead)
	case lead.Checker == "told-of-loss":
		s.notTold(lead)
	case lead.Checker == "porcupine":
		s.illegal(lead)
	default:
		s.Kind, s.Checker, s.At = OtherViolation, lead.Checker, lead.At
		s.Text = fmt.Sprintf("%s found a violation at %s: %s", lead.Checker, checker.Secs(lead.At), firstSentence(lead.Violation))
	}
	if s.Kind != OtherViolation && s.Kind != Overlap || s.Kind == Overlap && s.Owners == nil {
		s.Faults = faultsBetween(r.Faults, s.from(), max(s.At, s.from()))
		s.Text += s.faultText(r.Faults)
	}
	s.Agree = agreement(s, invalid)
	if s.Agree != "" {
		s.Text += ". " + s.Agree
	}
	s.Text += "."
	return s
}

// leadOf picks the finding a story leads with: an overlap first (what the application suffered), then a
// lost lock, a holder not told, the library's answers, and any other checker's; the earliest otherwise.
func leadOf(cs []checker.Result) (checker.Result, bool) {
	best, found := checker.Result{}, false
	for _, c := range cs {
		if c.Valid != checker.Invalid {
			continue
		}
		r, b := Rank(c), Rank(best)
		if !found || r < b || r == b && c.At < best.At {
			best, found = c, true
		}
	}
	return best, found
}

func (s *Story) from() int64 {
	from := s.At
	for _, o := range s.Owners {
		if o.Granted >= 0 && o.Granted < from {
			from = o.Granted
		}
	}
	return from
}

// overlap tells two owners inside at once (or more than the permits).
// h is the clients' own records; all has the wire's too (what an inner unlock's command set the TTL to).
func (s *Story) overlap(h, all *history.History, c checker.Result, byName map[string]checker.Result, lib string, ws []history.Window) {
	s.Checker, s.At = c.Checker, c.At
	d, _ := c.Details.(map[string]any)
	o, ok := d["first"].(checker.Overlap)
	if !ok { // a semaphore's capacity, or details read back from a file: the checker's own words
		s.Kind = OverCapacity
		if d["permits"] == nil {
			s.Kind = Overlap
		}
		s.Text = "Mutual exclusion broke: " + firstSentence(c.Violation)
		return
	}
	s.Kind, s.Key, s.For = Overlap, o.Key, min(o.HeldTo, o.IntruderOut)-o.Entered
	granted, _, _ := grantBefore(h, o.Holder, o.Key, o.HeldFrom)
	// Its lease as it stood when the intruder entered: a re-entry inside the section may have replaced it.
	_, leaseEnd, shortened := grantBefore(all, o.Holder, o.Key, o.Entered)
	stopped := false
	if leasesOf(h) == kinds.LeasePerHold {
		leaseEnd, shortened, stopped = holdsLease(h, o)
	}
	intruded, _, _ := grantBefore(h, o.Intruder, o.Key, o.Entered)
	first := StoryOwner{Name: o.Holder, Granted: granted, Entered: o.HeldFrom, Left: o.HeldTo}
	second := StoryOwner{Name: o.Intruder, Granted: intruded, Entered: o.Entered,
		Left: o.IntruderOut}
	lateCall, lateLease, late := lateGrant(all, o, granted)
	late = late && byName["porcupine"].Valid != checker.Invalid
	if late { // the lock may have granted the intruder first: it is the first owner, past its own lease
		first, second = second, first
		leaseEnd = lateCall + lateLease // shortened and stopped are the holder's, read only when not late
	}
	s.Owners = []StoryOwner{first, second}
	s.leaseEnd = leaseEnd
	switch {
	case late:
		s.Lease, s.Outlived, s.Late = PastLease, true, true
	case leaseEnd > o.Entered:
		s.Lease = WithinLease
	case leaseEnd > 0 || byName["porcupine"].Valid == checker.Valid: // the model's lease had ended
		s.Lease = PastLease
		s.Shortened = shortened && leaseEnd > 0
		s.Stopped = stopped && leaseEnd > 0
		s.Outlived = leaseEnd > 0 && !shortened && !stopped
		s.GaveUp = gaveUp(h, o, granted)
	}
	s.Faults = faultsBetween(ws, min(s.from(), o.HeldFrom), s.At)
	s.Told = told(h, byName["told-of-loss"], lib, o.Key, first.Name, o.Entered)
	g1, r1 := s.grantText(first)
	g2, r2 := s.grantText(second)
	if r1 == r2 { // both against the same fault the same way: say it once
		s.Text = fmt.Sprintf("Two owners held %s at once for %s, from %s: %s (%s) and %s (%s)", s.keyText(),
			forText(s.For), checker.Secs(o.Entered), first.Name, g1, second.Name, g2)
		if r1 != "" {
			s.Text += ", both " + r1
		}
	} else {
		s.Text = fmt.Sprintf("Two owners held %s at once for %s, from %s: %s (%s, %s) and %s (%s, %s)", s.keyText(),
			forText(s.For), checker.Secs(o.Entered), first.Name, g1, r1, second.Name, g2, r2)
	}
	if len(s.Faults) == 0 {
		s.Text += s.faultText(ws)
	}
	if late {
		s.Text += fmt.Sprintf("; %s asked at %s for a %s lease and was told of its grant at %s, after that lease could have ended: the lock may have granted it first and %s after its lease ran out",
			first.Name, checker.Secs(lateCall), forText(lateLease), checker.Secs(first.Granted), second.Name)
	}
	if s.Told != "" {
		s.Text += "; " + s.Told
	}
	s.SetUpBy = setUpBy(h, ws, o, granted)
	if len(s.SetUpBy) > 0 {
		s.Text += "; set up by the step " + strings.Join(s.SetUpBy, ", and the step ")
	}
}

// lateGrant is, for an overlap, the call of the command that granted the intruder its section and the
// fixed lease it asked for, where that lease could have ended before the holder's grant came back (at
// holderGranted): then an order exists in which the lock granted the intruder first and the holder only
// after the intruder's lease ran out, the intruder learning of its grant later still. The granting command
// is the last answered acquire of the intruder's thread (or, on the wire, its client) inside its tryLock;
// a tryLock without one is its own only when it made one attempt (no wait). A re-entry or a watchdog's
// hold (no lease) is never late.
func lateGrant(h *history.History, o checker.Overlap, holderGranted int64) (call, lease int64, ok bool) {
	var try *history.Operation
	for i := range h.Ops {
		op := &h.Ops[i]
		c := op.Invoke
		if c.Time > o.Entered {
			break
		}
		if c.Src == "" && c.F == "tryLock" && c.Key == o.Key && c.ThreadName() == o.Intruder && op.Outcome() == history.Ok &&
			op.Complete.Time <= o.Entered {
			try = op
		}
	}
	if try == nil || try.Invoke.Args["nested"] != 0 || try.Invoke.Args["lease_ms"] <= 0 {
		return 0, 0, false
	}
	lease, call = try.Invoke.Args["lease_ms"]*int64(time.Millisecond), -1
	if try.Invoke.Args["wait_ms"] == 0 {
		call = try.Invoke.Time
	}
	for _, op := range h.Ops {
		c := op.Invoke
		if c.F != "acquire" || c.Key != o.Key || c.Time < try.Invoke.Time || op.Outcome() != history.Ok ||
			op.Complete.Time > try.Complete.Time {
			continue
		}
		if c.Src == "" && c.ThreadName() == o.Intruder || c.Src == history.WireSrc && c.Client == try.Invoke.Client {
			call = max(call, c.Time)
		}
	}
	return call, lease, call >= 0 && call+lease <= holderGranted
}

// setUpBy are the lines of the schedule steps that touched the overlap's key (or started a fault) after
// the first owner's grant and up to the second owner's entry, the second owner's own acquire aside.
func setUpBy(h *history.History, ws []history.Window, o checker.Overlap, granted int64) []string {
	var out []string
	for _, op := range h.Ops {
		c, step := op.Invoke, h.StepOf(op)
		if step == "" || c.Key != o.Key || c.Time <= granted || c.Time > o.Entered ||
			c.ThreadName() == o.Intruder && c.F == "tryLock" {
			continue
		}
		st := StepOutcome{Step: step, Client: c.ThreadName(), At: c.Time, Done: -1, LeaseMs: c.Args["lease_ms"]}
		if op.Complete != nil {
			st.Done = op.Complete.Time
		}
		_, t := stepText(op, st)
		out = append(out, t)
	}
	for _, w := range ws {
		if w.Step != "" && w.Start > granted && w.Start <= o.Entered {
			out = append(out, fmt.Sprintf("%s: %s at %s", w.Step, StoryFault{Fault: w.Kind, Targets: w.Targets}.name(), checker.Secs(w.Start)))
		}
	}
	return out
}

// lost tells an acknowledged lock found gone before its lease could end.
func (s *Story) lost(c checker.Result) {
	l, ok := firstOf[checker.Loss](s, c, LockLost, "A lock was lost: ")
	if !ok {
		return
	}
	s.Key, s.Node = checker.SplitKey(l.Key)
	s.At = l.Return
	s.Owners = []StoryOwner{{Name: l.Client, Granted: l.Acquired, Left: l.Return}}
	s.Text = fmt.Sprintf("%s's lock on %s, acquired at %s, was gone by %s (its %s was refused), before its lease could end at %s",
		l.Client, s.keyText(), checker.Secs(l.Acquired), checker.Secs(l.Return), l.F, checker.Secs(l.LeaseFrom))
	switch {
	case l.KeptBy != "":
		s.Text += "; the key was still held after that: the client forgot the owner it was granted under"
	case l.Gone.By == checker.GoneOther:
		s.Text += fmt.Sprintf("; %s's %s at %s may have deleted it", l.Gone.Owner, l.Gone.F, checker.Secs(l.Gone.At))
	case l.Gone.By == checker.GoneOwn:
		s.Text += fmt.Sprintf("; its own %s at %s was the last command on it", l.Gone.F, checker.Secs(l.Gone.At))
	default:
		s.Text += "; no recorded command removed it: the server lost it"
	}
}

// firstOf sets the story's kind and checker and returns the checker's first finding from its typed
// details; where they are not of that type (details read back from a file) the story quotes the checker's
// own words after head, and ok is false.
func firstOf[T any](s *Story, c checker.Result, kind ViolationKind, head string) (first T, ok bool) {
	s.Kind, s.Checker, s.At = kind, c.Checker, c.At
	xs, ok := c.Details.([]T)
	if !ok || len(xs) == 0 {
		s.Text = head + firstSentence(c.Violation)
		return first, false
	}
	return xs[0], true
}

// notTold tells a holder answered ok after another owner was granted its lock.
func (s *Story) notTold(c checker.Result) {
	x, ok := firstOf[checker.Silence](s, c, NotTold, "A holder was not told it lost its lock: ")
	if !ok {
		return
	}
	s.Key, s.Node = checker.SplitKey(x.Key)
	s.Owners = []StoryOwner{{Name: x.Holder, Granted: x.Granted}, {Name: x.Other, Granted: x.OtherGranted}}
	s.Text = fmt.Sprintf("%s lost %s (granted at %s) to %s (granted at %s) and was not told: its %s at %s was answered ok",
		x.Holder, s.keyText(), checker.Secs(x.Granted), x.Other, checker.Secs(x.OtherGranted), x.F, checker.Secs(x.Call))
}

// illegal tells porcupine's finding: a command no legal order can place.
func (s *Story) illegal(c checker.Result) {
	s.Kind, s.Checker, s.At = NoLegalOrder, c.Checker, c.At
	d, _ := c.Details.(map[string]any)
	cu, ok := d["culprit"].(checker.Culprit)
	if !ok {
		s.Text = "The library's answers cannot all be true: " + firstSentence(c.Violation)
		return
	}
	s.Key, s.Node = cu.Key, cu.Node
	s.Owners = []StoryOwner{{Name: cu.Thread, Granted: -1}}
	what := cu.What // the model's words name the thread: "c7/1 acquire → ok"
	if !strings.HasPrefix(what, cu.Thread+" ") {
		what = cu.Thread + " " + what
	}
	s.Text = fmt.Sprintf("The library's answers on %s cannot all be true: %s, called at %s, fits no legal order of the commands before it",
		s.keyText(), what, checker.Secs(cu.Call))
}

// keyText names the key as every output does: "lock-1", or "lock-1 on n1".
func (s *Story) keyText() string {
	if s.Node == "" {
		return s.Key
	}
	return s.Key + " on " + s.Node
}

// faultText names the faults in force between the first grant and the violation, or none.
func (s *Story) faultText(all []history.Window) string {
	if len(all) == 0 {
		return ", with no fault in the run"
	}
	if len(s.Faults) == 0 {
		return ", with no fault in force from the first grant to the violation"
	}
	var fs []string
	for _, f := range s.Faults {
		fs = append(fs, fmt.Sprintf("%s %s–%s", f.name(), checker.Secs(f.Start), checker.Secs(f.End)))
	}
	if len(s.Faults) == 1 && s.Faults[0].End < s.from() {
		return ", after the fault " + fs[0]
	}
	return ", with the fault " + strings.Join(fs, ", ") + " in force"
}

// faultsBetween are the windows that were in force at some moment of [from, to], or else the last one
// that ended before from: what the run did to the lock just before.
func faultsBetween(ws []history.Window, from, to int64) []StoryFault {
	var out []StoryFault
	last := -1
	for i, w := range ws {
		if w.Start <= to && w.End >= from {
			out = append(out, StoryFault{Fault: w.Kind, Targets: w.Targets, Start: w.Start, End: w.End})
		}
		if w.End < from && (last < 0 || w.End > ws[last].End) {
			last = i
		}
	}
	if len(out) == 0 && last >= 0 {
		w := ws[last]
		out = append(out, StoryFault{Fault: w.Kind, Targets: w.Targets, Start: w.Start, End: w.End})
	}
	return out
}

// agreement says in words how the other checkers' verdicts fit the leading finding.
func agreement(s *Story, invalid func(string) bool) string {
	switch s.Kind {
	case Overlap:
		if invalid("porcupine") {
			break
		}
		if len(s.Owners) == 2 && s.leaseEnd > s.Owners[1].Entered {
			// The model is lenient where it cannot follow each hold's own lease (a writer's own reads, a
			// worker's watchdog): the answers fit it, but the holder's own lease had not run out.
			return fmt.Sprintf("The library's answers alone have a legal order in the lock's model, yet %s entered %s before %s's own lease could end: the lock let it in early",
				s.Owners[1].Name, checker.Secs(s.leaseEnd-s.Owners[1].Entered), s.Owners[0].Name)
		}
		if s.Stopped {
			return "The library's answers alone have a legal order: the overlap came after a lease the lock's model says had ended, unrenewed since a re-entry's unlock stopped the watchdog of the hold it joined, so the first holder worked on past its lease"
		}
		if s.GaveUp {
			return "The library's answers alone have a legal order: the overlap came after a lease the lock's model says had ended, unrenewed since its watchdog gave up at a renewal that got no answer, so the first holder worked on past its lease"
		}
		return "The library's answers alone have a legal order: the overlap came after a lease the lock's model says had ended, so the first holder worked on past its lease"
	case LockLost:
		return "No two owners overlapped yet: the lock was lost silently, and any other client could have taken it"
	case NotTold:
		return "No two owners' critical sections overlapped, but the holder went on believing it held the lock"
	case NoLegalOrder:
		var also []string
		if !invalid("mutual-exclusion") {
			also = append(also, "no two owners overlapped")
		}
		if !invalid("lost-lock") {
			also = append(also, "no acknowledged lock was found gone")
		}
		if len(also) == 2 {
			// A refusal the library answered may have come from Redis or from a lock the library keeps in its own
			// process in front of Redis (a JVM-local lock): the history cannot tell which, so the sentence says both.
			return "No two owners overlapped and no acknowledged lock was found gone yet: the library's answers fit no order of one lock's " +
				"state in Redis (a refused acquire or release may have been refused by Redis or by a lock inside the library's process)"
		}
	}
	return ""
}

// grantBefore is when the workload's grant of key to owner (client/thread, as sections name it) was
// answered, latest before t (-1 when the history has none), and the earliest that grant's lease could end:
// its hold's call plus the lease it asked for, or a re-entry's since, where that is sooner (Redisson's
// re-entry sets the lease anew; a renewal only lengthens it); 0 when it asked for none (a watchdog keeps it).
// shortened is set when a re-entry made that end sooner.
func grantBefore(h *history.History, owner, key string, t int64) (granted, leaseEnd int64, shortened bool) {
	granted = -1
	var rels []history.Operation // the owner's client's answered releases of key, gathered at its first inner unlock
	for _, o := range h.Ops {
		if o.Invoke.Time > t {
			break
		}
		if o.Invoke.F == "unlock" && o.Invoke.Args["nested"] == 1 && leaseEnd > 0 && o.Invoke.Key == key &&
			o.Invoke.ThreadName() == owner && o.Outcome() == history.Ok && o.Complete.Time <= t {
			if rels == nil {
				rels = releasesOf(h, o.Invoke.Client, key)
			}
			// An inner unlock that leaves the hold sets its TTL too (RLock's partial unlock PEXPIREs the lock to
			// its internalLockLeaseTime, the watchdog's timeout on a fresh lock object), which may be shorter.
			if at, l := unlockPexpire(rels, o); l > 0 && at+l < leaseEnd {
				leaseEnd, shortened = at+l, true
			}
			continue
		}
		if o.Invoke.F != "tryLock" || o.Invoke.Key != key || o.Invoke.ThreadName() != owner || o.Outcome() != history.Ok ||
			o.Complete.Time > t {
			continue
		}
		granted = o.Complete.Time
		l := o.Invoke.Args["lease_ms"] * int64(time.Millisecond)
		switch {
		case o.Invoke.Args["nested"] == 0 && l > 0:
			leaseEnd = o.Invoke.Time + l
		case o.Invoke.Args["nested"] == 0:
			leaseEnd = 0
		case leaseEnd > 0 && l > 0:
			shortened = shortened || o.Invoke.Time+l < leaseEnd
			leaseEnd = min(leaseEnd, o.Invoke.Time+l)
		case l > 0 && granted >= 0: // a re-entry with a lease inside a watchdog's hold: its PEXPIRE replaced the
			// watchdog's TTL until the next renewal (Redisson's re-entry), so the hold's lease is now the re-entry's;
			// and a renewal right after it sets the watchdog's own lease, which may be shorter (real Redisson
			// renews a re-entered hold to its watchdog lease, and the re-entry's unlock then stops the watchdog)
			leaseEnd, shortened = o.Invoke.Time+l, true
			if w := watchdogOf(h); w > 0 {
				leaseEnd = min(leaseEnd, o.Invoke.Time+w)
			}
		}
		if o.Invoke.Args["nested"] == 0 {
			shortened = false
		}
	}
	return granted, leaseEnd, shortened
}

// releasesOf are client's answered releases of key, wire records and its own, in the history's order: one
// pass over the history, not one per inner unlock.
func releasesOf(h *history.History, client, key string) []history.Operation {
	out := []history.Operation{}
	for _, o := range h.Ops {
		if c := o.Invoke; c.F == "release" && c.Client == client && c.Key == key && o.Outcome() == history.Ok {
			out = append(out, o)
		}
	}
	return out
}

// unlockPexpire is the TTL an inner unlock's lock command set and when it was sent: the release under it
// (of rels, its client's answered releases of its key) from the wire where it was recorded (what was
// sent), else the client's own record; 0 where neither says a lease.
func unlockPexpire(rels []history.Operation, u history.Operation) (at, lease int64) {
	for _, wire := range []bool{true, false} {
		for _, o := range rels {
			c := o.Invoke
			if (c.Src == history.WireSrc) != wire || c.Time < u.Invoke.Time || c.Time > u.Complete.Time {
				continue
			}
			if c.Src != history.WireSrc && c.Thread != u.Invoke.Thread {
				continue
			}
			if l := c.Args["lease_ms"]; l > 0 {
				return c.Time, l * int64(time.Millisecond)
			}
		}
	}
	return 0, 0
}

// watchdogOf is the run's watchdog lease (0 where the history does not say it).
func watchdogOf(h *history.History) int64 {
	if h.Run == nil {
		return 0
	}
	return int64(h.Run.Options.Watchdog)
}

// leasesOf is the lease rule of the run's lock family (a history without one: RLock's).
func leasesOf(h *history.History) kinds.Leases {
	if h.Run == nil {
		return kinds.ReentrySetsLease
	}
	f, err := kinds.FamilyNamed(h.Run.Checks.Family)
	if err != nil {
		return kinds.ReentrySetsLease
	}
	return f.Leases
}

// holdsLease is grantBefore's lease for a family whose holds keep their own leases (kinds.LeasePerHold):
// the earliest the overlap's first owner's hold could end when the second owner entered, from the owner's
// grants and unlocks of the key since its section's grant; 0 where only a running watchdog keeps it. A read
// section lives as long as its longest hold that was not released; a re-entry never shortens it.
// shortened: a write re-entry's unlock set the lock's TTL to its handle's last lease, sooner than it would
// have ended. stopped: an unlock answered ok took the thread's watchdog count to 0 (only acquires on the
// watchdog add to it, every unlock takes one off) while a hold the watchdog kept remained: one on the
// watchdog, or one with a longer lease of its own that the renewals had cut to the watchdog's (Redisson
// renews every read hold of the thread, and the write lock's whole TTL, to exactly the watchdog's lease);
// it runs out unrenewed, no sooner than that unlock's call.
func holdsLease(h *history.History, o checker.Overlap) (leaseEnd int64, shortened, stopped bool) {
	write := false
	for _, c := range h.Sections {
		if (history.Call{Client: c.Client, Thread: c.Thread}).ThreadName() == o.Holder && c.Key == o.Key && c.Enter == o.HeldFrom {
			write = c.F == "write"
		}
	}
	read := readHolds(h, o)
	type hold struct {
		end      int64 // the earliest its lease could end; 0 while a running watchdog keeps it
		read     bool  // a read hold (else the write half's)
		renewed  bool  // the watchdog ran while it was held: a renewal sets every hold's TTL to the watchdog's lease
		stoppedH bool  // its end is the stopped watchdog's
	}
	var (
		holds     []hold
		watchdog  [2]int // the thread's watchdog counts, write and read (Redisson's LockTask and ReadLockTask)
		lastLease int64  // the lease of the write handle's last acquire with one (its unlock's PEXPIRE)
	)
	idx := func(r bool) int {
		if r {
			return 1
		}
		return 0
	}
	for _, i := range holderOps(h, o) {
		op := h.Ops[i]
		c := op.Invoke
		l := c.Args["lease_ms"] * int64(time.Millisecond)
		switch {
		case c.F == "tryLock" && op.Outcome() == history.Ok && op.Complete.Time <= o.Entered:
			if c.Args["nested"] == 0 {
				holds, watchdog, lastLease, shortened = nil, [2]int{}, 0, false
			}
			r, known := read[i]
			if !known {
				r = !write
			}
			hd := hold{read: r, renewed: watchdog[0]+watchdog[1] > 0}
			if l > 0 {
				hd.end = c.Time + l
				if !r { // the read handle's lease is its own object's: the write unlock never uses it
					lastLease = l
				}
			} else {
				watchdog[idx(r)]++
				for j := range holds {
					holds[j].renewed = true
				}
			}
			holds = append(holds, hd)
		case c.F == "unlock" && c.Args["nested"] == 1 && len(holds) > 1:
			gone := holds[len(holds)-1]
			holds = holds[:len(holds)-1]
			// Redisson takes a count off once the unlock is answered, whatever it answered (a read unlock the
			// write half's too: RedissonReadLock's cancelExpirationRenewal calls its parent's, 4.7.0); only an
			// unlock that found the hold (ok) shows the holds left alive then, their lapse the stopped
			// renewal's: no sooner than that unlock's call, no later than their own lease where no renewal cut it.
			answered := op.Complete != nil && op.Complete.Time < o.Entered // an answer as or after it entered counts after
			if answered && watchdog[idx(gone.read)] > 0 {
				watchdog[idx(gone.read)]--
			}
			if answered && gone.read && watchdog[0] > 0 {
				watchdog[0]--
			}
			ok := op.Outcome() == history.Ok && op.Complete.Time <= o.Entered
			if ok {
				for j, hd := range holds {
					if hd.end == 0 && watchdog[idx(hd.read)] == 0 || hd.renewed && hd.end > c.Time && watchdog == [2]int{} {
						holds[j] = hold{end: c.Time, read: hd.read, stoppedH: true}
					}
				}
			}
			if ok && write && !gone.read && lastLease > 0 { // its PEXPIRE sets the lock's TTL, whatever the holds had left
				for j, hd := range holds {
					if hd.end != 0 {
						shortened = shortened || hd.end > c.Time+lastLease
						holds[j] = hold{end: c.Time + lastLease, read: hd.read, renewed: hd.renewed}
					}
				}
				lastLease = 0 // a successful unlock resets the handle's lease to the watchdog's
			}
		}
	}
	for _, hd := range holds {
		if hd.end == 0 || !hd.read && hd.renewed {
			// a running watchdog keeps it as long as it renews; a write hold it renewed has no end of its own
			// either (the renewals set the write lock's whole TTL to the watchdog's lease, whatever lease the
			// hold had, and where they stopped landing is porcupine's to say)
			continue
		}
		if hd.end > leaseEnd {
			leaseEnd, stopped = hd.end, hd.stoppedH
		}
	}
	return leaseEnd, shortened && !stopped, stopped
}

// holderOps are the indices in h.Ops of the overlap's first owner's operations on its key, called up to
// the second owner's entry.
func holderOps(h *history.History, o checker.Overlap) []int {
	var out []int
	for i, op := range h.Ops {
		c := op.Invoke
		if c.Time > o.Entered {
			break
		}
		if c.Key == o.Key && c.ThreadName() == o.Holder {
			out = append(out, i)
		}
	}
	return out
}

// readHolds says, for each of the overlap's first owner's grants on its key (by index in h.Ops), whether it
// took the read half: the lock command under the tryLock says so (args read), the tryLock does not.
func readHolds(h *history.History, o checker.Overlap) map[int]bool {
	out := map[int]bool{}
	last, lastEnd := -1, int64(0)
	for _, i := range holderOps(h, o) {
		op := h.Ops[i]
		c := op.Invoke
		switch {
		case c.F == "tryLock" && op.Complete != nil:
			last, lastEnd = i, op.Complete.Time
		case c.F == "acquire" && last >= 0 && c.Time <= lastEnd:
			if _, seen := out[last]; !seen {
				out[last] = c.Args["read"] == 1
			}
		}
	}
	return out
}

// forText is how long an overlap lasted: "0.000s" would read as none, so under a millisecond says so.
func forText(ns int64) string {
	if ns < int64(time.Millisecond) {
		return "under a millisecond"
	}
	return checker.Secs(ns)
}

// gaveUp says whether the overlap's first owner's renewals stopped at one that got no answer: its last
// renewal of the key before the intruder entered ended without an ok (a lost reply, a timeout) before
// then, and the intruder entered more than a renewal period after that renewal was sent (the shortest gap
// between the hold's renewals, or from its grant to the first). A watchdog that renews again next period
// sends another inside that time; a slow link's renewal is still in flight or answered.
func gaveUp(h *history.History, o checker.Overlap, granted int64) bool {
	var calls []int64
	var last *history.Operation
	for i := range h.Ops {
		op := &h.Ops[i]
		c := op.Invoke
		if c.F != "renew" || c.Key != o.Key || c.ThreadName() != o.Holder || c.Time < granted || c.Time > o.Entered {
			continue
		}
		calls, last = append(calls, c.Time), op
	}
	if last == nil || last.Complete == nil || last.Complete.Type == history.Ok || last.Complete.Time > o.Entered {
		return false
	}
	period := calls[0] - granted
	for i := 1; i < len(calls); i++ {
		period = min(period, calls[i]-calls[i-1])
	}
	return period > 0 && o.Entered-last.Invoke.Time > period
}

// grantText says when an owner was granted (or entered, where its grant is not recorded), and where that
// fell against the story's first fault ("" without one).
func (s *Story) grantText(o StoryOwner) (when, fault string) {
	at, when := o.Granted, "granted at "+checker.Secs(o.Granted)
	if at < 0 { // a grant the clients' records do not show: its section's entry
		at, when = o.Entered, "inside from "+checker.Secs(o.Entered)
	}
	if len(s.Faults) == 0 {
		return when, ""
	}
	f := s.Faults[0]
	switch {
	case at < f.Start:
		return when, fmt.Sprintf("before the %s at %s", f.name(), checker.Secs(f.Start))
	case at <= f.End:
		return when, fmt.Sprintf("during the %s (%s–%s)", f.name(), checker.Secs(f.Start), checker.Secs(f.End))
	}
	return when, fmt.Sprintf("after the %s at %s–%s", f.name(), checker.Secs(f.Start), checker.Secs(f.End))
}

// name is the fault and the clients or nodes it acted on ("client-pause of c2"); a failover's shard and
// kept clients ("shard:0 keep:c3") stay in the parts, out of the sentence.
func (f StoryFault) name() string {
	var on []string
	for _, t := range f.Targets {
		if !strings.Contains(t, ":") {
			on = append(on, t)
		}
	}
	if len(on) == 0 {
		return f.Fault
	}
	return f.Fault + " of " + strings.Join(on, " ")
}

// told says what the library told the first holder of an overlap (holder, on key) after the second was
// let in (at entered).
func told(h *history.History, toldOfLoss checker.Result, lib, key, holder string, entered int64) string {
	if ss, ok := toldOfLoss.Details.([]checker.Silence); ok {
		for _, x := range ss {
			if x.Holder == holder {
				return fmt.Sprintf("%s answered %s's %s ok at %s: it was not told", lib, x.Holder, x.F, checker.Secs(x.Return))
			}
		}
	}
	for _, op := range h.Ops {
		if op.Invoke.Time < entered || op.Invoke.Key != key || op.Invoke.ThreadName() != holder || op.Invoke.F == "tryLock" {
			continue
		}
		switch op.Outcome() {
		case history.Fail:
			return fmt.Sprintf("%s learned it at %s, when its %s was refused", holder, checker.Secs(op.Complete.Time), op.Invoke.F)
		case history.Ok:
			return fmt.Sprintf("%s answered %s's %s ok at %s: it was not told", lib, holder, op.Invoke.F, checker.Secs(op.Complete.Time))
		}
		return fmt.Sprintf("%s's %s at %s got no answer", holder, op.Invoke.F, checker.Secs(op.Invoke.Time))
	}
	return fmt.Sprintf("%s told %s nothing", lib, holder)
}

// validText tells what a run without a violation exercised: its faults that touched a holder, the grants
// during faults.
func validText(r *Results) string {
	head := "No violation"
	if r.Valid != checker.Valid {
		head = "No violation found, but the verdict is " + r.Valid.String()
	}
	var sections string
	for _, c := range r.Checkers {
		if c.Checker == "mutual-exclusion" && c.Valid == checker.Valid {
			sections = ": " + c.Summary
		}
	}
	if len(r.Faults) == 0 {
		return head + sections + ", with no fault in the run."
	}
	touched, holders, grants := 0, 0, 0
	for _, c := range r.Coverage {
		if c.Touched {
			touched++
		}
		if len(c.Holders) > 0 || len(c.Frozen) > 0 {
			holders++
		}
		grants += c.Grants
	}
	return fmt.Sprintf("%s%s; of %d fault windows, %d touched lock operations and %d a holder, with %d grants during faults.",
		head, sections, len(r.Faults), touched, holders, grants)
}

// firstSentence is a checker's explanation cut at its first clause, for a story that must stay short.
func firstSentence(s string) string {
	if i := strings.Index(s, "; "); i > 0 {
		return s[:i]
	}
	return s
}
