package wire

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// Shape is how to read one lock script's call and reply as the history's lock commands: which KEYS and
// ARGV positions carry the key, owner and lease, and what the reply means. Scripts whose texts differ
// (another Redisson version, lockcheck's commented copies, a user's override) share a shape when their
// contract is the same.
type Shape int

// The shapes of the scripts the wire recorder maps. Each records exactly what lockcheck's emulation
// records for the same command (F, key, owner, args, value), so the checkers take both unchanged.
const (
	// RLockAcquire: KEYS[1] lock; ARGV[1] lease ms, ARGV[2] owner. nil granted, else the holder's pttl.
	RLockAcquire Shape = iota + 1
	// FencedAcquire: as RLockAcquire, KEYS[2] the token counter; {-1, token} granted, {pttl, -1} refused.
	FencedAcquire
	// RLockRelease: KEYS[1] lock, KEYS[2] channel, KEYS[3] unlock latch (3.24+, absent before); ARGV[2]
	// lease ms, ARGV[3] owner. nil not held, 0 still held, 1 released.
	RLockRelease
	// RenewBatch (3.44+): KEYS[i] lock; ARGV[1] lease ms, ARGV[i+1] owner. One 1 or 0 per key.
	RenewBatch
	// RenewOne (up to 3.43): KEYS[1] lock; ARGV[1] lease ms, ARGV[2] owner. 1 renewed, 0 not ours.
	RenewOne
	// RWReadAcquire: KEYS[1] lock hash; ARGV[1] lease ms, ARGV[2] reader. nil granted, else the pttl. (The
	// write half's acquire and release have RLock's shapes.)
	RWReadAcquire
	// RWReadRelease (3.44+): KEYS[1] lock hash, KEYS[5] unlock latch; ARGV[2] reader. nil not held, 0 others
	// still hold it, 1 released. The lease is not sent (Redisson keeps it client-side): no lease_ms.
	RWReadRelease
	// RWReadRenewOne (up to 3.43): KEYS[1] lock hash; ARGV[1] lease ms, ARGV[2] reader. 1 or 0.
	RWReadRenewOne
	// RWReadRenewBatch (3.44–4.3): KEYS[2i-1] lock hash, KEYS[2i] its prefix; ARGV[1] lease ms, ARGV[i+1]
	// the reader. One 1 or 0 per lock.
	RWReadRenewBatch
	// RWReadRenewOwners (4.4.0+): KEYS[2i-1] lock hash, KEYS[2i] its prefix; ARGV[1] lease ms, then per lock
	// a count n and n readers. One 1 (some reader still held it: all renewed) or 0 (none) per lock. With
	// several readers a 1 does not say which held it: each reader's renewal is then unknown.
	RWReadRenewOwners
	// FairAcquireWait (lock, tryLock with a wait): KEYS[1] lock, KEYS[2] queue, KEYS[3] deadlines; ARGV[1]
	// lease ms, ARGV[2] owner, ARGV[3] the waiter's slot (wait) ms, ARGV[4] client now. nil or a wait ms.
	FairAcquireWait
	// FairAcquireNoWait (tryLock without a wait): ARGV[3] now and ARGV[4] slot swapped; nil or 1.
	FairAcquireNoWait
	// FairDequeue (acquireFailed): KEYS[1] queue, KEYS[2] deadlines; ARGV[1] owner, ARGV[2] slot ms. The
	// lock's name is read back from the queue key (redisson_lock_queue:{name}).
	FairDequeue
	// FairRelease: KEYS[1] lock, KEYS[5] unlock latch; ARGV[2] lease ms, ARGV[3] owner. nil, 0 or 1 (1
	// also for a lock that is gone).
	FairRelease
	// CompareDelete (the Redis docs' release, redsync's deleteScript): KEYS[1] lock; ARGV[1] owner (the
	// value it set). 1 deleted; 0 (someone else's) or -1 (gone) not held.
	CompareDelete
	// CompareExpire (redsync's touchScript): KEYS[1] lock; ARGV[1] owner, ARGV[2] lease ms. 1 or 0.
	CompareExpire
	// ExpireKeys (RedissonExpirable.expireAsync, MultiLock's and RedLock's final lease): KEYS[i] locks; ARGV[1]
	// lease ms. PEXPIRE with no owner check; 1 when some key was set, 0 when none existed.
	ExpireKeys
)

var shapeNames = map[Shape]string{RLockAcquire: "acquire", FencedAcquire: "fenced_acquire",
	RLockRelease: "release", RenewBatch: "renew", RenewOne: "renew-one", RWReadAcquire: "rw_read_acquire",
	RWReadRelease: "rw_read_release", RWReadRenewOne: "rw_read_renew", RWReadRenewBatch: "rw_read_renew-batch", RWReadRenewOwners: "rw_read_renew-owners",
	FairAcquireWait: "fair_acquire", FairAcquireNoWait: "fair_acquire-nowait", FairDequeue: "fair_acquire_failed",
	FairRelease: "fair_release", CompareDelete: "compare-delete", CompareExpire: "compare-expire", ExpireKeys: "expire"}

func (s Shape) String() string { return shapeNames[s] }

// Script is one known script text.
type Script struct {
	Shape  Shape
	Source string // where the text comes from: "redisson 3.19.0–4.7.0", "lockcheck redisson set", ...
	// GoneIsOne is set for unlocks that also answer 1 when the lock no longer exists (read-write unlocks
	// before Redisson 3.44.0): their 1 is recorded unknown, since it may mean released or gone.
	GoneIsOne bool
}

// Library is what the wire recorder knows of one lock library's scripts. The package that holds the
// library's scripts or drives its worker registers it (RegisterLibrary), so that this package, low in the
// stack, knows RESP and the shapes of lock scripts but no lock.
type Library struct {
	Name    string
	Scripts map[string]Script // by SHA-1 (lower-case hex)
	// Load, when set, gives scripts known only once read (lockcheck's embedded set, hashed from its text).
	// NewTable adds them after every library's Scripts, so they win a SHA-1 both name.
	Load     func() (map[string]Script, error)
	Ignored  map[string]string // SHA-1s of scripts the library sends that are no lock command, and what they are
	Unmapped []string          // its lock scripts the recorder does not turn into lock commands, and why
}

var (
	librariesMu sync.Mutex
	libraries   []Library // in registration order
)

// RegisterLibrary adds a library's scripts to every table NewTable makes from now on (one registration
// per library, from its package's init).
func RegisterLibrary(l Library) {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	libraries = append(libraries, l)
}

func registered() []Library {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	return slices.Clone(libraries)
}

// unmappedPlain are the plain commands the recorder never maps, whatever the library.
var unmappedPlain = []string{
	"plain DEL of a lock key (the naive lock's release): it names no owner; counted as \"DEL\" in Stats.Unmapped",
	"SET NX without PX/EX, SETNX, SET NX GET: no lease (or not a plain acquire); with Table.SetNX counted as \"SET NX\" in Stats.Unmapped",
}

// Unmapped lists the lock scripts the recorder does not turn into lock commands, and why; their calls are
// counted in Stats.Unmapped and those locks are judged at the API level. Plain commands are never mapped:
// SET NX PX could be an acquire, but the naive lock's DEL names no owner, so its release cannot be.
func Unmapped() []string {
	var out []string
	for _, l := range registered() {
		out = append(out, l.Unmapped...)
	}
	return append(out, unmappedPlain...)
}

// Table maps script SHA-1s to shapes.
type Table struct {
	bySHA   map[string]Script
	ignored map[string]string
	// SetNX maps a plain SET key value NX PX|EX to an acquire by owner value (replies OK or nil), for
	// locks whose release is a compare-and-delete script (the Redis docs' algorithm, redsync). Off by
	// default: a client that sets keys NX for other reasons would have them judged as locks.
	SetNX bool
}

// NewTable knows the scripts of every registered library (real Redisson's RLock and RFencedLock scripts
// from 3.11.0 to 4.7.0, lockcheck's own redisson set, redsync's, the naive worker's).
func NewTable() (*Table, error) {
	t := &Table{bySHA: map[string]Script{}, ignored: map[string]string{}}
	libs := registered()
	for _, l := range libs {
		maps.Copy(t.bySHA, l.Scripts)
		maps.Copy(t.ignored, l.Ignored)
	}
	for _, l := range libs {
		if l.Load == nil {
			continue
		}
		known, err := l.Load()
		if err != nil {
			return nil, fmt.Errorf("wire: %s scripts: %w", l.Name, err)
		}
		maps.Copy(t.bySHA, known)
	}
	return t, nil
}

// Add maps one script text to s (a --scripts override of a known script, a replayed set), so a user's
// script is recorded under the same contract as the one it replaces.
func (t *Table) Add(text string, s Script) { t.bySHA[SHA(text)] = s }

// Ignored says whether a script is known to be no lock command.
func (t *Table) Ignored(sha string) bool {
	_, ok := t.ignored[strings.ToLower(sha)]
	return ok
}

// Lookup finds a script by its SHA-1 (lower-case hex).
func (t *Table) Lookup(sha string) (Script, bool) {
	s, ok := t.bySHA[strings.ToLower(sha)]
	return s, ok
}

// SHAs lists the known SHA-1s, sorted.
func (t *Table) SHAs() []string {
	var out []string
	for k := range t.bySHA {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SHA is the SHA-1 Redis names a script text by.
func SHA(text string) string {
	h := sha1.Sum([]byte(text))
	return hex.EncodeToString(h[:])
}

// scriptCall is an EVAL or EVALSHA split into its parts.
type scriptCall struct {
	sha        string
	keys, argv []string
}

// parseScriptCall reads EVAL script|EVALSHA sha numkeys key... arg...; ok false if it is neither or malformed.
func parseScriptCall(c *Command) (scriptCall, bool) {
	var sc scriptCall
	switch c.Name {
	case "eval":
		sc.sha = SHA(string(c.Arg(0)))
	case "evalsha":
		sc.sha = strings.ToLower(string(c.Arg(0)))
	default:
		return sc, false
	}
	n, err := strconv.Atoi(string(c.Arg(1)))
	if err != nil || n < 0 || 2+n > len(c.Args) {
		return sc, false
	}
	for _, k := range c.Args[2 : 2+n] {
		sc.keys = append(sc.keys, string(k))
	}
	for _, a := range c.Args[2+n:] {
		sc.argv = append(sc.argv, string(a))
	}
	return sc, true
}

func (sc scriptCall) arg(i int) string {
	if i < len(sc.argv) {
		return sc.argv[i]
	}
	return ""
}

func (sc scriptCall) key(i int) string {
	if i < len(sc.keys) {
		return sc.keys[i]
	}
	return ""
}

// result is one lock command's outcome as the emulation records it.
type result struct {
	typ   history.Type
	value *int64
	err   string
}

// commands returns the lock commands a call of shape s records (before the reply is known) and how to read
// its reply; attempts gives how many earlier calls with an unlock request id (its latch key) may have run.
func (s Shape) commands(sc scriptCall, attempts func(latch string) int64) ([]history.Record, func(Value) []result) {
	ms := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	op := func(f, key, owner string, args map[string]int64) history.Record {
		return history.Record{Thread: ownerThread(owner), Key: key, Owner: owner, F: f, Args: args}
	}
	attempt := func() int64 {
		if l := s.latch(sc); l != "" {
			return attempts(l)
		}
		return 0 // an unlock without a latch (before Redisson 3.24.0) is never a repeat
	}
	switch s {
	case RLockAcquire, FencedAcquire:
		recs := []history.Record{op("acquire", sc.key(0), sc.arg(1), map[string]int64{"lease_ms": ms(sc.arg(0))})}
		return recs, func(v Value) []result { return []result{acquireResult(s, v)} }
	case RLockRelease:
		recs := []history.Record{op("release", sc.key(0), sc.arg(2), map[string]int64{"lease_ms": ms(sc.arg(1)), "attempt": attempt()})}
		return recs, func(v Value) []result { return []result{releaseResult(v)} }
	case RenewOne, RWReadRenewOne:
		args := map[string]int64{"lease_ms": ms(sc.arg(0))}
		if s == RWReadRenewOne {
			args["read"] = 1
		}
		recs := []history.Record{op("renew", sc.key(0), sc.arg(1), args)}
		recs[0].Thread = 0 // the watchdog's, as the emulation records it
		return recs, func(v Value) []result { return []result{renewResult(v)} }
	case RWReadAcquire:
		recs := []history.Record{op("acquire", sc.key(0), sc.arg(1), map[string]int64{"lease_ms": ms(sc.arg(0)), "read": 1})}
		return recs, func(v Value) []result { return []result{acquireResult(RLockAcquire, v)} }
	case RWReadRelease:
		recs := []history.Record{op("release", sc.key(0), sc.arg(1), map[string]int64{"attempt": attempt(), "read": 1})}
		return recs, func(v Value) []result { return []result{releaseResult(v)} }
	case RWReadRenewBatch:
		var recs []history.Record
		for i := 0; 2*i < len(sc.keys); i++ {
			r := op("renew", sc.keys[2*i], sc.arg(i+1), map[string]int64{"lease_ms": ms(sc.arg(0)), "read": 1})
			r.Thread = 0
			recs = append(recs, r)
		}
		return recs, batchResults(len(recs))
	case RWReadRenewOwners:
		var recs []history.Record
		var owners []int // readers per lock, in order
		arg := 1
		for i := 0; 2*i < len(sc.keys); i++ {
			n, err := strconv.Atoi(sc.arg(arg))
			if err != nil || n < 0 || arg+1+n > len(sc.argv) {
				break // malformed: record what was readable
			}
			for k := 0; k < n; k++ {
				r := op("renew", sc.keys[2*i], sc.arg(arg+1+k), map[string]int64{"lease_ms": ms(sc.arg(0)), "read": 1})
				r.Thread = 0
				recs = append(recs, r)
			}
			owners = append(owners, n)
			arg += 1 + n
		}
		return recs, func(v Value) []result {
			out := make([]result, 0, len(recs))
			for i, n := range owners {
				var r result
				switch {
				case v.IsError():
					r = result{typ: history.Fail, err: string(v.Str)}
				case i >= len(v.Elems):
					r = result{typ: history.Unknown, err: "renew: unexpected reply " + v.String()}
				default:
					r = renewResult(v.Elems[i])
					if r.typ == history.Ok && n > 1 {
						r = result{typ: history.Unknown, err: "renewed for one of several readers"}
					}
				}
				for range n {
					out = append(out, r)
				}
			}
			return out
		}
	case FairAcquireWait, FairAcquireNoWait:
		slot := sc.arg(2)
		if s == FairAcquireNoWait {
			slot = sc.arg(3)
		}
		recs := []history.Record{op("acquire", sc.key(0), sc.arg(1), map[string]int64{"lease_ms": ms(sc.arg(0)),
			"slot_ms": ms(slot), "fair": 1})}
		return recs, func(v Value) []result { return []result{acquireResult(RLockAcquire, v)} }
	case FairDequeue:
		recs := []history.Record{op("dequeue", lockOfQueue(sc.key(0)), sc.arg(0), map[string]int64{"slot_ms": ms(sc.arg(1)), "fair": 1})}
		return recs, func(v Value) []result {
			if v.IsError() {
				return []result{{typ: history.Fail, err: string(v.Str)}}
			}
			return []result{{typ: history.Ok}}
		}
	case FairRelease:
		recs := []history.Record{op("release", sc.key(0), sc.arg(2), map[string]int64{"lease_ms": ms(sc.arg(1)), "attempt": attempt(), "fair": 1})}
		return recs, func(v Value) []result { return []result{releaseResult(v)} }
	case CompareDelete:
		recs := []history.Record{op("release", sc.key(0), sc.arg(0), nil)}
		return recs, func(v Value) []result {
			switch {
			case v.IsError():
				return []result{{typ: history.Fail, err: string(v.Str)}}
			case v.Kind == Integer && v.Int == 1:
				return []result{{typ: history.Ok, value: history.Int64(1)}}
			case v.Kind == Integer && (v.Int == 0 || v.Int == -1):
				return []result{{typ: history.Fail, value: history.Int64(-1)}} // not held, as the emulation records it
			}
			return []result{unexpected("release", v)}
		}
	case CompareExpire:
		recs := []history.Record{op("renew", sc.key(0), sc.arg(0), map[string]int64{"lease_ms": ms(sc.arg(1))})}
		return recs, func(v Value) []result { return []result{renewResult(v)} }
	case RenewBatch:
		var recs []history.Record
		for i, k := range sc.keys {
			r := op("renew", k, sc.arg(i+1), map[string]int64{"lease_ms": ms(sc.arg(0))})
			r.Thread = 0
			recs = append(recs, r)
		}
		return recs, batchResults(len(recs))
	case ExpireKeys:
		var recs []history.Record
		for _, k := range sc.keys {
			recs = append(recs, op("expire", k, "", map[string]int64{"lease_ms": ms(sc.arg(0))}))
		}
		return recs, func(v Value) []result { return expireResults(len(recs), v) }
	}
	return nil, nil
}

// expireResults reads expireAsync's reply as the emulation records it (1 set, 0 no such key) for each key:
// with several keys a 1 says only that some key was set, so each is unknown.
func expireResults(n int, v Value) []result {
	var r result
	switch {
	case v.IsError():
		r = result{typ: history.Fail, err: string(v.Str)}
	case v.Kind == Integer && v.Int == 0:
		r = result{typ: history.Fail, value: history.Int64(0)}
	case v.Kind == Integer && v.Int == 1 && n == 1:
		r = result{typ: history.Ok, value: history.Int64(1)}
	case v.Kind == Integer && v.Int == 1:
		r = result{typ: history.Unknown, err: "expire: some of several keys set"}
	default:
		r = unexpected("expire", v)
	}
	out := make([]result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// batchResults reads a batched renewal's reply: one 1 or 0 per lock.
func batchResults(n int) func(Value) []result {
	return func(v Value) []result {
		out := make([]result, n)
		for i := range out {
			if v.IsError() {
				out[i] = result{typ: history.Fail, err: string(v.Str)}
			} else if i < len(v.Elems) {
				out[i] = renewResult(v.Elems[i])
			} else {
				out[i] = result{typ: history.Unknown, err: "renew: unexpected reply " + v.String()}
			}
		}
		return out
	}
}

// lockOfQueue is the lock a fair-lock queue key belongs to: Redisson's prefixName inverted. (A name that
// itself is wrapped in braces, "{x}", reads back as "x": prefixName gives both the same key.)
func lockOfQueue(queue string) string {
	name := strings.TrimPrefix(queue, "redisson_lock_queue:")
	if strings.HasPrefix(name, "{") && strings.HasSuffix(name, "}") && strings.Count(name, "{") == 1 {
		return name[1 : len(name)-1]
	}
	return name
}

// plainSetNX reads SET key value NX PX ms (or EX s, options in any order) as an acquire by owner value;
// ok false for any other SET.
func plainSetNX(c *Command) (history.Record, bool) {
	if c.Name != "set" || len(c.Args) < 4 {
		return history.Record{}, false
	}
	var nx bool
	var lease int64
	for i := 2; i < len(c.Args); i++ {
		switch strings.ToLower(string(c.Args[i])) {
		case "nx":
			nx = true
		case "px", "ex":
			if i+1 >= len(c.Args) {
				return history.Record{}, false
			}
			n, err := strconv.ParseInt(string(c.Args[i+1]), 10, 64)
			if err != nil || n <= 0 {
				return history.Record{}, false
			}
			if strings.EqualFold(string(c.Args[i]), "ex") {
				n *= 1000
			}
			lease = n
			i++
		default:
			return history.Record{}, false // GET, KEEPTTL, XX, PXAT...: not a plain acquire
		}
	}
	if !nx || lease == 0 {
		return history.Record{}, false
	}
	owner := string(c.Args[1])
	return history.Record{Thread: ownerThread(owner), Key: string(c.Args[0]), Owner: owner, F: "acquire",
		Args: map[string]int64{"lease_ms": lease}}, true
}

// setNXResult reads SET NX's reply: OK granted, nil held by someone (recorded as the emulation does, -2).
func setNXResult(v Value) []result {
	switch {
	case v.IsError():
		return []result{{typ: history.Fail, err: string(v.Str)}}
	case v.IsNil():
		return []result{{typ: history.Fail, value: history.Int64(-2)}}
	case v.Kind == Simple && string(v.Str) == "OK":
		return []result{{typ: history.Ok}}
	}
	return []result{unexpected("acquire", v)}
}

// latch is the unlock latch key of an unlock call (its request id), or "" for a shape or version without.
func (s Shape) latch(sc scriptCall) string {
	switch s {
	case RLockRelease:
		return sc.key(2)
	case RWReadRelease, FairRelease:
		return sc.key(4)
	}
	return ""
}

// ownerThread is the thread of a Redisson owner id <uuid>:<thread>, or a write half's <uuid>:<thread>:write
// (0 if it has none).
func ownerThread(owner string) int64 {
	owner = strings.TrimSuffix(owner, ":write")
	i := strings.LastIndex(owner, ":")
	if i < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(owner[i+1:], 10, 64)
	return n
}

func unexpected(what string, v Value) result {
	return result{typ: history.Unknown, err: fmt.Sprintf("%s: unexpected reply %s", what, v)}
}

func acquireResult(s Shape, v Value) result {
	switch {
	case v.IsError():
		return result{typ: history.Fail, err: string(v.Str)} // an error reply: the script did not run
	case s == RLockAcquire && v.IsNil():
		return result{typ: history.Ok}
	case s == RLockAcquire && v.Kind == Integer:
		return result{typ: history.Fail, value: history.Int64(v.Int)} // refused: the holder's pttl
	case s == FencedAcquire && len(v.Elems) == 2 && v.Elems[0].Kind == Integer && v.Elems[1].Kind == Integer:
		if v.Elems[0].Int == -1 {
			return result{typ: history.Ok, value: history.Int64(v.Elems[1].Int)} // the token
		}
		return result{typ: history.Fail, value: history.Int64(v.Elems[0].Int)}
	}
	return unexpected("acquire", v)
}

func releaseResult(v Value) result {
	switch {
	case v.IsError():
		return result{typ: history.Fail, err: string(v.Str)}
	case v.IsNil():
		return result{typ: history.Fail, value: history.Int64(-1)} // not held
	case v.Kind == Integer:
		return result{typ: history.Ok, value: history.Int64(v.Int)}
	}
	return unexpected("release", v)
}

func renewResult(v Value) result {
	switch {
	case v.IsError():
		return result{typ: history.Fail, err: string(v.Str)}
	case v.Kind == Integer && v.Int == 1:
		return result{typ: history.Ok, value: history.Int64(1)}
	case v.Kind == Integer && v.Int == 0:
		return result{typ: history.Fail, value: history.Int64(0)}
	}
	return unexpected("renew", v)
}
