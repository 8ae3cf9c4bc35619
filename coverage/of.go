package coverage

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/network/wire"
)

// Of is the run's coverage: every lock command the models judge (the same records, converted as
// checker.EachCommand converts them), as a transition of its family's abstract lock.
func Of(h *history.History) *Map {
	m := NewMap()
	walk(h, func(_ *cmd, t Transition) { m.add(t, 1) })
	return m
}

// cmd is one judged command with what the walk needs besides the model's view of it. A million of them
// are held at once: small, in one slice.
type cmd struct {
	in      command
	out     checker.Reply
	raw     string // the record's key, without its node: what an application's acquire names
	who     string // client/thread: the caller, as the application's records name it
	at      int64  // when it is placed: its return, or its call when its outcome is unknown
	attempt int64  // earlier sends of this unlock (its request id), 0 for a first send
	script  string // on the wire: shape→reply class
	placed  bool   // placed early, as what makes a later command legal (place)
	api     bool   // a worker's call to its library, which may wait long before it takes effect
}

// command is what the replay reads of the model's checker.Command.
type command struct {
	Key, Owner, F                 string
	Lease, Call, Return, N        int64
	Read, Watchdog, NoCount, Fair bool
}

func commandOf(c checker.Command) command {
	return command{Key: c.Key, Owner: c.Owner, F: c.F, Lease: c.Lease, Call: c.Call, Return: c.Return, N: c.N,
		Read: c.Read, Watchdog: c.Watchdog, NoCount: c.NoCount, Fair: c.Fair}
}

// now is the time up to which c surely finds the leases that ran out gone: its call, or a library's
// acquire's return (it may have waited seconds for a permit, and took effect at its end).
func (c *cmd) now() int64 {
	if c.api && c.in.F == "acquire" && c.at != math.MaxInt64 {
		return c.at
	}
	return c.in.Call
}

// event kinds, in the order they are taken at one instant: what returned is no longer in flight, a fault
// that starts then is in force, a command is placed, then what is called then starts, then faults stop.
const (
	evEnd = iota
	evFaultStart
	evPlace
	evInvoke
	evCall
	evFaultStop
)

// event is one thing that happens at t, small so that a million of them sort fast: idx is the command's
// (evPlace, evCall), the application's acquire's (evInvoke, evEnd) or the fault window's index.
type event struct {
	t    int64
	kind int32
	idx  int32
}

// waiter is an application's acquire: while it is in flight its caller waits on the key.
type waiter struct{ key, who string }

// walk replays h's judged commands through its family's abstract lock, in the order they are placed,
// and calls yield with each command and its transition. One sort of the events and one pass: linear in
// the history but for the sort (and a look back over the few commands in flight where a placement
// contradicts the model: see place).
func walk(h *history.History, yield func(c *cmd, t Transition)) {
	fam := familyOf(h)
	who := callers{}
	cmds := commandsOf(h, fam, who)
	windows := h.Windows()
	var waiters []waiter
	for i := range h.Ops { // the applications' acquires: who is waiting (Src "": the callers' own records)
		if o := &h.Ops[i]; o.Invoke.Src == "" && intents[o.Invoke.F] {
			waiters = append(waiters, waiter{o.Invoke.Key, who.of(&o.Invoke)})
		}
	}
	evs := make([]event, 0, 2*len(cmds)+2*len(waiters)+2*len(windows))
	for i := range cmds {
		c := &cmds[i]
		evs = append(evs, event{c.at, evPlace, int32(i)}, event{c.in.Call, evCall, int32(i)})
	}
	n := 0
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Invoke.Src == "" && intents[o.Invoke.F] {
			evs = append(evs, event{o.Invoke.Time, evInvoke, int32(n)})
			if o.Complete != nil {
				evs = append(evs, event{o.Complete.Time, evEnd, int32(n)})
			}
			n++
		}
	}
	for i, w := range windows {
		evs = append(evs, event{w.Start, evFaultStart, int32(i)}, event{w.End, evFaultStop, int32(i)})
	}
	slices.SortFunc(evs, func(a, b event) int {
		switch {
		case a.t != b.t:
			return cmp.Compare(a.t, b.t)
		case a.kind != b.kind:
			return cmp.Compare(a.kind, b.kind)
		}
		return cmp.Compare(a.idx, b.idx)
	})
	r := replay{fam: fam, keys: map[string]*keyState{}, flying: map[string]map[string]int{},
		faults: map[string]int{}, permits: permitsOf(h), legal: legalSet(fam.name), yield: yield}
	for _, e := range evs {
		switch e.kind {
		case evInvoke:
			r.fly(waiters[e.idx].key, waiters[e.idx].who, 1)
		case evEnd:
			r.fly(waiters[e.idx].key, waiters[e.idx].who, -1)
		case evFaultStart:
			r.faults[windows[e.idx].Kind]++
			r.fault = ""
		case evFaultStop:
			r.faults[windows[e.idx].Kind]--
			r.fault = ""
		case evCall:
			if c := &cmds[e.idx]; c.at > c.in.Call && c.out.Outcome == checker.Applied {
				s := r.state(c.in.Key)
				if len(s.pending) == maxPending { // the oldest can no longer be placed early: bounded work per command
					s.pending = s.pending[:copy(s.pending, s.pending[1:])]
				}
				s.pending = append(s.pending, c)
			}
		case evPlace:
			r.place(&cmds[e.idx])
		}
	}
}

// intents are the applications' calls that wait for a hold: while one is in flight its caller is waiting.
var intents = map[string]bool{"tryLock": true, "lock": true, "tryAcquire": true, "acquire": true,
	"lcp_acquire_permit": true, "lcp_acquire_permits": true}

// identity is the caller a record names: client/thread (a read-write lock's write half is its thread's).
func identity(c *history.Call) string {
	return c.Client + "/" + itoa(c.Thread)
}

func itoa(n int64) string {
	if n >= 0 && n < 10 {
		return string(rune('0' + n))
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// commandsOf converts the commands the models judge: the judged records (kinds.Judged: the wire's when
// complete, else the clients'), and a worker's API calls on the keys those leave out.
func commandsOf(h *history.History, fam family, who callers) []cmd {
	j := kinds.Judged(h)
	n := 0
	for i := range j.Ops {
		if slices.Contains(fam.commands, j.Ops[i].Invoke.F) {
			n++
		}
	}
	out := make([]cmd, 0, n) // once: an upper bound (a command surely not run is left out)
	seen := map[string]bool{}
	checker.EachCommand(j, fam.commands, func(i int, in checker.Command, o checker.Reply) {
		seen[in.Key] = true
		if in.SplitRefusal(o) { // a Redlock's split vote: legal in every state and
			return // changing none (checker.Command.Split), so no transition of the one-lock model
		}
		out = append(out, newCmd(&j.Ops[i], in, o, who))
	})
	api := h.OnlySrc("")
	var grants map[int]checker.Outcome // made on the first acquire_permit
	checker.EachCommand(api, apiFs, func(i int, in checker.Command, o checker.Reply) {
		if seen[in.Key] {
			return
		}
		f := in.F
		in.F = checker.APICommand(f)
		switch {
		case f == history.UnseenPrefix+"acquire_permit" && o.Outcome == checker.Applied:
			if grants == nil {
				grants = checker.PermitGrants(api)
			}
			o.Outcome = grants[i]
		case checker.APIYesNo(f) && o.Outcome == checker.Applied && o.Value == 0:
			o.Outcome = checker.Refused
		}
		c := newCmd(&api.Ops[i], in, o, who)
		c.api = true
		out = append(out, c)
	})
	return out
}

// callers names each client thread once (identity), so that a million commands share a few strings.
type callers map[struct {
	client string
	thread int64
}]string

func (cs callers) of(c *history.Call) string {
	k := struct {
		client string
		thread int64
	}{c.Client, c.Thread}
	s, ok := cs[k]
	if !ok {
		s = identity(c)
		cs[k] = s
	}
	return s
}

// apiFs are a worker's API requests the models read (checker.APICommand).
var apiFs = func() []string {
	var fs []string
	for _, f := range []string{"set_permits", "acquire_permits", "release_permits", "acquire_permit", "release_permit",
		"available", "set_count", "count_down", "await"} {
		fs = append(fs, history.UnseenPrefix+f)
	}
	return fs
}()

func newCmd(o *history.Operation, in checker.Command, out checker.Reply, who callers) cmd {
	c := cmd{in: commandOf(in), out: out, raw: o.Invoke.Key, who: who.of(&o.Invoke), at: in.Call,
		attempt: o.Invoke.Args["attempt"]}
	if out.Outcome != checker.Unsure && in.Return != math.MaxInt64 {
		c.at = in.Return // placed at its return (see place); an unknown outcome, at its call
	}
	if o.Invoke.Src == history.WireSrc {
		c.script = scriptOf(o)
	}
	return c
}

// scriptOf names the wire's script (its shape, as network/wire names it) and the class of its reply.
func scriptOf(o *history.Operation) string {
	inv := &o.Invoke
	a := inv.Args
	ok := o.Complete != nil && o.Complete.Type == history.Ok
	var shape string
	switch inv.F {
	case "acquire":
		switch {
		case a["read"] == 1:
			shape = wire.RWReadAcquire.String()
		case a["fair"] == 1:
			shape = wire.FairAcquireWait.String()
		case ok && o.Complete.Value != nil:
			shape = wire.FencedAcquire.String()
		case o.Complete != nil && o.Complete.Type == history.Fail && o.Complete.Value != nil && *o.Complete.Value == -2:
			shape = "set-nx" // a plain SET NX PX, refused (granted, its OK reads as RLock's nil: acquire→nil)
		default:
			shape = wire.RLockAcquire.String()
		}
	case "release":
		_, lease := a["lease_ms"]
		switch {
		case a["read"] == 1:
			shape = wire.RWReadRelease.String()
		case a["fair"] == 1:
			shape = wire.FairRelease.String()
		case !lease:
			shape = wire.CompareDelete.String()
		default:
			shape = wire.RLockRelease.String()
		}
	case "renew":
		shape = wire.RenewBatch.String()
		if a["read"] == 1 {
			shape = wire.RWReadRenewOne.String()
		}
	case "expire":
		shape = wire.ExpireKeys.String()
	case "dequeue":
		shape = wire.FairDequeue.String()
	default:
		shape = inv.F
	}
	return shape + "→" + replyClass(o)
}

// replyClass is the class of a wire reply as recorded: nil, 0, 1, pttl, token, error, or lost (none came).
func replyClass(o *history.Operation) string {
	c := o.Complete
	switch {
	case c == nil || c.Type == history.Unknown:
		return "lost"
	case c.Value == nil && c.Type == history.Ok:
		return "nil"
	case c.Value == nil:
		return "error"
	}
	v := *c.Value
	switch o.Invoke.F {
	case "acquire":
		switch {
		case c.Type == history.Ok:
			return "token"
		case v == -2:
			return "nil" // SET NX refused, as the recorder writes it
		}
		return "pttl"
	case "release":
		if c.Type != history.Ok {
			return "nil"
		}
	}
	switch {
	case v == 0 || v == 1:
		return itoa(v)
	case v < 0:
		return "negative"
	}
	return "many"
}

// keyState is one key's abstract lock: a holder (a mutex's, a read-write lock's writer) with its holds
// and when its lease surely ends, readers, a semaphore's permits, a latch's count.
type keyState struct {
	holder  string
	holds   int
	lease   span
	readers map[string]*reader
	lapsed  bool // the last hold ended by its lease running out, not by a release
	set     bool
	avail   int64
	total   int64
	permits map[string]span // an expirable semaphore's issued permits, by thread: their leases
	count   int64
	// pending are the commands called and not yet placed that took effect; maybe, the latest whose
	// outcome is unknown (at most maxMaybe): either may explain a later command (place).
	pending []*cmd
	maybe   []*cmd
	past    []snapshot // the lock before each of the latest changes (at most maxPast)
}

// snapshot is a key's lock before a change placed at at.
type snapshot struct {
	at int64
	s  *keyState
}

const maxPast = 4

const maxMaybe = 4

// maxPending bounds the commands in flight a look back tries: only what took effect waits there (a
// grant, a release, a renewal; never a refusal), a few at a time on one key in a real run, and the work
// stays linear whatever a crafted history holds in flight.
const maxPending = 16

// clone is a copy of s's lock (not its pending and maybe commands) to try a placement on.
func (s *keyState) clone() *keyState {
	c := *s
	c.pending, c.maybe, c.past = nil, nil, nil
	if s.readers != nil {
		c.readers = make(map[string]*reader, len(s.readers))
		for o, rd := range s.readers {
			x := *rd
			c.readers[o] = &x
		}
	}
	if s.permits != nil {
		c.permits = make(map[string]span, len(s.permits))
		for id, end := range s.permits {
			c.permits[id] = end
		}
	}
	return &c
}

// lockOf copies the lock of c into s, keeping s's pending and maybe commands.
func (s *keyState) lockOf(c *keyState) {
	p, m, past := s.pending, s.maybe, s.past
	*s = *c
	s.pending, s.maybe, s.past = p, m, past
}

type reader struct {
	holds int
	lease span
}

// span is when a lease ends: surely not before lo, surely by hi (the model's window, mutexmodel.go's
// leased); math.MaxInt64 for a lease its watchdog keeps.
type span struct{ lo, hi int64 }

func (a span) longest(b span) span { return span{max(a.lo, b.lo), max(a.hi, b.hi)} }

func (s *keyState) free() bool { return s.holder == "" && len(s.readers) == 0 }

// replay is the walk's state: every key's lock, the callers in flight per raw key, the faults in force.
type replay struct {
	fam     family
	keys    map[string]*keyState
	flying  map[string]map[string]int // raw key → caller → acquires in flight
	faults  map[string]int
	fault   string // the faults in force, "" when to be recomputed
	permits int64  // the run's --permits (a semaphore's total before its trySetPermits is seen)
	legal   map[Transition]bool
	yield   func(c *cmd, t Transition)
}

func (r *replay) state(key string) *keyState {
	s := r.keys[key]
	if s == nil {
		s = &keyState{total: r.permits}
		r.keys[key] = s
	}
	return s
}

func (r *replay) fly(key, who string, d int) {
	m := r.flying[key]
	if m == nil {
		m = map[string]int{}
		r.flying[key] = m
	}
	if m[who] += d; m[who] <= 0 {
		delete(m, who)
	}
}

// waiting is how many other callers have an acquire in flight on the key.
func (r *replay) waiting(c *cmd) int {
	m := r.flying[c.raw]
	n := len(m)
	if m[c.who] > 0 {
		n--
	}
	return n
}

func (r *replay) faultText() string {
	if r.fault == "" {
		var ks []string
		for k, n := range r.faults {
			if n > 0 {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		r.fault = strings.Join(ks, "+")
		if r.fault == "" {
			r.fault = "-" // cached: no fault
		}
	}
	if r.fault == "-" {
		return ""
	}
	return r.fault
}

// place takes c's effect on its key and yields its transition. Commands overlap: each is placed at its
// return (an unknown outcome at its call), and where that order contradicts the model (a grant placed
// before the release it followed, whose reply came later; a release answering "still held" after a
// re-entry whose reply was lost; a refusal answered before a release whose reply came first), the one
// command in flight or of unknown outcome that explains it is placed first, or a command that changes
// nothing is read against the lock as it was before a change placed since its call: a look back, not
// porcupine's search, so the replay stays linear and deterministic. What nothing explains is yielded as
// it is: a transition the model does not allow.
func (r *replay) place(c *cmd) {
	if c.placed {
		return
	}
	s := r.state(c.in.Key)
	s.pending = slices.DeleteFunc(s.pending, func(p *cmd) bool { return p == c || p.placed })
	t, op := r.transition(s, c)
	if !r.legal[t.Core()] {
		if then, ok := r.earlier(s, c); ok {
			r.yield(c, then)
			return
		}
		if r.explain(s, c) {
			t, op = r.transition(s, c)
		}
	}
	r.change(s, c, op)
	if c.out.Outcome == checker.Unsure {
		if len(s.maybe) == maxMaybe { // the oldest goes, in place
			s.maybe = s.maybe[:copy(s.maybe, s.maybe[1:])]
		}
		s.maybe = append(s.maybe, c)
	}
	r.yield(c, t)
}

// changes reports whether c may change its key's lock: it took effect (or may have), and is no read.
func changes(c *cmd) bool {
	return c.out.Outcome != checker.Refused && !reads[c.in.F]
}

// reads are the commands that read a lock's state and change nothing.
var reads = map[string]bool{"held": true, "is_locked": true, "available": true, "getCount": true, "await": true}

// change applies c to s, remembering s as it was before.
func (r *replay) change(s *keyState, c *cmd, op string) {
	if changes(c) && c.out.Outcome == checker.Applied {
		r.remember(s, c)
	}
	r.fam.apply(s, c, op)
}

// remember keeps s's lock as it is before c changes it.
func (r *replay) remember(s *keyState, c *cmd) {
	if len(s.past) == maxPast { // the oldest goes, in place: no new array per change
		s.past = s.past[:copy(s.past, s.past[1:])]
	}
	s.past = append(s.past, snapshot{at: c.at, s: s.clone()})
}

// earlier is c's transition on the lock as it was before a change placed after c's call, for a command
// that changes nothing (a refusal, a read): it may have been answered before that change took effect.
func (r *replay) earlier(s *keyState, c *cmd) (Transition, bool) {
	if changes(c) {
		return Transition{}, false
	}
	for i := len(s.past) - 1; i >= 0 && s.past[i].at >= c.in.Call; i-- {
		if t, _ := r.transition(s.past[i].s.clone(), c); r.legal[t.Core()] {
			return t, true
		}
	}
	return Transition{}, false
}

// transition is c's transition on s, which it first brings up to c's call (the leases surely run out).
func (r *replay) transition(s *keyState, c *cmd) (Transition, string) {
	lapse(s, c.now())
	w := r.waiting(c)
	before, op := r.fam.classify(s, c, w)
	t := Transition{Family: r.fam.name, Before: before, Op: op, Lease: leaseRel(s, c), Waiting: w > 0,
		Fault: r.faultText(), Script: c.script}
	t.Outcome = outcomeOf(c, op, r.fam)
	return t, op
}

// explain looks for what makes c legal on s: a command called before c and not yet placed that took
// effect (placed now, its own transition yielded first), else one of unknown outcome taken to have taken
// effect, else the leases that may have run out by c's return taken to have. It changes s and reports
// true when it found one.
func (r *replay) explain(s *keyState, c *cmd) bool {
	for _, p := range s.pending {
		if p == c || p.placed || p.now() > c.at {
			continue
		}
		try := s.clone()
		tp, opp := r.transition(try, p)
		if !r.legal[tp.Core()] {
			continue
		}
		r.fam.apply(try, p, opp)
		if t, _ := r.transition(try.clone(), c); !r.legal[t.Core()] {
			continue
		}
		r.remember(s, p)
		s.lockOf(try)
		p.placed = true
		s.pending = slices.DeleteFunc(s.pending, func(x *cmd) bool { return x == p })
		r.yield(p, tp)
		return true
	}
	for i := len(s.maybe) - 1; i >= 0; i-- {
		m := *s.maybe[i]
		m.out = checker.Reply{Outcome: checker.Applied, Value: guess(s, &m)}
		try := s.clone()
		_, opm := r.transition(try, &m)
		r.fam.apply(try, &m, opm)
		if t, _ := r.transition(try.clone(), c); !r.legal[t.Core()] {
			continue
		}
		r.remember(s, &m)
		s.lockOf(try)
		s.maybe = slices.Delete(s.maybe, i, i+1)
		return true
	}
	try := s.clone()
	if mayLapse(try, c.at); try.free() != s.free() || try.avail != s.avail || try.holder != s.holder || len(try.readers) != len(s.readers) {
		if t, _ := r.transition(try.clone(), c); r.legal[t.Core()] {
			r.remember(s, c)
			s.lockOf(try)
			return true
		}
	}
	return false
}

// lapse ends the holds whose lease surely ran out before now (the model's "surely expired": its call is
// after the lease's latest end).
func lapse(s *keyState, now int64) { lapseBy(s, func(l span) bool { return l.hi < now }) }

// mayLapse ends the holds whose lease may have run out before now: what explains a grant the surely
// expired leases do not (an expirable semaphore's permit reclaimed by the next acquire's clock).
func mayLapse(s *keyState, now int64) { lapseBy(s, func(l span) bool { return l.lo < now }) }

func lapseBy(s *keyState, over func(span) bool) {
	if s.holder != "" && over(s.lease) {
		s.holder, s.holds = "", 0
		s.lapsed = len(s.readers) == 0
	}
	for o, rd := range s.readers {
		if over(rd.lease) {
			delete(s.readers, o)
			if s.free() {
				s.lapsed = true
			}
		}
	}
	for id, l := range s.permits {
		if over(l) {
			delete(s.permits, id)
			s.avail++
		}
	}
}

// leaseOf is the lease c sets: from its call plus the lease less the model's slack to its return plus
// the lease and the slack (checker.Epsilon); endless for a hold its library's watchdog keeps, or a lease of
// 0 (the watchdog's).
func leaseOf(c *cmd) span {
	if c.in.Watchdog || c.in.Lease <= 0 || c.at == math.MaxInt64 {
		return span{math.MaxInt64, math.MaxInt64}
	}
	e := checker.Epsilon(c.in.Lease)
	hi := int64(math.MaxInt64)
	if c.at <= math.MaxInt64-c.in.Lease-e {
		hi = c.at + c.in.Lease + e
	}
	return span{c.in.Call + c.in.Lease - e, hi}
}

// left is how long the key's holds surely last from now, and whether anything holds it.
func left(s *keyState, now int64) (int64, bool) {
	end, held := int64(-1), false
	if s.holder != "" {
		end, held = s.lease.hi, true
	}
	for _, rd := range s.readers {
		end, held = max(end, rd.lease.hi), true
	}
	if !held {
		return 0, false
	}
	if end == math.MaxInt64 {
		return math.MaxInt64, true
	}
	return max(end-now, 0), true
}

// leaseRel relates a command's lease to what the key's holds had left: a re-entry or second reader with
// a lease shorter than the hold it joins is the shape of several real bugs.
func leaseRel(s *keyState, c *cmd) string {
	if c.in.Lease <= 0 || !leaseSetters[c.in.F] {
		return None
	}
	l, held := left(s, c.in.Call)
	if !held {
		return None
	}
	if l == math.MaxInt64 {
		return Shorter // a finite lease under a hold its watchdog keeps
	}
	tol := max(l/8, int64(50*time.Millisecond))
	switch {
	case c.in.Lease < l-tol:
		return Shorter
	case c.in.Lease > l+tol:
		return Longer
	}
	return Equal
}

// leaseSetters are the commands whose lease the transition relates: those that set a hold's lease.
var leaseSetters = map[string]bool{"acquire": true, "renew": true, "expire": true}

// outcomeOf is the command's outcome: granted, refused, released, kept, ok, yes, no or unknown; a resent
// unlock's is resent-N:that (N its attempt, 2 or 3+), or replayed where the caller held nothing for it
// to release and it answered as if it had (the unlock latch gave back the first attempt's answer).
func outcomeOf(c *cmd, op string, fam family) string {
	var o string
	switch {
	case c.out.Outcome == checker.Unsure:
		o = Unknown
	case c.out.Outcome == checker.Refused:
		o = Refused
	default:
		o = applied(c, op, fam)
	}
	if c.attempt <= 0 {
		return o
	}
	if op == StrayRelease && (o == Released || o == Kept) {
		return Replayed
	}
	n := "2"
	if c.attempt > 1 {
		n = "3+"
	}
	return "resent-" + n + ":" + o
}

// applied is what a command that took effect did: a release's reply says whether the hold ended
// (released) or the caller still holds it (kept); a semaphore's says the count, not the hold.
func applied(c *cmd, op string, fam family) string {
	switch c.in.F {
	case "acquire":
		return Granted
	case "release":
		if fam.counted && !fam.expirable {
			return Ok
		}
		if fam.counted || c.in.NoCount || c.out.Value == 1 || op == StrayRelease {
			return Released
		}
		return Kept
	case "held", "is_locked", "await":
		if c.out.Value == 1 {
			return Yes
		}
		return No
	}
	return Ok
}

// permitsOf is the run's --permits, the total of a semaphore whose trySetPermits the history lacks.
func permitsOf(h *history.History) int64 {
	if h.Run == nil {
		return 0
	}
	return h.Run.Checks.Permits
}

// guess is the reply a command of unknown outcome would have given had it taken effect on s.
func guess(s *keyState, c *cmd) int64 {
	switch c.in.F {
	case "release":
		if rd := s.readers[c.in.Owner]; c.in.Read && rd != nil && rd.holds > 1 || !c.in.Read && s.holder == c.in.Owner && s.holds > 1 {
			return 0 // still held: a re-entry's release
		}
		return 1
	case "countDown":
		return max(s.count-1, 0)
	}
	return 0
}

var (
	legalMu   sync.Mutex
	legalSets = map[string]map[Transition]bool{}
)

// legalSet is Allowed(family) as a set, made once per family.
func legalSet(family string) map[Transition]bool {
	legalMu.Lock()
	defer legalMu.Unlock()
	if m, ok := legalSets[family]; ok {
		return m
	}
	m := map[Transition]bool{}
	for _, t := range Allowed(family) {
		m[t] = true
	}
	legalSets[family] = m
	return m
}
