package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// replicated is a fake two-shard deployment.
type replicated struct{ primary string }

func (r replicated) Shards() int            { return 2 }
func (r replicated) PromoteModes() []string { return []string{"default", "force"} }
func (r replicated) Primary(context.Context, int) (string, error) {
	return r.primary, nil
}
func (r replicated) Replicas(context.Context, int) ([]string, error) {
	return []string{"n2", "n3"}, nil
}
func (r replicated) Promote(context.Context, int, string) (string, error) { return "", nil }
func (r replicated) StallReplication(string, bool) error                  { return nil }
func (r replicated) IsolatePeers(context.Context, string, bool) error     { return nil }
func (r replicated) Restore(context.Context) error                        { return nil }
func (r replicated) SetReplicaPriority(context.Context, string, int) error {
	return nil
}

func fiveNodes() *Env {
	return &Env{Topology: "redlock", Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Clients: []string{"c1", "c2", "c3", "c4"}}
}

func TestSelectorSizesAndNames(t *testing.T) {
	env := fiveNodes()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		sel         string
		fault       string
		nodes, want int
	}{
		{"one", "kill", 5, 1}, {"majority", "kill", 5, 3}, {"all", "pause", 5, 5}, {"minority", "clock", 5, 2},
	} {
		sel, err := ParseSelector(c.sel, env)
		if err != nil {
			t.Fatal(err)
		}
		env.Targets = sel
		for range 20 {
			got := registry[c.fault].Targets(rng, env)
			if c.sel == "minority" && (len(got) < 1 || len(got) > 2) || c.sel != "minority" && len(got) != c.want {
				t.Fatalf("%s %s: %v", c.sel, c.fault, got)
			}
		}
	}
	sel, err := ParseSelector("n2,c3", env)
	if err != nil {
		t.Fatal(err)
	}
	env.Targets = sel
	if got := registry["partition"].Targets(rng, env); !slices.Equal(got, ts("c3->n2")) {
		t.Fatalf("partition with n2,c3: %v", got)
	}
	if got := registry["kill"].Targets(rng, env); !slices.Equal(got, ts("n2")) {
		t.Fatalf("kill with n2: %v", got)
	}
	for _, bad := range []string{"n9", "primary", "one,all"} {
		if _, err := ParseSelector(bad, fiveNodes()); err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// "primary" is resolved when the fault starts, to whichever node is primary then.
func TestPrimaryTargetResolvedAtStart(t *testing.T) {
	env := &Env{Topology: "sentinel", Nodes: []string{"n1", "n2", "n3"}, Clients: []string{"c1"}, Replication: replicated{"n2"}}
	sel, err := ParseSelector("primary", env)
	if err != nil {
		t.Fatal(err)
	}
	env.Targets = sel
	rng := rand.New(rand.NewPCG(1, 1))
	targets := registry["kill"].Targets(rng, env)
	got, err := resolve(context.Background(), env, targets)
	if err != nil || !slices.Equal(got, ts("n2")) {
		t.Fatalf("kill primary: %v -> %v, %v", targets, got, err)
	}
	links, _ := resolve(context.Background(), env, registry["partition"].Targets(rng, env))
	if !slices.Equal(links, ts("c1->n2")) {
		t.Fatalf("partition primary: %v", links)
	}
}

// Failovers need replication: on a topology without it they are a usage error, not a silent no-op; with
// it they aim at the shards holding the keys.
func TestFailoversNeedReplication(t *testing.T) {
	for _, f := range []string{"failover", "failover-command", "lagging-failover", "partition-nodes"} {
		if _, err := Parse(f, fiveNodes()); err == nil || !strings.Contains(err.Error(), "sentinel or cluster") {
			t.Fatalf("%s on redlock: %v", f, err)
		}
	}
	env := &Env{Topology: "cluster", Nodes: []string{"n1", "n2", "n3", "n4"}, Clients: []string{"c1", "c2", "c3"},
		Replication: replicated{"n1"}, KeyShards: []int{1}}
	p, err := NewPlan(7, schedule("failover", "failover-command", "lagging-failover"), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Steps {
		if st.Targets[0] != ShardTarget(1) {
			t.Fatalf("%s aimed at %v, want shard:1 (the keys' shard)", st.Fault, st.Targets)
		}
	}
}
