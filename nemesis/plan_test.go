package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"
)

func names() *Env {
	return &Env{Topology: "single", Nodes: []string{"n1"}, Clients: []string{"c1", "c2", "c3", "c4"}}
}

func schedule(faults ...string) Schedule {
	return Schedule{Faults: faults, Total: 60 * time.Second, Interval: 5 * time.Second, Duration: 3 * time.Second,
		Quiet: 5 * time.Second}
}

func TestSameSeedSamePlan(t *testing.T) {
	a, err := NewPlan(42, schedule("partition", "kill"), names())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlan(42, schedule("partition", "kill"), names())
	c, _ := NewPlan(43, schedule("partition", "kill"), names())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two plans")
	}
	if reflect.DeepEqual(a.Steps, c.Steps) {
		t.Fatal("two seeds gave the same plan")
	}
	kinds := map[string]bool{}
	for i, st := range a.Steps {
		kinds[st.Fault] = true
		if st.End > a.HealAt {
			t.Fatalf("step %d ends at %v, after the heal at %v", i, st.End, a.HealAt)
		}
		if i > 0 && st.Start < a.Steps[i-1].End {
			t.Fatalf("step %d overlaps the previous one", i)
		}
		if len(st.Targets) == 0 {
			t.Fatalf("step %d has no targets", i)
		}
	}
	if !kinds["partition"] || !kinds["kill"] {
		t.Fatalf("plan %+v does not combine both faults", a.Steps)
	}
}

func TestPartitionCutsAMinorityOfClients(t *testing.T) {
	env := names()
	for seed := int64(0); seed < 50; seed++ {
		p, _ := NewPlan(seed, schedule("partition"), env)
		for _, st := range p.Steps {
			if len(st.Targets) < 1 || len(st.Targets) > len(env.Clients)/2 {
				t.Fatalf("seed %d cut %d of %d clients", seed, len(st.Targets), len(env.Clients))
			}
		}
	}
}

func TestParse(t *testing.T) {
	if f, err := Parse("none", names()); err != nil || f != nil {
		t.Fatalf("none: %v %v", f, err)
	}
	if f, err := Parse("partition,kill", names()); err != nil || len(f) != 2 {
		t.Fatalf("%v %v", f, err)
	}
	if _, err := Parse("partition,meteor", names()); err == nil {
		t.Fatal("unknown fault accepted")
	}
}

type fakeLink struct {
	mu    sync.Mutex
	cut   bool
	heals int
}

func (l *fakeLink) Cut() error           { l.mu.Lock(); l.cut = true; l.mu.Unlock(); return nil }
func (l *fakeLink) DropReplies() error   { return l.Cut() }
func (l *fakeLink) Delay(_, _ int) error { return l.Cut() }
func (l *fakeLink) Heal() error          { l.mu.Lock(); l.cut = false; l.heals++; l.mu.Unlock(); return nil }

type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) Fault(kind, phase string, _ []string, _ string) {
	e.mu.Lock()
	e.got = append(e.got, kind+":"+phase)
	e.mu.Unlock()
}

// A plan cut short by its context still heals the fault it started.
func TestRunHealsWhenStopped(t *testing.T) {
	l := &fakeLink{}
	env := names()
	env.Link = func(c, n string) Link { return l }
	p := Plan{Steps: []Step{{Fault: "partition", Targets: ts("c1->n1"), Start: 0, End: time.Hour}}}
	ctx, cancel := context.WithCancel(context.Background())
	ev := &events{}
	done := make(chan struct{})
	go func() { p.Run(ctx, env, ev, time.Now()); close(done) }()
	for {
		l.mu.Lock()
		cut := l.cut
		l.mu.Unlock()
		if cut {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if l.cut || !reflect.DeepEqual(ev.got, []string{"partition:start", "partition:stop"}) {
		t.Fatalf("cut=%v events=%v", l.cut, ev.got)
	}
}

func TestPartitionShapes(t *testing.T) {
	env := &Env{Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Clients: []string{"c1", "c2", "c3", "c4"}}
	rng := func() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
	seen := func(targets []Target) map[string]map[string]bool { // client -> nodes it can still reach
		cut := map[string]bool{}
		for _, t := range targets {
			cut[t.String()] = true
		}
		out := map[string]map[string]bool{}
		for _, c := range env.Clients {
			out[c] = map[string]bool{}
			for _, n := range env.Nodes {
				if !cut[c+"->"+n] {
					out[c][n] = true
				}
			}
		}
		return out
	}
	iso := seen(isolateNode(rng(), env))
	for _, c := range env.Clients {
		if len(iso[c]) != 4 {
			t.Fatalf("isolate-node: %s sees %v", c, iso[c])
		}
	}
	ring := seen(majorityRing(rng(), env))
	views := map[string]bool{}
	for _, c := range env.Clients {
		if len(ring[c]) != 3 {
			t.Fatalf("ring: %s sees %d nodes, want a majority of 3", c, len(ring[c]))
		}
		views[fmt.Sprint(ring[c])] = true
	}
	if len(views) != len(env.Clients) {
		t.Fatal("ring: two clients see the same majority")
	}
	h := seen(halves(rng(), env))
	sizes := map[int]int{}
	for _, c := range env.Clients {
		sizes[len(h[c])]++
	}
	if sizes[3] != 2 || sizes[2] != 2 {
		t.Fatalf("halves: visible-node counts %v, want two clients with 3 nodes and two with 2", sizes)
	}
}
