package checker

import (
	"fmt"
	"hash/fnv"
	"html"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// Command is one command as a model sees it: who sent what, with its real-time interval. Every model
// (mutex, read-write, semaphore, latch) takes it as input, using the fields that concern it.
type Command struct {
	Key    string
	Client string // for people only
	F      string // acquire, release, renew, expire; held, is_locked (reads), force_release (any owner's)
	Owner  string
	Lease  int64 // ns the command sets the pttl to (acquire, renew, partial release)
	Call   int64
	Return int64 // math.MaxInt64 when the outcome is unknown
	// Replay is set for a repeated unlock attempt: Redisson's unlock latch may answer it with the first
	// attempt's result, so its answer says nothing certain to the owner-by-owner checkers; and for a
	// worker's release whose depth lockcheck cannot know (args.uncertain). The models see no repeated
	// attempt alone: Commands joins it to its first (Resent).
	Replay bool
	// Resent is set on an unlock sent more than once with one request id (attempts 0..n), which Commands
	// makes one command: called at the first send, returning at the last (whose call is LastSend),
	// answering the last definite answer, taking effect at most once (the unlock latch).
	Resent   bool
	LastSend int64
	// Forced marks a refused command of an owner whose hold a forceUnlock may have ended (convert.go,
	// forcedSince): Replay is set with it, so the owner-by-owner checkers take the refusal as no proof of a
	// loss; the model clears both.
	Forced bool
	// Fair is set for the fair lock: it may refuse a free lock (someone else heads the queue), and its
	// unlock of a lock that no longer exists answers 1.
	Fair bool
	// Split is set on a Redlock library's acquire judged as one lock (a worker's own record, on masters):
	// its refusal is "no majority for me", which the masters' votes split among contenders also give while
	// no one holds the lock (the Redis docs' Redlock: "it is possible that multiple clients ... and nobody
	// wins"), so it may refuse a free lock. A Go client's per-master records are judged master by master.
	Split bool
	Read  bool  // a read-write lock's read half
	N     int64 // permits or count argument
	// Volatile is set where a failover can lose writes no replica acknowledged (sentinel): an unsure
	// acquire or renewal may then vanish at any moment, not only when its lease runs out.
	Volatile bool
	// Watchdog is set on a worker's grant kept by its library's watchdog, whose renewals the history does
	// not see: the lease lasts at least Lease, and may last until the owner lets go.
	Watchdog bool
	// NoCount is set on a library's own call judged at the API level (apilevel.go) whose reply does not
	// say the count after it (a worker's release_permits, count_down): the count models check no value.
	NoCount bool
	// Now, on an API-level command (apilevel.go), is the latest time it can have taken effect as the
	// search places it (frontier.go sets it: the return being expanded), 0 when unsaid. A library's call
	// may wait seconds; bounding its effect by Return alone let every permit granted in its window lapse
	// and be taken again within it, and the search explode.
	Now int64
	API bool // set by APIOps: the search fills in Now
}

// SplitRefusal says whether out is a split vote's refusal of in: legal in every state and changing none, so
// the models, the lost-lock groups and the coverage replay all leave it out.
func (in Command) SplitRefusal(out Reply) bool { return in.Split && out.Outcome == Refused }

// Outcome of a command for the model.
type Outcome int

// Outcomes. A command that surely did not run never reaches the model.
const (
	Applied Outcome = iota // ran and took effect
	Refused                // ran and Redis said the owner may not (lock held by another, not held)
	Unsure                 // may or may not have run
)

// Reply is the command's outcome; Value is the release result (1 released, 0 still held).
type Reply struct {
	Outcome Outcome
	Value   int64
}

// MutexState is the lock on one key: its owner, re-entry count, and the window [Lo, Hi] in which its
// lease surely ends (valid only while held).
type MutexState struct {
	Owner  string
	Holds  int
	Lo, Hi int64
	// Pend is set by a command whose outcome is unknown: its effect has no known end time, so its lease
	// has no upper bound yet (Hi is +inf). But effects happen in linearization order, so it took effect no
	// later than the next command placed after it, which returns by its Return: Hi becomes that Return +
	// Pend. Without this an unknown grant could hold the lock forever in the model, and the search
	// explodes.
	Pend int64
}

// Epsilon is the slack allowed between the harness clock and Redis's expiry: a fixed part for scheduling and
// a fraction of the lease for clock rate.
func Epsilon(lease int64) int64 { return int64(2*time.Millisecond) + lease/100 }

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// leased returns s held by owner with holds, its lease set by a command in [call, ret].
func leased(owner string, holds int, lease, call, ret int64) MutexState {
	e := Epsilon(lease)
	s := MutexState{Owner: owner, Holds: holds, Lo: call + lease - e, Hi: satAdd(satAdd(ret, lease), e)}
	if ret == math.MaxInt64 {
		s.Pend = lease + e
	}
	return s
}

// bound gives a pending lease its upper bound from the command placed next, returning by ret.
func bound(s MutexState, ret int64) MutexState {
	if s.Pend > 0 && ret != math.MaxInt64 {
		s.Hi, s.Pend = min(s.Hi, satAdd(ret, s.Pend)), 0
	}
	return s
}

// expiries lists what s may be when a command in [call, ret] takes effect: still held, expired, or either.
func expiries(s MutexState, call, ret int64) []MutexState {
	switch {
	case s.Owner == "":
		return []MutexState{s}
	case ret < s.Lo:
		return []MutexState{s}
	case call > s.Hi:
		return []MutexState{{}}
	}
	return []MutexState{s, {}}
}

// apply returns the state after in takes effect in s with answer value, and whether that answer is legal.
// For an unsure command the answer is whatever the effect would give.
func apply(s MutexState, in Command, out Reply) (MutexState, bool) {
	next, ok := applyCommand(s, in, out)
	if ok && in.Volatile && out.Outcome == Unsure && next.Owner != "" && (in.F == "acquire" || in.F == "renew") {
		next.Lo = min(next.Lo, in.Call) // a write no replica acknowledged may be lost to a failover at once
	}
	if ok && in.Watchdog && next.Owner != "" {
		next.Hi, next.Pend = math.MaxInt64, 0 // unseen renewals may keep it as long as the owner lives
	}
	return next, ok
}

func applyCommand(s MutexState, in Command, out Reply) (MutexState, bool) {
	mine := s.Owner == in.Owner
	switch in.F {
	case "acquire":
		if out.Outcome == Refused {
			// Held, by another or (SET NX, not re-entrant: the spec Redlock) by the caller itself, whose
			// release did not apply; the fair lock, and a Redlock whose votes split, may refuse a free lock.
			return s, in.Fair || in.Split || s.Owner != ""
		}
		if s.Owner != "" && !mine {
			return s, false
		}
		return leased(in.Owner, s.Holds+1, in.Lease, in.Call, in.Return), true
	case "release":
		if out.Outcome == Refused {
			return s, !mine
		}
		if in.Fair && s.Owner == "" && out.Outcome == Applied && out.Value == 1 {
			return s, true // Redisson's fair unlock answers 1 for a lock that is gone
		}
		if !mine {
			return s, false
		}
		if out.Outcome == Applied && (out.Value == 1) != (s.Holds == 1) {
			return s, false // the reply contradicts the re-entry count
		}
		if s.Holds <= 1 {
			return MutexState{}, true
		}
		return leased(in.Owner, s.Holds-1, in.Lease, in.Call, in.Return), true
	case "renew":
		if out.Outcome == Refused {
			return s, !mine
		}
		if !mine {
			return s, false
		}
		return leased(in.Owner, s.Holds, in.Lease, in.Call, in.Return), true
	case "held": // isHeldByCurrentThread: a read at some point in [call, return]
		return s, out.Outcome == Unsure || (out.Value == 1) == (mine && s.Owner != "")
	case "is_locked": // isLocked: likewise, whoever holds it
		return s, out.Outcome == Unsure || (out.Value == 1) == (s.Owner != "")
	case "force_release": // forceUnlock: a release of whoever holds it
		switch {
		case out.Outcome == Refused: // nothing to delete
			return s, s.Owner == ""
		case s.Owner == "":
			return s, out.Outcome == Unsure // ran and deleted nothing; an "ok" says it deleted a hold
		}
		return MutexState{}, true
	case "expire": // PEXPIRE with no owner check (MultiLock's final lease): moves whoever holds it
		if out.Outcome == Refused {
			return s, s.Owner == ""
		}
		if s.Owner == "" {
			return s, false
		}
		return leased(s.Owner, s.Holds, in.Lease, in.Call, in.Return), true
	}
	return s, false
}

// mutexStep returns every state the lock may be in after the command.
func mutexStep(state interface{}, input, output interface{}) []interface{} {
	s, in, out := state.(MutexState), input.(Command), output.(Reply)
	if in.Replay && out.Outcome != Unsure {
		out = Reply{Outcome: Unsure}
	}
	var next []interface{}
	if out.Outcome == Unsure {
		// It did not run, or ran and changed nothing: the state is as it was. Whether the lease ran out
		// is for the next command to see, by its own interval (a command that did not run has none).
		// Being the identity lets the frontier search defer it (frontier.go).
		next = append(next, state)
	}
	s = bound(s, in.Return)
	for _, e := range expiries(s, in.Call, in.Return) {
		if a, ok := apply(e, in, out); ok && (out.Outcome != Unsure || a != state) {
			next = append(next, a) // for an unsure one: it ran, with whatever answer its effect gives
		}
	}
	return next
}

// MutexModel is the lease-aware reentrant mutex, partitioned by key. A grant to another owner is legal only
// once the holder's lease may have run out.
var MutexModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{MutexState{}} },
	Step: mutexStep,
	Hash: func(state interface{}) uint64 {
		s := state.(MutexState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%s|%d|%d|%d|%d", s.Owner, s.Holds, s.Lo, s.Hi, s.Pend)
		return h.Sum64()
	},
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		return partitionByKey(history, func(in interface{}) string { return in.(Command).Key })
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(Command), output.(Reply)
		return html.EscapeString(fmt.Sprintf("%s %s%s %s", in.Client, in.F, resentNote(in), describeOutcome(in, out)))
	},
	DescribeState: func(state interface{}) string {
		s := state.(MutexState)
		if s.Owner == "" {
			return "free"
		}
		hi := "never"
		if s.Hi != math.MaxInt64 {
			hi = Secs(s.Hi)
		}
		return html.EscapeString(fmt.Sprintf("held by %s ×%d; lease ends in [%s, %s]", s.Owner, s.Holds, Secs(s.Lo), hi))
	},
}

// resentNote says that a command is an unlock sent more than once (Command.Resent).
func resentNote(in Command) string {
	if in.Resent {
		return fmt.Sprintf(" (sent again at %s, one request)", Secs(in.LastSend))
	}
	return ""
}

func describeOutcome(in Command, out Reply) string {
	switch out.Outcome {
	case Unsure:
		return "→ unknown"
	case Refused:
		return "→ refused"
	}
	switch in.F {
	case "release", "held", "is_locked", "force_release":
		return fmt.Sprintf("→ %d", out.Value)
	}
	return "→ ok"
}

// partitionByKey splits a history into one sub-history per key, in order of first appearance. The parts
// are cut from one array of the history's length, counted first: appended one by one, a million
// operations over a thousand keys left twice their size in grown copies.
func partitionByKey(h []porcupine.Operation, key func(interface{}) string) [][]porcupine.Operation {
	idx := map[string]int{}
	part := make([]int32, len(h))
	var sizes []int
	for n, op := range h {
		k := key(op.Input)
		i, ok := idx[k]
		if !ok {
			i = len(sizes)
			idx[k] = i
			sizes = append(sizes, 0)
		}
		part[n] = int32(i)
		sizes[i]++
	}
	if len(sizes) == 0 {
		return nil
	}
	all := make([]porcupine.Operation, len(h))
	out := make([][]porcupine.Operation, len(sizes))
	at := 0
	for i, n := range sizes {
		out[i] = all[at : at : at+n]
		at += n
	}
	for n, op := range h {
		out[part[n]] = append(out[part[n]], op)
	}
	return out
}
