package nemesis

import (
	"strings"
	"testing"
	"time"
)

// Issue 9, item 2: a schedule too short for its faults is refused, naming the minimum --time, and at that
// minimum every requested kind is in the plan, for every seed.
func TestPlanMinimumTime(t *testing.T) {
	env := names()
	three := Schedule{Faults: []string{"partition", "kill", "pause"}, Total: 10 * time.Second,
		Interval: 5 * time.Second, Duration: 3 * time.Second, Quiet: 3 * time.Second}
	// One round of the longest intervals (6.25 s) and the faults (3 s), then the quiet period.
	if got, want := three.MinTotal(), 3*time.Second+3*(6250*time.Millisecond+3*time.Second); got != want {
		t.Fatalf("MinTotal %v, want %v", got, want)
	}
	one := three
	one.Faults = []string{"kill"}
	if got, want := one.MinTotal(), 12250*time.Millisecond; got != want {
		t.Fatalf("one fault: MinTotal %v, want %v", got, want)
	}
	if (Schedule{Total: time.Second}).MinTotal() != 0 {
		t.Fatal("no faults need no time")
	}
	// The issue's own case: 10 s planned zero faults for seed 1 and the run passed as tested.
	_, err := NewPlan(1, three, env)
	if err == nil || !strings.Contains(err.Error(), "at least 30.75s") {
		t.Fatalf("10s with three faults: %v", err)
	}
	for _, s := range []Schedule{three, one} {
		s.Total = s.MinTotal()
		for seed := int64(0); seed < 300; seed++ {
			p, err := NewPlan(seed, s, env)
			if err != nil {
				t.Fatalf("%v at its minimum %v, seed %d: %v", s.Faults, s.Total, seed, err)
			}
			for _, f := range s.Faults {
				if !contains(p.Faults(), f) {
					t.Fatalf("seed %d: plan %+v lacks %s", seed, p.Steps, f)
				}
			}
		}
		s.Total -= time.Millisecond
		if _, err := NewPlan(1, s, env); err == nil {
			t.Fatalf("%v: 1ms under the minimum accepted", s.Faults)
		}
	}
}

// Several kinds come in rounds, each once per round, so none is starved in a long run either.
func TestPlanRounds(t *testing.T) {
	s := schedule("partition", "kill", "pause")
	for seed := int64(0); seed < 50; seed++ {
		p, err := NewPlan(seed, s, names())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+3 <= len(p.Steps); i += 3 {
			seen := map[string]bool{}
			for _, st := range p.Steps[i : i+3] {
				seen[st.Fault] = true
			}
			if len(seen) != 3 {
				t.Fatalf("seed %d: round %d is %+v", seed, i/3, p.Steps[i:i+3])
			}
		}
	}
}

// Issue 9, item 15: --nemesis-targets that a fault would silently ignore is refused.
func TestTargetsAFaultIgnoresAreRefused(t *testing.T) {
	env := &Env{Topology: "redlock", Nodes: []string{"n1", "n2", "n3"}, Clients: []string{"c1", "c2", "c3"},
		Client: func(string) Client { return nil }}
	for _, c := range []struct {
		faults  string
		targets string
		want    string // "" when accepted
	}{
		{"kill", "c1", "fault kill hits nodes"},
		{"pause", "c2", "fault pause hits nodes"},
		{"client-pause", "n1", "fault client-pause hits clients"},
		{"client-pause", "majority", ""},
		{"partition-halves", "c1", "chooses its own targets"},
		{"kill", "n2,c1", "no fault of --nemesis kill uses c1"},
		{"kill,partition", "c1", "fault kill hits nodes"},
		{"kill", "n2", ""},
		{"kill", "majority", ""},
		{"partition", "c1", ""},
		{"partition", "n2", ""},
		{"kill,partition", "n2,c1", ""},
		{"partition-node", "c1", ""},
		{"client-pause", "c1", ""},
		{"kill", "", ""},
		{"none", "c1", "no fault to aim"},
	} {
		e := *env
		faults, err := Parse(c.faults, &e)
		if err != nil {
			t.Fatal(err)
		}
		if e.Targets, err = ParseSelector(c.targets, &e); err != nil {
			t.Fatal(err)
		}
		s := schedule(faults...)
		_, err = NewPlan(1, s, &e)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("--nemesis %s --nemesis-targets %s: %v", c.faults, c.targets, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("--nemesis %s --nemesis-targets %s: %v, want %q", c.faults, c.targets, err, c.want)
		}
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
