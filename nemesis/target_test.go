package nemesis

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// ts reads targets as a history spells them.
func ts(ss ...string) []Target { return ParseTargets(ss) }

// Every target a fault writes reads back as itself, and a string outside the grammar (a clipped one, an
// old history's) prints back unchanged: histories on disk keep their meaning.
func TestTargetGrammarRoundTrips(t *testing.T) {
	for _, c := range []struct {
		s    string
		want Target
	}{
		{"n1", NameTarget("n1")},
		{"@primary", NameTarget(Primary)},
		{"c1->n2", LinkTarget("c1", "n2")},
		{"*->n1", LinkTarget(Front, "n1")},
		{"bus->n3", LinkTarget(Bus, "n3")},
		{"c2->@primary", LinkTarget("c2", Primary)},
		{"c2@+1m0s", ClockTarget("c2", time.Minute)},
		{"c2@-1m0s", ClockTarget("c2", -time.Minute)},
		{"shard:2", ShardTarget(2)},
		{"keep:c3", KeepTarget("c3")},
		{"mode:takeover", ModeTarget("takeover")},
		{"lagging-replica:1", LaggingTarget(1)},
		{"lagging-replica:all", LaggingTarget(AllReplicas)},
		// outside the grammar: kept whole
		{"shard:x", NameTarget("shard:x")},
		{"c2@soon", NameTarget("c2@soon")},
		{"c2@1m", NameTarget("c2@1m")},
		{"… 70 targets in all", NameTarget("… 70 targets in all")},
	} {
		got := ParseTarget(c.s)
		if got != c.want || got.String() != c.s {
			t.Errorf("%q: read %+v (prints %q), want %+v", c.s, got, got.String(), c.want)
		}
	}
	st := Step{Fault: "failover", Targets: ts("shard:0", "keep:c1")}
	b, err := json.Marshal(st)
	if err != nil || string(b) != `{"fault":"failover","targets":["shard:0","keep:c1"],"start_ns":0,"end_ns":0}` {
		t.Fatalf("step as JSON: %s, %v", b, err)
	}
	var back Step
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, st) {
		t.Fatalf("step read back: %+v, %v", back, err)
	}
}
