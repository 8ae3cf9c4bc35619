package coverage

import (
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// State classes (Transition.Before).
const (
	Free            = "free"
	Lapsed          = "lapsed" // the last hold's lease ran out with no release: its owner lost it
	HeldOnce        = "held-once"
	Reentered       = "re-entered"
	Readers1        = "readers-1"
	Readers2        = "readers-2"
	ReadersMany     = "readers-many"
	Writer          = "writer"
	WriterReentered = "writer-reentered"
	WriterReaders   = "writer+readers"
	Unset           = "unset" // a semaphore whose permits were never set
	Permits0        = "permits-0"
	PermitsSome     = "permits-some"
	PermitsAll      = "permits-all"
	Open            = "open" // a latch at zero
	Count1          = "count-1"
	CountMany       = "count-many"
)

// Operations (Transition.Op), relative to the caller: a stray one is by a caller that holds nothing the
// command could act on.
const (
	Acquire        = "acquire"
	Reenter        = "reenter"
	Release        = "release"
	StrayRelease   = "stray-release"
	Renew          = "renew"
	StrayRenew     = "stray-renew"
	Expire         = "expire"
	Read           = "read"
	ForceRelease   = "force-release"
	Dequeue        = "dequeue"
	ReadAcquire    = "read-acquire"
	ReadReenter    = "read-reenter"
	ReadUnderWrite = "read-under-write"
	WriteAcquire   = "write-acquire"
	WriteReenter   = "write-reenter"
	ReadRelease    = "read-release"
	WriteRelease   = "write-release"
	SetPermits     = "set-permits"
	SetCount       = "set-count"
	CountDown      = "count-down"
	Await          = "await"
)

// Outcomes (Transition.Outcome); a resent unlock's is "resent-2:" or "resent-3+:" and one of these.
const (
	Granted  = "granted"
	Refused  = "refused"
	Released = "released"
	Kept     = "kept" // a release that left the caller holding (a re-entry's)
	Ok       = "ok"
	Yes      = "yes"
	No       = "no"
	Unknown  = "unknown"
	Replayed = "replayed"
)

// family is one coverage family: the commands its model reads, how a command is classed on its lock, and
// how it changes it. A new family is one value in families.
type family struct {
	name      string
	commands  []string
	counted   bool // a semaphore: its release answers a count, not a hold
	expirable bool // its permits have ids and leases
	fair      bool // its state class says the queue's length
	classify  func(s *keyState, c *cmd, waiting int) (before, op string)
	apply     func(s *keyState, c *cmd, op string)
	allowed   func(name string) []Transition
}

var mutexCommands = []string{"acquire", "release", "renew", "expire", "held", "is_locked", "force_release", "dequeue"}

func mutexFamily(name string, fair bool) family {
	return family{name: name, commands: mutexCommands, fair: fair, classify: mutexClassify(fair), apply: mutexApply,
		allowed: func(n string) []Transition { return mutexAllowed(n, fair) }}
}

var families = []family{
	mutexFamily("mutex", false),
	mutexFamily("mutex/fair", true),
	mutexFamily("mutex/fenced", false),
	mutexFamily("mutex/multi", false),
	mutexFamily("mutex/redlock", false),
	{name: "rwlock", commands: []string{"acquire", "release", "renew"}, classify: rwClassify, apply: rwApply, allowed: rwAllowed},
	semFamily("semaphore", false),
	semFamily("expirable-semaphore", true),
	{name: "latch", commands: []string{"setCount", "countDown", "getCount", "await"}, classify: latchClassify,
		apply: latchApply, allowed: latchAllowed},
}

var semCommands = []string{"setPermits", "acquire", "release", "available"}

// Families lists the coverage families: the lock families (kinds), the mutex's variants apart where
// their models differ (a fair lock's queue, a fenced lock's tokens, a multi lock's groups, RedLock's
// masters).
func Families() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.name
	}
	return out
}

func familyNamed(name string) (family, bool) {
	for _, f := range families {
		if f.name == name {
			return f, true
		}
	}
	return family{}, false
}

// FamilyOf is the coverage family of h's lock, from the checks its meta record carries (a history
// without one is judged as a mutex, as the checkers judge it).
func FamilyOf(h *history.History) string { return familyOf(h).name }

func familyOf(h *history.History) family {
	var c history.Checks
	if h.Run != nil {
		c = h.Run.Checks
	}
	name := c.Family
	if name == "" || name == "mutex" {
		switch {
		case c.Fair:
			name = "mutex/fair"
		case c.Fenced:
			name = "mutex/fenced"
		case c.Group:
			name = "mutex/multi"
		case c.Members:
			name = "mutex/redlock"
		default:
			name = "mutex"
		}
	}
	if f, ok := familyNamed(name); ok {
		return f
	}
	return families[0]
}

// Allowed lists the transitions family's model allows (faults and scripts aside: Transition.Core), so a
// map can say what no run reached. An unknown family has none.
func Allowed(family string) []Transition {
	f, ok := familyNamed(family)
	if !ok {
		return nil
	}
	ts := f.allowed(f.name)
	sortTransitions(ts)
	return ts
}

// bucket classes a number of things: 0, 1, 2 or many.
func bucket(n int) string {
	switch n {
	case 0, 1, 2:
		return itoa(int64(n))
	}
	return "many"
}

// ---- mutex (and its variants) ----

func mutexBefore(s *keyState) string {
	switch {
	case s.holder == "" && s.lapsed:
		return Lapsed
	case s.holder == "":
		return Free
	case s.holds <= 1:
		return HeldOnce
	}
	return Reentered
}

// queueClass is a fair lock's queue, the other callers waiting: 0, 1 or many.
func queueClass(waiting int) string {
	if waiting > 1 {
		return "queue-many"
	}
	return "queue-" + itoa(int64(waiting))
}

func mutexClassify(fair bool) func(s *keyState, c *cmd, waiting int) (string, string) {
	return func(s *keyState, c *cmd, waiting int) (string, string) {
		before := mutexBefore(s)
		if fair {
			before += "/" + queueClass(waiting)
		}
		mine := s.holder != "" && s.holder == c.in.Owner
		switch c.in.F {
		case "acquire":
			if mine {
				return before, Reenter
			}
			return before, Acquire
		case "release":
			if mine {
				return before, Release
			}
			return before, StrayRelease
		case "renew":
			if mine {
				return before, Renew
			}
			return before, StrayRenew
		case "expire":
			return before, Expire
		case "held", "is_locked":
			return before, Read
		case "force_release":
			return before, ForceRelease
		}
		return before, Dequeue
	}
}

func mutexApply(s *keyState, c *cmd, op string) {
	if c.out.Outcome != checker.Applied { // only what surely took effect moves the abstract lock
		return
	}
	switch op {
	case Acquire:
		s.holder, s.holds, s.lease, s.lapsed = c.in.Owner, 1, leaseOf(c), false
	case Reenter:
		s.holds++
		s.lease = leaseOf(c) // Redisson's re-entry sets the lease it brings (PEXPIRE)
	case Release:
		if c.out.Value == 1 || s.holds <= 1 {
			s.holder, s.holds, s.lapsed = "", 0, false
			return
		}
		s.holds--
		if c.in.Lease > 0 {
			s.lease = leaseOf(c)
		}
	case Renew:
		s.lease = leaseOf(c)
	case Expire:
		if s.holder != "" {
			s.lease = leaseOf(c)
		}
	case ForceRelease:
		s.holder, s.holds, s.lapsed = "", 0, false
	}
}

// ---- read-write lock ----

func rwBefore(s *keyState) string {
	n := len(s.readers)
	switch {
	case s.holder != "" && n > 0:
		return WriterReaders
	case s.holder != "" && s.holds > 1:
		return WriterReentered
	case s.holder != "":
		return Writer
	case n > 2:
		return ReadersMany
	case n == 2:
		return Readers2
	case n == 1:
		return Readers1
	case s.lapsed:
		return Lapsed
	}
	return Free
}

func rwClassify(s *keyState, c *cmd, _ int) (string, string) {
	before := rwBefore(s)
	o := c.in.Owner
	_, reading := s.readers[o]
	writing := s.holder != "" && s.holder == o
	switch {
	case c.in.F == "acquire" && c.in.Read && reading:
		return before, ReadReenter
	case c.in.F == "acquire" && c.in.Read && writing:
		return before, ReadUnderWrite
	case c.in.F == "acquire" && c.in.Read:
		return before, ReadAcquire
	case c.in.F == "acquire" && writing:
		return before, WriteReenter
	case c.in.F == "acquire":
		return before, WriteAcquire
	case c.in.F == "release" && c.in.Read && reading:
		return before, ReadRelease
	case c.in.F == "release" && !c.in.Read && writing:
		return before, WriteRelease
	case c.in.F == "release":
		return before, StrayRelease
	case reading || writing:
		return before, Renew
	}
	return before, StrayRenew
}

func rwApply(s *keyState, c *cmd, op string) {
	if c.out.Outcome != checker.Applied {
		return
	}
	o := c.in.Owner
	switch op {
	case ReadAcquire, ReadReenter, ReadUnderWrite:
		if s.readers == nil {
			s.readers = map[string]*reader{}
		}
		rd := s.readers[o]
		if rd == nil {
			rd = &reader{}
			s.readers[o] = rd
		}
		rd.holds++
		rd.lease = rd.lease.longest(leaseOf(c))
		s.lapsed = false
	case WriteAcquire:
		s.holder, s.holds, s.lease, s.lapsed = o, 1, leaseOf(c), false
	case WriteReenter:
		s.holds++
		s.lease = s.lease.longest(leaseOf(c))
	case ReadRelease:
		if c.out.Value == 1 {
			s.holder, s.holds, s.readers, s.lapsed = "", 0, nil, false
			return
		}
		rd := s.readers[o]
		if rd.holds--; rd.holds <= 0 {
			delete(s.readers, o)
		}
	case WriteRelease:
		if c.out.Value == 1 {
			s.holder, s.holds, s.readers, s.lapsed = "", 0, nil, false
			return
		}
		if s.holds--; s.holds <= 0 {
			s.holder = ""
		}
	case Renew:
		l := leaseOf(c)
		if s.holder == o {
			s.lease = l
		}
		if rd := s.readers[o]; rd != nil {
			rd.lease = l
		}
	}
}

// ---- semaphores ----

func semBefore(s *keyState) string {
	switch {
	case !s.set:
		return Unset
	case s.avail <= 0:
		return Permits0
	case s.avail >= s.total:
		return PermitsAll
	}
	return PermitsSome
}

// semFamily is RSemaphore's counter or, expirable, RPermitExpirableSemaphore's permits, each by its id
// with a lease after which it may be reclaimed.
func semFamily(name string, expirable bool) family {
	return family{name: name, commands: semCommands, counted: true, expirable: expirable, classify: semClassify(expirable),
		apply: semApply(expirable), allowed: func(n string) []Transition { return semAllowed(n, expirable) }}
}

func semClassify(expirable bool) func(s *keyState, c *cmd, _ int) (string, string) {
	return func(s *keyState, c *cmd, _ int) (string, string) {
		if !s.set && s.total > 0 && c.in.F != "setPermits" { // the run's --permits: set before this run's record of it
			s.avail, s.set = s.total, true
		}
		before := semBefore(s)
		switch c.in.F {
		case "setPermits":
			return before, SetPermits
		case "acquire":
			return before, Acquire
		case "release":
			if _, mine := s.permits[c.who]; expirable && !mine {
				return before, StrayRelease // not issued, or reclaimed after its lease
			}
			return before, Release
		}
		return before, Read
	}
}

func semApply(expirable bool) func(s *keyState, c *cmd, op string) {
	return func(s *keyState, c *cmd, op string) {
		if c.out.Outcome != checker.Applied {
			return
		}
		n := max(c.in.N, 1)
		switch op {
		case SetPermits:
			s.set, s.avail, s.total = true, c.in.N, c.in.N
		case Acquire:
			s.avail -= n
			if expirable {
				if s.permits == nil {
					s.permits = map[string]span{}
				}
				s.permits[c.who] = leaseOf(c) // by thread: a thread holds one permit at a time
			}
		case Release:
			delete(s.permits, c.who)
			s.avail += n
		case StrayRelease:
			if !expirable {
				s.avail += n
			}
		case Read:
			semRead(s, c)
		}
	}
}

// semRead follows the count a read saw: the replay keeps to what the server said.
func semRead(s *keyState, c *cmd) {
	switch {
	case !c.in.NoCount:
		s.avail = c.out.Value
	}
}

// ---- latch ----

func latchBefore(s *keyState) string {
	switch {
	case s.count <= 0:
		return Open
	case s.count == 1:
		return Count1
	}
	return CountMany
}

func latchClassify(s *keyState, c *cmd, _ int) (string, string) {
	before := latchBefore(s)
	switch c.in.F {
	case "setCount":
		return before, SetCount
	case "countDown":
		return before, CountDown
	case "await":
		return before, Await
	}
	return before, Read
}

func latchApply(s *keyState, c *cmd, op string) {
	if c.out.Outcome != checker.Applied {
		return
	}
	switch op {
	case SetCount:
		s.count = c.in.N
	case CountDown:
		s.count = max(s.count-1, 0)
		if !c.in.NoCount {
			s.count = max(c.out.Value, 0)
		}
	case Read:
		s.count = max(c.out.Value, 0)
	}
}
