package checker

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/topology/kind"
)

// runFacts is what the checkers take from the run's meta record (history.RunMeta, decoded by the reader):
// derived here, once, so that no checker reads the meta record or knows topology names itself.
type runFacts struct {
	known    bool  // the history has a meta record that decodes; without one every fact is the cautious one
	external bool  // a deployment lockcheck did not start (--backend external): it may hold commands back unseen
	failover bool  // the topology can fail over, and so lose acknowledged writes
	oneNode  bool  // each client talks to one node, so a record's node is the server that ran its command
	masters  bool  // independent masters (Redlock): a lock over them is granted by a majority's votes
	slack    int64 // --latency + --jitter: how long a link may hold a command back
	// timeout and watchdog are the run's per-command timeout and watchdog timeout (Redisson's defaults when
	// the history does not say).
	timeout, watchdog int64
}

// factsOf derives the run's facts from h's meta record.
func factsOf(h *history.History) runFacts {
	f := runFacts{timeout: int64(3 * time.Second), watchdog: int64(30 * time.Second)}
	m := h.Run
	if m == nil {
		return f
	}
	o := m.Options
	f.known = true
	f.external = o.Backend == "external"
	k := kind.Named(m.Topology)
	f.failover, f.oneNode, f.masters = k.FailsOver, k.Direct, k.Masters
	f.slack = int64(o.Latency) + int64(o.Jitter)
	if o.Timeout > 0 {
		f.timeout = int64(o.Timeout)
	}
	if o.Watchdog > 0 {
		f.watchdog = int64(o.Watchdog)
	}
	return f
}
