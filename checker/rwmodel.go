package checker

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// RWState is a read-write lock: its writer and write holds, its readers (as "owner=holds;..." sorted, so
// the state stays comparable), and the window in which the whole hash's lease surely ends.
type RWState struct {
	Writer  string
	WHolds  int
	Readers string
	Lo, Hi  int64
}

func (s RWState) free() bool { return s.Writer == "" && s.Readers == "" }

// readerHolds is o's holds in a readers string. The model's step runs millions of times on a wide
// history (porcupine and the frontier both): the readers are read and rewritten in place, with no map.
func readerHolds(rs, o string) int {
	for rs != "" {
		var e string
		e, rs, _ = strings.Cut(rs, ";")
		if k, v, _ := strings.Cut(e, "="); k == o {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// withReader is the readers string with o's holds changed by d (an owner with none is left out), still
// sorted by owner.
func withReader(rs, o string, d int) string {
	var b strings.Builder
	b.Grow(len(rs) + len(o) + 4)
	put := func(k string, n int) {
		if n <= 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(n))
	}
	placed := false
	for rs != "" {
		var e string
		e, rs, _ = strings.Cut(rs, ";")
		k, v, _ := strings.Cut(e, "=")
		n, _ := strconv.Atoi(v)
		switch {
		case k == o:
			n += d
			placed = true
		case !placed && k > o:
			put(o, d)
			placed = true
		}
		put(k, n)
	}
	if !placed {
		put(o, d)
	}
	return b.String()
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
		s.Readers = withReader(s.Readers, o, 1)
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
			return s, mine == 0
		}
		if mine == 0 {
			return s, false
		}
		s.Readers = withReader(s.Readers, o, -1)
		others := s.Readers != "" || s.Writer != ""
		if out.Outcome == Applied && out.Value == 1 {
			return RWState{}, true // it was the last, or every other hold's timeout had run out
		}
		if out.Outcome == Applied && !others {
			return s, false
		}
		if !others {
			return RWState{}, true
		}
		s.Lo = min(s.Lo, in.Call) // the hash now lives as long as the longest remaining hold: unknown here
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
	for _, c := range cands {
		if a, ok := rwApply(c, in, out); ok && (out.Outcome != Unsure || a != s) {
			next = append(next, a)
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
		hi := "never"
		if s.Hi != math.MaxInt64 {
			hi = Secs(s.Hi)
		}
		return html.EscapeString(fmt.Sprintf("writer %q ×%d, readers {%s}; lease ends in [%s, %s]", s.Writer, s.WHolds,
			s.Readers, Secs(s.Lo), hi))
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
