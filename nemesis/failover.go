package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

func init() {
	Register("failover", &failover{cut: map[string][]string{}})
}

// failover isolates the current primary from its replicas and Sentinels (its front proxy) and from every
// client but a random minority, which keep writing to it: the Sentinels promote a replica, and the kept
// clients and the rest see two primaries until the fault heals and the old primary rejoins as a replica
// (losing what only it had). Give it a --nemesis-duration longer than Sentinel's 1 s down-after plus an
// election.
type failover struct {
	mu  sync.Mutex
	cut map[string][]string // targets key -> links cut at start
}

func (f *failover) Applies(env *Env) error {
	if env.Primary == nil {
		return fmt.Errorf("failover needs a primary with replicas: use --topology sentinel (this is %s)", env.Topology)
	}
	return nil
}

// Targets are the clients that keep reaching the old primary.
func (f *failover) Targets(rng *rand.Rand, env *Env) []string {
	var keep []string
	for _, i := range rng.Perm(len(env.Clients))[:max(len(env.Clients)/2-1, 1)] {
		keep = append(keep, "keep:"+env.Clients[i])
	}
	return keep
}

func (f *failover) Start(ctx context.Context, env *Env, targets []string) (string, error) {
	primary, err := env.Primary(ctx)
	if err != nil {
		return "", err
	}
	kept := map[string]bool{}
	for _, t := range targets {
		kept[strings.TrimPrefix(t, "keep:")] = true
	}
	links := []string{"*->" + primary}
	for _, c := range env.Clients {
		if !kept[c] {
			links = append(links, c+"->"+primary)
		}
	}
	f.mu.Lock()
	f.cut[strings.Join(targets, ",")] = links
	f.mu.Unlock()
	return fmt.Sprintf("primary %s isolated from its replicas, the Sentinels and all clients but %s", primary,
		strings.Join(targets, " ")), eachLink(env, links, Link.Cut)
}

func (f *failover) Stop(_ context.Context, env *Env, targets []string) error {
	f.mu.Lock()
	links := f.cut[strings.Join(targets, ",")]
	delete(f.cut, strings.Join(targets, ","))
	f.mu.Unlock()
	return eachLink(env, links, Link.Heal)
}
