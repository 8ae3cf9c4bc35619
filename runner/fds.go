package runner

import (
	"fmt"
	"syscall"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/topology"
)

// What a run's descriptors are made of, at most. Each client may hold, to each data node, a full pool and
// a pub/sub connection; in lockcheck's own topologies each of those connections costs three descriptors
// (the client's socket and the in-process proxy's two) and each proxy a listener. A Sentinel-mode client
// also talks to a Sentinel directly (a command and a pub/sub connection). Every node, Sentinel included,
// costs up to nodeFDs (its pipes, admin connections, and the front proxies and taps its peers replicate
// and gossip through), and the process a fixed baseFDs (history, results, clock library, runtime).
// Measured peaks on the process backend (README, "Descriptors") stay within about half of this bound.
const (
	fdsPerConn         = 3
	fdsPerSentinelConn = 2
	nodeFDs            = 40
	baseFDs            = 64
)

// descriptorsNeeded is the most descriptors the run can hold at once, and how that was counted.
func descriptorsNeeded(o Options, ext *topology.External) (int, string) {
	nodes := topology.NodeCount(o.Topology, o.Nodes)
	sentinels := topology.KindNamed(o.Topology).Sentinels
	perConn, listener := fdsPerConn, 1
	if ext != nil { // the proxies, if any, are the toxiproxy server's
		nodes, sentinels, perConn, listener = len(ext.Nodes), len(ext.Sentinels), 1, 0
	}
	if ext == nil && o.Worker.active() { // the wire tap behind each link: its listener and two ends per connection
		perConn, listener = perConn+2, listener+1
	}
	perLink := (locks.DefaultPoolSize+1)*perConn + listener
	need := o.Clients*nodes*perLink + (nodes+sentinels)*nodeFDs + baseFDs
	how := fmt.Sprintf("%d clients × %d node(s) × %d", o.Clients, nodes, perLink)
	if sentinels > 0 {
		need += o.Clients * fdsPerSentinelConn
		how += fmt.Sprintf(" + %d × %d for the Sentinels", o.Clients, fdsPerSentinelConn)
	}
	return need, fmt.Sprintf("%s + %d", how, (nodes+sentinels)*nodeFDs+baseFDs)
}

// checkDescriptors says how many descriptors the run needs and makes sure it has them: it raises the soft
// RLIMIT_NOFILE to the hard one if that is enough, and refuses the run otherwise (a run that runs out
// fails its clients' dials, and its proxies stop accepting, for the rest of the run).
func checkDescriptors(o Options, ext *topology.External) (string, error) {
	need, how := descriptorsNeeded(o, ext)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", nil // no limit to compare with
	}
	if lim.Cur < uint64(need) && lim.Max >= uint64(need) {
		raised := lim
		raised.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	if lim.Cur < uint64(need) {
		return "", usagef("this run needs up to %d file descriptors (%s), but the limit is %d (ulimit -n; hard limit %d): raise it or run fewer clients",
			need, how, lim.Cur, lim.Max)
	}
	// Said in the start line rather than on a line of its own, so that a refusal stays one line.
	return fmt.Sprintf("up to %d file descriptors of %d", need, lim.Cur), nil
}

// noteRanOut makes a run whose operations failed for want of descriptors end with an error (the results
// are written, with a note): such a run mostly tested the harness's limits, not the lock. A violation
// found all the same stands (failed operations cannot make one up), so an invalid run stays invalid.
func noteRanOut(rec *history.Recorder, res *report.Results, dir string) error {
	n := rec.OutOfDescriptors()
	if n == 0 {
		return nil
	}
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	msg := fmt.Sprintf("file descriptors ran out during the run: %d operations failed with \"too many open files\" (limit %d)", n, lim.Cur)
	res.Notes = append(res.Notes, msg)
	_ = res.WriteJSON(dir)
	if res.Valid == checker.Invalid {
		return nil
	}
	return fmt.Errorf("%s; the results are in %s", msg, dir)
}
