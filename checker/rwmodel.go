package checker

import (
	"fmt"
	"hash/fnv"
	"html"
	"math"
	"sort"
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

func readers(s string) map[string]int {
	m := map[string]int{}
	for _, kv := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k], _ = strconv.Atoi(v)
		}
	}
	return m
}

func readersString(m map[string]int) string {
	var keys []string
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// rwApply returns the state after a read-write command, and whether its reply is legal.
func rwApply(s RWState, in Command, out Reply) (RWState, bool) {
	o := in.Owner
	rs := readers(s.Readers)
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
		rs[o]++
		s.Readers = readersString(rs)
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
			return s, rs[o] == 0
		}
		if rs[o] == 0 {
			return s, false
		}
		rs[o]--
		s.Readers = readersString(rs)
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
			return s, rs[o] == 0
		}
		if rs[o] == 0 {
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
		h := fnv.New64a()
		fmt.Fprintf(h, "%+v", state.(RWState))
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
