package checker

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"html"
	"math"
	"strings"

	"github.com/anishathalye/porcupine"
)

// RWState is a read-write lock: its writer and write holds, its readers, and the window in which the whole
// hash's lease surely ends.
//
// Readers holds each reader's holds and its own lease window, sorted by owner so the state stays
// comparable: per reader, the owner, a zero byte, then its holds (4 bytes) and the window [lo, hi] in which
// its remaining holds' longest lease ends (8 bytes each). A read unlock that leaves others holding sets
// the hash's lease to the longest remaining hold's (Redisson's rwlock_timeout keys; a readers set's
// scores): without each reader's own window the model could only say "any time from now", and found a
// writer's grant legal while a remaining reader was still well inside its lease.
type RWState struct {
	Writer  string
	WHolds  int
	Readers string
	Lo, Hi  int64
}

func (s RWState) free() bool { return s.Writer == "" && s.Readers == "" }

// readerLen is the bytes after a reader's owner and its zero byte: holds, lo, hi.
const readerLen = 4 + 8 + 8

// reader is one entry of a readers string.
type reader struct {
	owner  string
	holds  int
	lo, hi int64
}

// nextReader cuts the first entry off a readers string. The model's step runs millions of times on a wide
// history (porcupine and the frontier both): the readers are read and rewritten in place, with no map.
func nextReader(rs string) (reader, string) {
	i := strings.IndexByte(rs, 0)
	b := rs[i+1 : i+1+readerLen]
	return reader{owner: rs[:i], holds: int(le(b[0:4])), lo: int64(le(b[4:12])), hi: int64(le(b[12:20]))}, rs[i+1+readerLen:]
}

// le reads a little-endian number from a string's bytes, without copying them.
func le(b string) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// readerOf is o's entry in a readers string (holds 0 when o holds none).
func readerOf(rs, o string) reader {
	for rs != "" {
		var r reader
		if r, rs = nextReader(rs); r.owner == o {
			return r
		}
	}
	return reader{owner: o}
}

// readerHolds is o's holds in a readers string.
func readerHolds(rs, o string) int { return readerOf(rs, o).holds }

func putReader(b *strings.Builder, r reader) {
	var n [readerLen]byte
	binary.LittleEndian.PutUint32(n[0:], uint32(r.holds))
	binary.LittleEndian.PutUint64(n[4:], uint64(r.lo))
	binary.LittleEndian.PutUint64(n[12:], uint64(r.hi))
	b.WriteString(r.owner)
	b.WriteByte(0)
	b.Write(n[:])
}

// withReader is the readers string with r's entry put in its owner's place (an owner with no holds is
// left out), still sorted by owner.
func withReader(rs string, r reader) string {
	var b strings.Builder
	b.Grow(len(rs) + len(r.owner) + 1 + readerLen)
	placed := false
	for rs != "" {
		var e reader
		e, rs = nextReader(rs)
		switch {
		case e.owner == r.owner:
			e, placed = r, true
		case !placed && e.owner > r.owner:
			if r.holds > 0 {
				putReader(&b, r)
			}
			placed = true
		}
		if e.holds > 0 {
			putReader(&b, e)
		}
	}
	if !placed && r.holds > 0 {
		putReader(&b, r)
	}
	return b.String()
}

// longestReader is the window in which the longest of the readers' leases ends.
func longestReader(rs string) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MinInt64
	for rs != "" {
		var r reader
		r, rs = nextReader(rs)
		lo, hi = max(lo, r.lo), max(hi, r.hi)
	}
	return lo, hi
}

// rwApply returns the state after a read-write command, and whether its reply is legal.
func rwApply(s RWState, in Command, out Reply) (RWState, bool) {
	o := in.Owner
	mine := readerHolds(s.Readers, o)
	e := Epsilon(in.Lease)
	lo, hi := in.Call+in.Lease-e, satAdd(satAdd(in.Return, in.Lease), e)
	switch {
	case in.F == "acquire" && in.Read:
		grantable := s.Writer == "" || s.Writer == o
		if out.Outcome == Refused {
			return s, !grantable
		}
		if !grantable {
			return s, false
		}
		if s.free() {
			s.Lo, s.Hi = lo, hi
		} else {
			s.Lo, s.Hi = max(s.Lo, lo), max(s.Hi, hi)
		}
		r := readerOf(s.Readers, o)
		if r.holds == 0 {
			r.lo, r.hi = lo, hi
		}
		// A re-entry keeps the first hold's lo: a release takes the latest hold off (Redisson's timeout key
		// n), so what remains lasts at least as long as the first hold, not surely as long as this one.
		r.holds, r.hi = r.holds+1, max(r.hi, hi)
		s.Readers = withReader(s.Readers, r)
		return s, true
	case in.F == "acquire":
		fresh := s.free()
		reentry := s.Writer == o
		if out.Outcome == Refused {
			return s, !fresh && !reentry
		}
		switch {
		case fresh:
			return RWState{Writer: o, WHolds: 1, Lo: lo, Hi: hi}, true
		case reentry: // the pttl grows by the lease
			s.WHolds++
			s.Lo, s.Hi = satAdd(s.Lo, in.Lease-e), satAdd(s.Hi, in.Lease+e)
			return s, true
		}
		return s, false
	case in.F == "release" && in.Read:
		if out.Outcome == Refused {
			if mine == 0 {
				return s, true
			}
			// A reader whose own lease may have ended while others keep the lock: a readers set drops its
			// entry when any script runs past its score (examples/locks/rwlock.yaml), so its unlock may find
			// it gone; Redisson's hash keeps the field, and the unlock that finds it is legal too.
			r := readerOf(s.Readers, o)
			if r.lo > in.Return {
				return s, false
			}
			r.holds = 0
			if s.Readers = withReader(s.Readers, r); s.free() {
				return RWState{}, true
			}
			return s, true
		}
		if mine == 0 {
			return s, false
		}
		r := readerOf(s.Readers, o)
		r.holds--
		s.Readers = withReader(s.Readers, r)
		others := s.Readers != "" || s.Writer != ""
		if !others {
			return RWState{}, out.Outcome != Applied || out.Value == 1
		}
		if s.Writer != "" || in.Volatile {
			// The writer's own reads: its hash lives on, or as long as its reads. Where a failover can lose
			// writes, the holds the model counts may not be the server's (an unacknowledged grant lost, a
			// refusal from the old primary left out): the lock's lease may end at any time from here, and
			// a 1 says it was the last.
			if out.Outcome == Applied && out.Value == 1 {
				return RWState{}, true
			}
			s.Lo = min(s.Lo, in.Call)
			return s, true
		}
		// The lock now keeps writers out as long as the longest remaining hold (Redisson sets the hash's
		// pttl to it; a readers set's live scores do). If every remaining hold ran out before this release,
		// none is left and the release answers that it was the last. The upper end stays where it was: a
		// readers set lives on with its TTL, and a lapsed reader's unlock may still find its entry there.
		rlo, rhi := longestReader(s.Readers)
		if out.Outcome == Applied && out.Value == 1 {
			return RWState{}, rlo <= in.Return
		}
		s.Lo, s.Hi = rlo, max(s.Hi, rhi)
		return s, true
	case in.F == "release":
		if out.Outcome == Refused {
			return s, s.Writer != o
		}
		if s.Writer != o {
			return s, false
		}
		if out.Outcome == Applied && (out.Value == 1) != (s.WHolds == 1) {
			return s, false
		}
		if s.WHolds > 1 {
			s.WHolds--
			s.Lo, s.Hi = lo, hi
			return s, true
		}
		s.Writer, s.WHolds = "", 0
		if s.Readers == "" {
			return RWState{}, true
		}
		return s, true // the holder's own reads keep it, in read mode
	case in.F == "renew" && in.Read:
		if out.Outcome == Refused {
			return s, mine == 0
		}
		if mine == 0 {
			return s, false
		}
		s.Lo, s.Hi = max(s.Lo, lo), max(s.Hi, hi)
		s.Readers = withReader(s.Readers, reader{owner: o, holds: mine, lo: lo, hi: hi}) // each of its holds' timeouts
		return s, true
	case in.F == "renew":
		if out.Outcome == Refused {
			return s, s.Writer != o
		}
		if s.Writer != o {
			return s, false
		}
		s.Lo, s.Hi = lo, hi
		return s, true
	}
	return s, false
}

func rwStep(state, input, output interface{}) []interface{} {
	s, in, out := state.(RWState), input.(Command), output.(Reply)
	if in.Replay && out.Outcome != Unsure {
		out = Reply{Outcome: Unsure}
	}
	cands := []RWState{s}
	if !s.free() {
		switch {
		case in.Return < s.Lo:
		case in.Call > s.Hi:
			cands = []RWState{{}}
		default:
			cands = append(cands, RWState{})
		}
	}
	var next []interface{}
	if out.Outcome == Unsure {
		next = append(next, s) // it did not run: unchanged (as in mutexStep)
	}
	// A resent unlock's 1 may be the latch of a send that found the lock gone: Redisson's read and write
	// unlocks store 1 in the latch before answering nil there, and a later send answers the latch.
	gone := in.Resent && out.Outcome == Applied && out.Value == 1
	for _, c := range cands {
		if a, ok := rwApply(c, in, out); ok && (out.Outcome != Unsure || a != s) {
			next = append(next, a)
			// A read renewal answers 1 when the reader's field is in the hash, but it renews the reader's own
			// timeout keys only if they are still there: a reader whose lease may have run out before it ran
			// (a paused node ran it late) may be renewed in name only, its window left as it was.
			if in.F == "renew" && in.Read && out.Outcome == Applied && a != c {
				if r := readerOf(c.Readers, in.Owner); r.holds > 0 && r.lo < in.Return {
					next = append(next, c)
				}
			}
		} else if gone {
			if _, ok := rwApply(c, in, Reply{Outcome: Refused}); ok {
				next = append(next, c)
			}
		}
	}
	return next
}

// RWModel is Redisson's read-write lock, lease-aware on the whole hash, partitioned by key: readers share,
// a writer excludes everyone but its own reads, there is no upgrade.
var RWModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{RWState{}} },
	Step: rwStep,
	Hash: func(state interface{}) uint64 {
		s := state.(RWState)
		h := fnv.New64a()
		var b [8 * 3]byte
		binary.LittleEndian.PutUint64(b[0:], uint64(s.WHolds))
		binary.LittleEndian.PutUint64(b[8:], uint64(s.Lo))
		binary.LittleEndian.PutUint64(b[16:], uint64(s.Hi))
		_, _ = h.Write(b[:])
		_, _ = h.Write([]byte(s.Writer))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(s.Readers))
		return h.Sum64()
	},
	Partition:         partitionByCommandKey,
	DescribeOperation: describeCommand,
	DescribeState: func(state interface{}) string {
		s := state.(RWState)
		if s.free() {
			return "free"
		}
		var rs []string
		for left := s.Readers; left != ""; {
			var r reader
			r, left = nextReader(left)
			rs = append(rs, fmt.Sprintf("%s×%d until [%s, %s]", r.owner, r.holds, Secs(r.lo), retText(r.hi)))
		}
		return html.EscapeString(fmt.Sprintf("writer %q ×%d, readers {%s}; lease ends in [%s, %s]", s.Writer, s.WHolds,
			strings.Join(rs, "; "), Secs(s.Lo), retText(s.Hi)))
	},
}

func partitionByCommandKey(h []porcupine.Operation) [][]porcupine.Operation {
	return partitionByKey(h, func(in interface{}) string { return in.(Command).Key })
}

// describeCommand names a command and its reply for people.
func describeCommand(input, output interface{}) string {
	in, out := input.(Command), output.(Reply)
	f := in.F
	if in.Read {
		f = "read " + f
	}
	if in.N != 0 {
		f += fmt.Sprintf("(%d)", in.N)
	}
	f += resentNote(in)
	var r string
	switch out.Outcome {
	case Unsure:
		r = "unknown"
	case Refused:
		r = fmt.Sprintf("refused (%d)", out.Value)
	case Applied:
		r = fmt.Sprintf("ok %d", out.Value)
		if in.NoCount {
			r = "ok"
		}
	}
	who := in.Client
	if in.Owner != "" && !strings.HasPrefix(in.Owner, strings.SplitN(in.Client, "/", 2)[0]) {
		who += " permit " + shortID(in.Owner)
	}
	return html.EscapeString(fmt.Sprintf("%s %s → %s", who, f, r))
}

func shortID(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
