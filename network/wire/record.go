package wire

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// Src marks the history records the wire recorder wrote.
const Src = "wire"

// Recorder is where lock commands go: history.Recorder.
type Recorder interface {
	Invoke(rec history.Record) *history.Op
}

// Session records the lock commands of every link of one run into one history.
type Session struct {
	rec   Recorder
	table *Table
	now   func() int64

	mu       sync.Mutex
	latches  map[string]int64 // unlock latch key -> attempts seen (a repeat reuses its request id)
	unmapped map[string]int   // SHA-1 of a script the table does not know (or "DEL") -> calls
	plain    map[string]bool  // keys a plain SET NX PX took (Table.SetNX)
	gaveUp   []string
	taps     []*Tap
	conns    int64
}

// NewSession records into rec, on clock, mapping scripts with table.
func NewSession(rec Recorder, clock history.Clock, table *Table) *Session {
	return &Session{rec: rec, table: table, now: clock.Now, latches: map[string]int64{}, unmapped: map[string]int{},
		plain: map[string]bool{}}
}

// Stats says what the session could not record.
type Stats struct {
	Conns    int64          // connections followed
	Unmapped map[string]int // scripts (by SHA-1) called but not known: those commands are not in the history
	GaveUp   []string       // connections the matcher stopped following, and why: their later commands are missing
}

// Stats returns what the session could not record so far.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Conns: s.conns, Unmapped: map[string]int{}, GaveUp: append([]string(nil), s.gaveUp...)}
	for k, v := range s.unmapped {
		st.Unmapped[k] = v
	}
	sort.Strings(st.GaveUp)
	return st
}

// Problem is one line saying what the wire history misses, or "" when it misses nothing: a runner prints
// it, and should not call a run valid on a wire history that misses lock commands.
func (st Stats) Problem() string {
	var parts []string
	if len(st.Unmapped) > 0 {
		var calls []string
		for k, n := range st.Unmapped {
			calls = append(calls, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(calls)
		parts = append(parts, "calls of unknown lock scripts not recorded: "+strings.Join(calls, ", "))
	}
	if len(st.GaveUp) > 0 {
		parts = append(parts, fmt.Sprintf("%d connections not followed to the end (%s)", len(st.GaveUp), st.GaveUp[0]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "wire: " + strings.Join(parts, "; ")
}

// attempts counts a call with an unlock latch and returns how many calls with that request id came before
// it that may have run: those in flight or answered, not those refused with an error.
func (s *Session) attempts(latch string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.latches[latch]
	s.latches[latch] = n + 1
	return n
}

// refused uncounts a call with an unlock latch that was answered with an error (e.g. go-redis's EVALSHA
// answered NOSCRIPT, after which it sends EVAL): it never ran, so the next call is no repeat.
func (s *Session) refused(latch string) {
	s.mu.Lock()
	if s.latches[latch] > 0 {
		s.latches[latch]--
	}
	s.mu.Unlock()
}

// forgetLatch drops a latch key once the client deletes it (Redisson's async DEL after an unlock request).
func (s *Session) forgetLatch(key string) {
	s.mu.Lock()
	delete(s.latches, key)
	s.mu.Unlock()
}

func (s *Session) notePlainKey(key string) {
	s.mu.Lock()
	s.plain[key] = true
	s.mu.Unlock()
}

func (s *Session) plainKey(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plain[key]
}

func (s *Session) noteUnmapped(sha string) {
	s.mu.Lock()
	s.unmapped[sha]++
	s.mu.Unlock()
}

func (s *Session) noteGaveUp(conn string, err error) {
	s.mu.Lock()
	s.gaveUp = append(s.gaveUp, conn+": "+err.Error())
	s.mu.Unlock()
}

// connRecorder turns one connection's exchanges into history operations.
type connRecorder struct {
	s            *Session
	client, node string
	last         *Command // the previous command: a WAIT right after a lock script is that script's sync
}

// scriptOps is the state of a mapped script call: its operations, how to read its reply, and, when a WAIT
// follows it, the reply held until the WAIT answers.
type scriptOps struct {
	ops    []*history.Op
	read   func(Value) []result
	latch  string // an unlock's request id key: a call answered with an error never ran, so is no attempt
	waited bool
	reply  *Value
	done   bool
}

// waitOf marks a WAIT that syncs a script call.
type waitOf struct{ script *scriptOps }

func (r *connRecorder) Command(c *Command) {
	defer func() { r.last = c }()
	switch c.Name {
	case "wait":
		if r.last != nil {
			if so, ok := r.last.Data.(*scriptOps); ok && !so.done && so.reply == nil {
				so.waited = true
				c.Data = waitOf{so}
			}
		}
		return
	case "del", "unlink":
		for _, k := range c.Args {
			r.s.forgetLatch(string(k))
			if r.s.plainKey(string(k)) {
				r.s.noteUnmapped("DEL") // a plain lock's release with no owner: the history misses it
			}
		}
		return
	case "set":
		if rec, ok := plainSetNX(c); ok && r.s.table.SetNX {
			r.s.notePlainKey(rec.Key)
			rec.Client, rec.Node, rec.Src = r.client, r.node, Src
			c.Data = &scriptOps{ops: []*history.Op{r.s.rec.Invoke(rec)}, read: setNXResult}
		} else if r.s.table.SetNX && setsNX(c) {
			// An acquire the history would miss (no lease, GET...): its release would then look illegal.
			r.s.noteUnmapped("SET NX")
		}
		return
	case "setnx":
		if r.s.table.SetNX {
			r.s.noteUnmapped("SET NX")
		}
		return
	}
	sc, ok := parseScriptCall(c)
	if !ok {
		return
	}
	script, ok := r.s.table.Lookup(sc.sha)
	if !ok {
		if !r.s.table.Ignored(sc.sha) {
			r.s.noteUnmapped(sc.sha)
		}
		return
	}
	recs, read := script.Shape.commands(sc, r.s.attempts)
	if script.GoneIsOne {
		read = goneIsOne(read)
	}
	so := &scriptOps{read: read, latch: script.Shape.latch(sc)}
	for _, rec := range recs {
		rec.Client, rec.Node, rec.Src = r.client, r.node, Src
		so.ops = append(so.ops, r.s.rec.Invoke(rec))
	}
	c.Data = so
}

func (r *connRecorder) Reply(c *Command, v Value) {
	switch d := c.Data.(type) {
	case *scriptOps:
		if v.IsError() && d.latch != "" {
			r.s.refused(d.latch)
		}
		if d.waited && !v.IsError() {
			d.reply = &v // settled by the WAIT's answer
			return
		}
		d.complete(v, false)
	case waitOf:
		if d.script.reply != nil {
			// Redisson's NoSyncedSlavesException: no replica acknowledged (or WAIT failed), so a failover may
			// lose the write, as the emulation records it.
			d.script.complete(*d.script.reply, !(v.Kind == Integer && v.Int > 0))
		}
	}
}

func (r *connRecorder) Lost(c *Command, why error) {
	switch d := c.Data.(type) {
	case *scriptOps:
		if d.reply == nil && !d.done {
			d.done = true
			for _, op := range d.ops {
				op.Unknown(why)
			}
		}
	case waitOf:
		if d.script.reply != nil {
			d.script.complete(*d.script.reply, true) // it ran; whether a replica has it is unknown
		}
	}
}

// setsNX says whether a SET carries NX.
func setsNX(c *Command) bool {
	for _, a := range c.Args[min(2, len(c.Args)):] {
		if strings.EqualFold(string(a), "nx") {
			return true
		}
	}
	return false
}

// goneIsOne records an unlock's 1 as unknown: the script answers 1 both when it released the lock and
// when the lock no longer existed.
func goneIsOne(read func(Value) []result) func(Value) []result {
	return func(v Value) []result {
		res := read(v)
		for i, r := range res {
			if r.typ == history.Ok && r.value != nil && *r.value == 1 {
				res[i] = result{typ: history.Unknown, err: "1: released, or the lock was already gone"}
			}
		}
		return res
	}
}

func (so *scriptOps) complete(v Value, nosync bool) {
	if so.done {
		return
	}
	so.done = true
	res := so.read(v)
	for i, op := range so.ops {
		r := res[i]
		var args map[string]int64 // recorded with an ok only
		if nosync {
			args = map[string]int64{"nosync": 1}
		}
		var err error
		if r.err != "" {
			err = errors.New(r.err)
		}
		op.Complete(r.typ, r.value, args, err)
	}
}

func connName(client, node string, n int64) string {
	return client + "->" + node + "#" + strconv.FormatInt(n, 10)
}
