package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
)

// harmlessLeftovers are key prefixes whose leftovers cannot change a verdict: an unlock latch answers only
// its own request id, which no later run reuses, and a fencing-token counter only has to grow.
var harmlessLeftovers = []string{"redisson_unlock_latch:", "redisson_lock_token:"}

// workloadPatterns are the SCAN patterns of every key a workload on keys lock names (or on latches) can
// touch: its lock names and every auxiliary key tagged with one ({lock-0}).
func workloadPatterns(keys int, latch bool) []string {
	if latch {
		return []string{"latch-*", "*{latch-*}*"}
	}
	var out []string
	for i := range keys {
		k := workloads.KeyName(i)
		out = append(out, k, "*{"+k+"}*")
	}
	return out
}

// checkLeftovers refuses a run on a deployment that already holds keys matching patterns: the models start
// from free locks, so a lock an earlier run left (one killed within its lease, say) would be reported as a
// violation that is not real.
func checkLeftovers(ctx context.Context, topo *topology.Topology, patterns []string) error {
	left, err := topo.Leftovers(ctx, patterns, harmless)
	if err != nil || len(left) == 0 {
		return err
	}
	var names []string
	for i, l := range left {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(left)-3))
			break
		}
		ttl := "no expiry"
		if l.PTTL >= 0 {
			ttl = fmt.Sprintf("pttl %dms", l.PTTL.Milliseconds())
		}
		names = append(names, fmt.Sprintf("%s on %s (%s)", l.Key, l.Node, ttl))
	}
	return usagef("--backend external: the deployment already holds the workload's keys: %s; left by an earlier run or "+
		"someone else, they would make the checkers see a violation that is not real: wait for them to expire or delete them (DEL %s)",
		strings.Join(names, ", "), left[0].Key)
}

func harmless(key string) bool {
	for _, p := range harmlessLeftovers {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// clearLeftovers deletes, as a run on an external deployment ends, the workload's keys it left: a lock
// granted as the run stopped lives on for its lease (30 s for Redisson's watchdog default), and the next run
// on the deployment would be refused by checkLeftovers until then. They are the run's own: checkLeftovers
// found none when it began.
func clearLeftovers(topo *topology.Topology, patterns []string, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topo.DeleteKeys(ctx, patterns, harmless); err != nil {
		fmt.Fprintf(stderr, "lockcheck: the run's keys could not all be deleted from the deployment: %v\n", err)
	}
}
