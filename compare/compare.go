// Package compare measures the Redlock-or-single-node question: every lock of a list meets every scenario of
// the reference table (Kleppmann/antirez, S1–S11) on the same seeds and fault plans, through the suite
// engine, and the outcome of each cell is set beside what the literature predicts.
package compare

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/suite"
)

// Class is the reference table's column a lock belongs to; its predictions are per class.
type Class string

const (
	OneNode       Class = "1N"  // SET NX PX on one master (also Redisson's RLock on one node)
	Replicated    Class = "RS"  // Redisson RLock on master+replicas with WAIT
	Redlock       Class = "RL"  // spec Redlock over independent masters
	RedissonRL    Class = "RRL" // Redisson RedissonRedLock
	Fenced        Class = "F"   // a lock plus a resource that refuses stale tokens
	ThirdParty    Class = ""    // a user's lock or client: no prediction
	Violates            = "violates"
	Safe                = "safe"
	Mitigated           = "mitigated" // the reference expects it safe in the common case, unsafe in named corners
	NotApplicable       = "n/a"
)

// Lock is one row: how to run it and which column of the reference it is.
type Lock struct {
	Name  string
	Class Class
	Args  []string // run flags naming the lock, client or spec, and its topology
	// Lease makes its lease 2 s, however the lock spells it (--watchdog for a watchdog lock,
	// --lease for a fixed one), so the scenarios' faults outlast it alike.
	Lease      []string
	Replicated bool // on sentinel or cluster: failover scenarios apply
	What       string
	Renews     bool // a watchdog renews its lease, so holds may outlast it
	// Extends: the application extends a fixed lease itself (a worker library with no watchdog does, in
	// holds longer than a third of the lease), so an extend can come after the lease lapsed (S11).
	Extends bool
	// Judge names the checkers whose invalid verdict counts as a violation of this lock; empty: any. A fenced
	// lock is judged by its resource (a lost lock whose stale writes are refused is what fencing is for).
	Judge []string
	// Only names the scenarios a row takes part in (empty: every one): a primitive there for one scenario
	// (S9's client-clock locks) adds no runs to the other columns.
	Only []string
	// Base is the row this one repeats on another server (--servers): its predictions are the base row's.
	Base string
	// Startup is what a run of this row spends before its workload begins beyond a Go client's (a JVM
	// worker's start-up): the estimate counts it.
	Startup time.Duration
	// Named rows run only when --locks names them: the real libraries' JVMs and builds would triple the
	// default table's time.
	Named bool
}

// Topology is the topology the row's runs get (the run's default, single, when its flags name none).
func (l Lock) Topology() string {
	if i := slices.Index(l.Args, "--topology"); i >= 0 && i+1 < len(l.Args) {
		return l.Args[i+1]
	}
	return "single"
}

// Server is the --server the row's runs get ("" for the run's default, the host's redis-server).
func (l Lock) Server() string {
	if i := slices.Index(l.Args, "--server"); i >= 0 && i+1 < len(l.Args) {
		return l.Args[i+1]
	}
	return ""
}

// Settings are a team's own lease, watchdog, hold and client count, passed through to every cell: a row
// takes the lease or the watchdog, whichever its lock is timed by ("" or 0: the row's default).
type Settings struct {
	Lease, Watchdog, Hold string
	Clients               int
	// Rows are leases given per row (--row-lease ROW=D, by the row's name or, for a row repeated per
	// server, its base row's): that row's lease or watchdog, whichever it is timed by, over Lease and
	// Watchdog. Teams that run several libraries rarely give them one lease.
	Rows map[string]string `json:",omitempty"`
}

// Shown are the settings as compare's flags, as the table and the answer name them: Args, then the
// per-row leases by row name.
func (s Settings) Shown() []string {
	out := s.Args()
	for _, n := range slices.Sorted(maps.Keys(s.Rows)) {
		out = append(out, "--row-lease", n+"="+s.Rows[n])
	}
	return out
}

// CheckRows refuses a per-row lease for a row that is not among ls (a misspelt name would leave that row
// on the shared lease unnoticed).
func (s Settings) CheckRows(ls []Lock) error {
	for _, n := range slices.Sorted(maps.Keys(s.Rows)) {
		if !slices.ContainsFunc(ls, func(l Lock) bool { return l.Name == n || l.Base == n }) {
			return fmt.Errorf("--row-lease %s=%s: no row %s among the rows run (%s)", n, s.Rows[n], n, strings.Join(lockNamesOf(ls), ", "))
		}
	}
	return nil
}

// Args are the run flags of the settings given to every cell, in the order they are shown.
func (s Settings) Args() []string {
	var out []string
	for _, f := range [][2]string{{"--lease", s.Lease}, {"--watchdog", s.Watchdog}, {"--hold", s.Hold}} {
		if f[1] != "" {
			out = append(out, f[0], f[1])
		}
	}
	if s.Clients > 0 {
		out = append(out, "--clients", strconv.Itoa(s.Clients))
	}
	return out
}

// lease is the row's lease flag under s: the team's value for that row, else for the flag the row is timed
// by, else the row's.
func (s Settings) lease(l Lock) []string {
	if len(l.Lease) != 2 {
		return l.Lease
	}
	d, ok := s.Rows[l.Name]
	if !ok && l.Base != "" {
		d, ok = s.Rows[l.Base]
	}
	switch {
	case ok:
		return []string{l.Lease[0], d}
	case l.Lease[0] == "--lease" && s.Lease != "":
		return []string{"--lease", s.Lease}
	case l.Lease[0] == "--watchdog" && s.Watchdog != "":
		return []string{"--watchdog", s.Watchdog}
	}
	return l.Lease
}

// rest is what the settings pass to every cell besides its lease: hold and clients. They come after the
// scenario's flags, so the team's hold wins over a scenario's.
func (s Settings) rest() []string {
	return Settings{Hold: s.Hold, Clients: s.Clients}.Args()
}

// Scenario is one column: a fault schedule that hits the lock where the reference says, and the predictions.
type Scenario struct {
	ID, Name string
	Args     []string         // the fault schedule (run flags)
	Time     string           // run length: at least the schedule's minimum
	Needs    func(Lock) bool  // nil: every lock; else the locks the scenario applies to
	Predict  map[Class]string // the reference's outcome per class
	// PredictLock overrides Predict for a lock whose class's reasoning does not hold here, where the
	// reference's reasoning for another class does (Redisson's watchdog on one node, in S11).
	PredictLock map[string]string
	Quick       bool   // in --quick
	Why         string // how the schedule realises the scenario
}

// Locks are the default rows.
var Locks = []Lock{
	{Name: "naive", Class: OneNode, Args: []string{"--lock", "naive"}, Lease: []string{"--lease", "2s"}, What: "SET NX PX, unconditional DEL, one node"},
	{Name: "rlock-single", Renews: true, Class: OneNode, Args: []string{"--lock", "reentrant", "--topology", "single"}, Lease: []string{"--watchdog", "2s"}, What: "Redisson RLock (emulation) on one node"},
	{Name: "rlock-sentinel", Renews: true, Class: Replicated, Args: []string{"--lock", "reentrant", "--topology", "sentinel"}, Lease: []string{"--watchdog", "2s"}, Replicated: true, What: "Redisson RLock on Sentinel, WAIT for a replica"},
	{Name: "rlock-cluster", Renews: true, Class: Replicated, Args: []string{"--lock", "reentrant", "--topology", "cluster"}, Lease: []string{"--watchdog", "2s"}, Replicated: true, What: "Redisson RLock on Cluster, WAIT for a replica"},
	{Name: "redisson-redlock", Renews: true, Class: RedissonRL, Args: []string{"--lock", "redlock", "--topology", "redlock"}, Lease: []string{"--watchdog", "2s"}, What: "Redisson RedissonRedLock over 5 masters"},
	{Name: "redlock-spec", Class: Redlock, Args: []string{"--lock", "redlock-spec", "--topology", "redlock"}, Lease: []string{"--lease", "2s"}, What: "Redlock as the Redis docs specify, 5 masters"},
	{Name: "redsync-redlock", Class: Redlock, Args: []string{"--client", "redsync", "--topology", "redlock"}, Lease: []string{"--lease", "2s"}, Extends: true,
		What: "redsync (the real Go library, --client redsync) over 5 masters: spec Redlock"},
	{Name: "redisson-sentinel", Renews: true, Class: Replicated, Args: []string{"--client", "redisson", "--topology", "sentinel"}, Lease: []string{"--watchdog", "2s"}, Replicated: true,
		What: "Redisson RLock (the real Java library, --client redisson) on Sentinel", Startup: jvm},
	// The real libraries on the topologies their users run them on: a team choosing between RedLock and
	// Sentinel compares these rows, not the emulations.
	{Name: "redisson-redlock-lib", Named: true, Renews: true, Class: RedissonRL, Args: []string{"--client", "redisson", "--lock", "redlock", "--topology", "redlock"}, Lease: []string{"--watchdog", "2s"},
		What: "RedissonRedLock (the real Java library) over 5 masters, one Redisson per master", Startup: jvm},
	{Name: "redisson-multilock-lib", Named: true, Renews: true, Class: ThirdParty, Args: []string{"--client", "redisson", "--lock", "multi", "--topology", "redlock"}, Lease: []string{"--watchdog", "2s"},
		What: "RedissonMultiLock (the real Java library): all of its keys, on the first of the 5 masters", Startup: jvm},
	{Name: "node-redlock", Named: true, Class: Redlock, Args: []string{"--client", "node-redlock", "--topology", "redlock"}, Lease: []string{"--lease", "2s"}, Extends: true,
		What: "npm redlock (the real Node.js library) over 5 masters: spec Redlock", Startup: script},
	{Name: "pottery-redlock", Named: true, Class: Redlock, Args: []string{"--client", "pottery", "--topology", "redlock"}, Lease: []string{"--lease", "2s"}, Extends: true,
		What: "pottery's Redlock (the real Python library) over 5 masters", Startup: script},
	{Name: "redis-py-sentinel", Named: true, Class: Replicated, Args: []string{"--client", "redis-py", "--topology", "sentinel"}, Lease: []string{"--lease", "2s"}, Extends: true, Replicated: true,
		What: "redis-py's Lock (the real Python library) through Sentinel: SET NX PX on the primary, no WAIT", Startup: script},
	{Name: "redislock-sentinel", Named: true, Class: Replicated, Args: []string{"--client", "redislock", "--topology", "sentinel"}, Lease: []string{"--lease", "2s"}, Extends: true, Replicated: true,
		What: "bsm/redislock (the real Go library) through Sentinel: SET NX PX on the primary, no WAIT"},
	// The four libraries of issue 39, on the topologies their workers serve. A row on Sentinel that takes its
	// lock on the primary with no WAIT is the reference's 1N column ("violates when deployed on Sentinel"),
	// not RS (Redisson's WAIT).
	{Name: "python-redis-lock-single", Named: true, Class: OneNode, Args: []string{"--client", "python-redis-lock", "--topology", "single"}, Lease: []string{"--lease", "2s"}, Extends: true,
		What: "python-redis-lock's Lock (the real Python library) on one node: SET NX EX, whole-second expire", Startup: script},
	{Name: "python-redis-lock-sentinel", Named: true, Class: OneNode, Args: []string{"--client", "python-redis-lock", "--topology", "sentinel"}, Lease: []string{"--lease", "2s"}, Extends: true, Replicated: true,
		What: "python-redis-lock's Lock (the real Python library) through Sentinel: SET NX EX on the primary, no WAIT", Startup: script},
	// aioredlock checks the validity (lease - elapsed - drift) as the spec does, but its extend re-runs the
	// acquire script, which also sets a key that expired and is free: the reference's "WithSetNXOnExtend"
	// case of S11 (its PredictLock there).
	{Name: "aioredlock-redlock", Named: true, Class: Redlock, Args: []string{"--client", "aioredlock", "--topology", "redlock"}, Lease: []string{"--lease", "2s"}, Extends: true,
		What: "aioredlock (the real Python asyncio Redlock) over 5 masters: validity checked, extend sets a free key", Startup: script},
	{Name: "redis-semaphore-single", Named: true, Renews: true, Class: OneNode, Args: []string{"--client", "redis-semaphore", "--topology", "single"}, Lease: []string{"--watchdog", "2s"},
		What: "redis-semaphore's Mutex (the real Node.js library) on one node: its refresh as the watchdog, onLockLost as lost events", Startup: script},
	// RedlockMutex takes a majority with no validity check of the time that took: the reference's RRL column
	// (S2 violates). Both redis-semaphore rows renew by a timer inside the holder's process, as Redisson's
	// watchdog: S11's pause freezes it past the lease, and onLockLost tells the holder only at its resume,
	// after the overlap (so the one-node row's S11 is rlock-single's, its PredictLock there).
	{Name: "redis-semaphore-redlock", Named: true, Renews: true, Class: RedissonRL, Args: []string{"--client", "redis-semaphore", "--topology", "redlock"}, Lease: []string{"--watchdog", "2s"},
		What: "redis-semaphore's RedlockMutex (the real Node.js library) over 5 masters: majority, no validity check, refresh as the watchdog", Startup: script},
	{Name: "spring-integration-single", Named: true, Class: OneNode, Args: []string{"--client", "spring-integration", "--topology", "single"}, Lease: []string{"--lease", "2s"}, Extends: true,
		What: "Spring Integration's RedisLockRegistry (the real Java library) on one node: expireAfter as the lease, renewLock as extend; one JVM per client", Startup: jvm},
	{Name: "fenced-sentinel", Renews: true, Class: Fenced, Args: []string{"--lock", "fenced", "--topology", "sentinel"}, Lease: []string{"--watchdog", "2s"}, Replicated: true,
		What: "Redisson RFencedLock on Sentinel: its token counter fails over with the lock", Judge: []string{"mutual-exclusion", "fencing-tokens"}},
	{Name: "fenced", Renews: true, Class: Fenced, Args: []string{"--lock", "fenced", "--topology", "single"}, Lease: []string{"--watchdog", "2s"}, What: "Redisson RFencedLock, the resource refuses stale tokens",
		Judge: []string{"mutual-exclusion", "fencing-tokens"}},
	// S9's rows: the Redisson primitives whose scripts take the client's wall clock (the reference's Redisson
	// column). The fair lock's loss is fairness, so the fifo checker judges it. Its waiters' deadlines are
	// anchored at the first waiter's lease + wait and never re-based while the queue stays busy, so with a
	// 2 s lease and a 5 s wait they lapse after about 7 s of contention without any fault; a 3 s lease and a
	// 10 s wait keep that past the run.
	{Name: "pes", Class: Replicated, Args: []string{"--lock", "expirable-semaphore", "--permits", "1"}, Lease: []string{"--lease", "2s"},
		What: "Redisson RPermitExpirableSemaphore (emulation), 1 permit: permit deadlines in client time", Only: []string{"S9"}},
	{Name: "fair", Class: Replicated, Args: []string{"--lock", "fair", "--wait", "10s"}, Lease: []string{"--watchdog", "3s"}, What: "Redisson RFairLock (emulation): waiter deadlines in client time",
		Judge: []string{"fifo"}, Only: []string{"S9"}},
}

// Start-up beyond a Go client's, for the estimate (measured here: a Redisson JVM 15-25 s, Spring Integration's
// eight JVMs, one per client, 12-21 s at a load average of 20, Python and Node 2-4 s).
const (
	jvm    = 20 * time.Second
	script = 3 * time.Second
)

// QuickLocks are the rows of --quick.
var QuickLocks = []string{"naive", "rlock-single", "rlock-sentinel", "redlock-spec", "fenced"}

// Scenarios are the columns: every scenario of the reference table; Unmeasured names any that no fault
// expresses yet, and why.
var Scenarios = []Scenario{
	{ID: "S1", Name: "pause after acquire", Quick: true, Time: "8s",
		Args:    []string{"--nemesis", "client-pause", "--nemesis-trigger", "--nemesis-interval", "1s", "--nemesis-duration", "4s"},
		Why:     "client-pause, triggered by a grant: the client just granted freezes there, watchdog included, for 4 s (leases are 2 s)",
		Predict: map[Class]string{OneNode: Violates, Replicated: Violates, Redlock: Violates, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S2", Name: "pause during acquisition", Quick: true, Time: "10s",
		Args:    []string{"--nemesis", "hold-replies", "--nemesis-trigger", "--nemesis-interval", "1s", "--nemesis-duration", "3s", "--timeout", "5s"},
		Why:     "hold-replies, fired by a release (the lock just became free): every client's commands reach the nodes and apply, their replies wait at the proxies for 3 s (leases are 2 s, the command timeout 5 s), so whoever took the free lock reads its grant after the lease, and another takes it at the heal",
		Predict: map[Class]string{OneNode: Violates, Replicated: Violates, Redlock: Safe, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S3", Name: "delay between holder and resource", Time: "10s",
		Args:    []string{"--nemesis", "resource-delay", "--nemesis-trigger", "--nemesis-interval", "1s", "--nemesis-duration", "3s"},
		Why:     "resource-delay, fired by a grant: the holder's writes to the protected resource (the harness's) land 3 s after it sent them, after it released the lock and its 2 s lease ended, while others hold it",
		Predict: map[Class]string{OneNode: Violates, Replicated: Violates, Redlock: Violates, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S4", Name: "clock jump on a node", Quick: true, Time: "8s",
		Args:    []string{"--nemesis", "clock", "--nemesis-interval", "1s", "--nemesis-duration", "1s"},
		Why:     "clock: a majority of the nodes' wall clocks jump ahead by a minute (clockshift), so their leases end",
		Predict: map[Class]string{OneNode: Violates, Replicated: Violates, Redlock: Violates, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S5", Name: "crash and fast restart, no persistence", Quick: true, Time: "8s",
		Args:    []string{"--nemesis", "kill", "--persistence", "none", "--nemesis-interval", "1s", "--nemesis-duration", "200ms", "--hold", "1300ms-1900ms"},
		Why:     "kill: SIGKILL of one node, restarted empty at once (down about 1.1 s here, before Sentinel would promote a replica), while holds last 1.3-1.9 s of a 2 s lease",
		Predict: map[Class]string{OneNode: Violates, Replicated: Violates, Redlock: Violates, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S6", Name: "failover, asynchronous replication", Quick: true, Time: "12s",
		Args:    []string{"--nemesis", "failover", "--nemesis-interval", "2s", "--nemesis-duration", "6s"},
		Needs:   func(l Lock) bool { return l.Replicated },
		Why:     "failover: the primary is cut from its replicas and Sentinels while some clients still reach it; a replica is promoted",
		Predict: map[Class]string{OneNode: Violates, Replicated: Mitigated, Redlock: Safe, RedissonRL: Safe, Fenced: Safe}},
	{ID: "S7", Name: "holder partitioned from Redis", Quick: true, Time: "10s",
		Args:    []string{"--nemesis", "partition", "--nemesis-trigger", "--nemesis-interval", "1s", "--nemesis-duration", "4s", "--hold", "3s-5s"},
		Needs:   func(l Lock) bool { return l.Renews },
		Why:     "partition, triggered by a grant: the holder just granted loses every link for 4 s while holds last 3-5 s on 2 s leases kept by renewal, so renewals fail and leases end while they hold (locks that do not renew cannot hold past their lease at all: n/a)",
		Predict: map[Class]string{OneNode: Violates, Replicated: Violates, Redlock: Violates, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S8", Name: "clock drift on nodes", Time: "10s",
		Args:    []string{"--nemesis", "clock-drift", "--nemesis-interval", "1s", "--nemesis-duration", "6s", "--hold", "1500ms-1900ms"},
		Why:     "clock-drift: a majority of the nodes' clocks run 25 % fast (clockshift's drift mode: a rate, not a jump) for 6 s, so a 2 s lease there ends after 1.6 s, while holds last 1.5-1.9 s, inside the lease as the client counts it",
		Predict: map[Class]string{OneNode: NotApplicable, Replicated: NotApplicable, Redlock: Violates, RedissonRL: Violates, Fenced: Safe}},
	{ID: "S9", Name: "client clock skew", Time: "10s",
		Args:  []string{"--nemesis", "client-clock", "--nemesis-trigger", "--nemesis-interval", "500ms", "--nemesis-duration", "1s"},
		Needs: func(l Lock) bool { return slices.Contains(l.Only, "S9") },
		Why: "client-clock, fired by an acquire attempt: the client about to send an acquire script (its first or a retry while it waits) has its wall clock jump a minute ahead or behind (the sign drawn per fault, about six faults a run) for 1 s; " +
			"the expirable semaphore's permit deadlines and the fair lock's waiter deadlines are that client's time, so a client ahead reclaims " +
			"others' live permits or purges live waiters, one behind stamps deadlines already past (rows whose scripts take no client time: n/a)",
		Predict: map[Class]string{Replicated: Violates}},
	{ID: "S10", Name: "token regression on failover", Time: "14s",
		Args:    []string{"--nemesis", "lagging-failover", "--nemesis-trigger", "--nemesis-interval", "1s", "--nemesis-duration", "9s", "--hold", "2s-5s"},
		Needs:   func(l Lock) bool { return l.Replicated },
		Why:     "lagging-failover: one replica's stream is held (WAIT still counts the other), and right after a grant the primary is isolated and the lagging replica promoted, without the last lock writes and token INCRs; holds of 2-5 s outlast the promotion, so the holder is still inside when another takes the lock there",
		Predict: map[Class]string{Replicated: Violates, Fenced: Violates}},
	{ID: "S11", Name: "extend after the lease lapsed", Time: "10s",
		Args:        []string{"--nemesis", "client-pause", "--nemesis-targets", "all", "--nemesis-interval", "1s", "--nemesis-duration", "4s", "--hold", "1s-1500ms"},
		Needs:       func(l Lock) bool { return l.Renews || l.Extends || l.Class == ThirdParty },
		Why:         "client-pause of every client at its next grant for 4 s (leases 2 s); holds of 1-1.5 s are kept by a watchdog or by the application's extends (one every third of the lease, before each write), so the first renewal after the resume comes after the lease lapsed and others held the lock: a library that reports the failed extend stops, one that does not writes on (locks that neither renew nor extend: n/a)",
		Predict:     map[Class]string{OneNode: Safe, Replicated: Violates, Redlock: Safe, RedissonRL: Violates, Fenced: Safe},
		PredictLock: map[string]string{"rlock-single": Violates, "redis-semaphore-single": Violates, "aioredlock-redlock": Violates}},
}

// Unmeasured are the reference's scenarios no fault of lockcheck expresses yet, with what is missing.
var Unmeasured = map[string]string{}

// Select picks locks and scenarios by name ("" = the defaults or --quick's).
func Select(lockNames, scenarioIDs string, quick bool) ([]Lock, []Scenario, error) {
	var ls []Lock
	names := split(lockNames)
	if len(names) == 0 && quick {
		names = QuickLocks
	}
	for _, l := range Locks {
		if len(names) == 0 && !l.Named || slices.Contains(names, l.Name) {
			ls = append(ls, l)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(Locks, func(l Lock) bool { return l.Name == n }) {
			return nil, nil, fmt.Errorf("--locks: no lock %q (have %s)", n, strings.Join(lockNamesOf(Locks), ", "))
		}
	}
	var ss []Scenario
	ids := split(scenarioIDs)
	for _, id := range ids {
		if why, ok := Unmeasured[id]; ok {
			return nil, nil, fmt.Errorf("--scenarios: %s is not measured yet: %s", id, why)
		}
		if !slices.ContainsFunc(Scenarios, func(s Scenario) bool { return s.ID == id }) {
			return nil, nil, fmt.Errorf("--scenarios: no scenario %q (S1 to S11)", id)
		}
	}
	for _, s := range Scenarios {
		if (len(ids) == 0 && (!quick || s.Quick)) || slices.Contains(ids, s.ID) {
			ss = append(ss, s)
		}
	}
	return ls, ss, nil
}

func lockNamesOf(ls []Lock) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Suite is the matrix as a suite: one case per lock, scenario and seed, each expecting any verdict (the cells
// are findings, not failures). A scenario that does not apply to a lock has no case.
func Suite(ls []Lock, ss []Scenario, seeds int, set Settings, extra []string) *suite.Suite {
	s := &suite.Suite{Name: "compare"}
	for _, l := range ls {
		for _, sc := range ss {
			if !sc.Applies(l) {
				continue
			}
			for seed := 1; seed <= seeds; seed++ {
				args := slices.Concat(l.Args, set.lease(l), sc.Args, []string{"--time", sc.Time, "--quiet", "1s"}, set.rest(), extra,
					[]string{"--seed", strconv.Itoa(seed)})
				s.Cases = append(s.Cases, suite.NewCase(fmt.Sprintf("%s/%s/%d", l.Name, sc.ID, seed), l.Name, int64(seed), args))
			}
		}
	}
	return s
}

// IDs lists the measured scenarios (those of --quick only, if quick), for help texts.
func IDs(quick bool) string {
	var out []string
	for _, s := range Scenarios {
		if !quick || s.Quick {
			out = append(out, s.ID)
		}
	}
	return strings.Join(out, ", ")
}

// Applies reports whether l takes part in s: the scenario needs it, and the row takes part in the scenario.
func (s Scenario) Applies(l Lock) bool {
	return (s.Needs == nil || s.Needs(l)) && (len(l.Only) == 0 || slices.Contains(l.Only, s.ID))
}

// Prediction is the reference's outcome for l under s ("" when it predicts nothing for l).
func (s Scenario) Prediction(l Lock) string {
	name := l.Name
	if l.Base != "" {
		name = l.Base
	}
	if p, ok := s.PredictLock[name]; ok {
		return p
	}
	return s.Predict[l.Class]
}

// PerServer runs every row on each server (--server values): on the first under its own name, on each
// other as NAME@S beside it, with the same predictions.
func PerServer(ls []Lock, servers []string) ([]Lock, error) {
	if len(servers) == 0 {
		return ls, nil
	}
	seen := map[string]bool{}
	for _, srv := range servers { // each row would run twice on one server, or on the default one unasked
		switch {
		case strings.TrimSpace(srv) == "":
			return nil, fmt.Errorf("--servers %s: an empty server name", strings.Join(servers, ","))
		case seen[srv]:
			return nil, fmt.Errorf("--servers %s: the server %s is given twice", strings.Join(servers, ","), srv)
		}
		seen[srv] = true
	}
	var out []Lock
	for _, l := range ls {
		for i, srv := range servers {
			r := l
			r.Args = slices.Concat(l.Args, []string{"--server", srv})
			if i > 0 {
				r.Name, r.Base, r.What = l.Name+"@"+srv, l.Name, l.What+", on "+srv
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Names lists the default rows (those of --quick, if quick; the named-only ones, if named), for help texts.
func Names(quick, named bool) string {
	if quick {
		return strings.Join(QuickLocks, ", ")
	}
	var out []string
	for _, l := range Locks {
		if l.Named == named {
			out = append(out, l.Name)
		}
	}
	return strings.Join(out, ", ")
}
