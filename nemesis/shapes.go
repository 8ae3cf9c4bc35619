package nemesis

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// More partition shapes (Jepsen's grudges, between clients and nodes) and the clock strobe.
func init() {
	cut := func(l Link, _ Params) error { return l.Cut() }
	blackhole := func(Params) string { return "black-hole: bytes dropped both ways, connections kept open" }
	Register("partition-node", linkFault{pick: isolateNode, apply: cut, what: blackhole})
	Register("partition-halves", linkFault{pick: halves, apply: cut, what: blackhole})
	Register("partition-ring", linkFault{pick: majorityRing, apply: cut, what: blackhole})
	Register("clock-strobe", &strobe{stops: map[string]context.CancelFunc{}})
}

// isolateNode cuts one node (or the selected nodes) off from every client (or the selected clients).
func isolateNode(rng *rand.Rand, env *Env) []string {
	clients := env.Clients
	if len(env.Targets.Clients) > 0 {
		env.uses(useClients)
		clients = env.Targets.Clients
	}
	return clientLinks(clients, pickNodes(rng, env, "one"))
}

// halves splits clients and nodes into two sides at random (the nodes' first side the larger) and cuts
// every link across.
func halves(rng *rand.Rand, env *Env) []string {
	nodes := rng.Perm(len(env.Nodes))
	clients := rng.Perm(len(env.Clients))
	nodeSide := map[string]int{}
	for i, j := range nodes {
		if i >= (len(nodes)+1)/2 {
			nodeSide[env.Nodes[j]] = 1
		}
	}
	var out []string
	for i, j := range clients {
		side := 0
		if i >= (len(clients)+1)/2 {
			side = 1
		}
		for _, n := range env.Nodes {
			if nodeSide[n] != side {
				out = append(out, env.Clients[j]+"->"+n)
			}
		}
	}
	if len(out) == 0 { // one node and one client: nothing to cut across, so cut it off entirely
		out = append(out, env.Clients[0]+"->"+env.Nodes[0])
	}
	return out
}

// majorityRing gives each client its own majority of the nodes (a window of n/2+1 starting at a rotating
// offset) and cuts the rest: every client sees a majority, and no two see the same one.
func majorityRing(rng *rand.Rand, env *Env) []string {
	n := len(env.Nodes)
	start := rng.IntN(n)
	var out []string
	for i, c := range env.Clients {
		first := (start + i) % n
		for k := 0; k < n; k++ {
			if (k-first+n)%n >= n/2+1 {
				out = append(out, c+"->"+env.Nodes[k])
			}
		}
	}
	return out
}

// strobe flips the clocks of a majority of the nodes between true time and +bump every 100 ms for the
// fault's length (Jepsen's strobe-time), then resets them.
type strobe struct {
	mu    sync.Mutex
	stops map[string]context.CancelFunc
}

func (s *strobe) Targets(rng *rand.Rand, env *Env) []string { return nodeClock{}.Targets(rng, env) }

func (s *strobe) Start(_ context.Context, env *Env, targets []string) (string, error) {
	if err := eachNode(env, targets, func(p Process) error { return p.SetClockOffset(env.Params.ClockBump) }); err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.stops[strings.Join(targets, ",")] = cancel
	s.mu.Unlock()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		on := true
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				on = !on
				d := time.Duration(0)
				if on {
					d = env.Params.ClockBump
				}
				_ = eachNode(env, targets, func(p Process) error { return p.SetClockOffset(d) })
			}
		}
	}()
	return "clock flips between +0 and +" + env.Params.ClockBump.String() + " every 100ms", nil
}

func (s *strobe) Stop(_ context.Context, env *Env, targets []string) error {
	s.mu.Lock()
	if cancel := s.stops[strings.Join(targets, ",")]; cancel != nil {
		cancel()
		delete(s.stops, strings.Join(targets, ","))
	}
	s.mu.Unlock()
	return eachNode(env, targets, func(p Process) error { return p.SetClockOffset(0) })
}
