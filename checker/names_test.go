package checker

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// The counted partition gives what appending key by key gives: the same parts, in order of first
// appearance, each in history order, and no part can grow into its neighbour.
func TestPartitionByKeyMatchesAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ops []porcupine.Operation
	for i := 0; i < 5000; i++ {
		ops = append(ops, porcupine.Operation{ClientId: i, Input: Command{Key: "k" + strconv.Itoa(rng.IntN(37))}, Call: int64(i)})
	}
	key := func(in interface{}) string { return in.(Command).Key }
	want := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range ops {
		k := key(op.Input)
		if want[k] == nil {
			order = append(order, k)
		}
		want[k] = append(want[k], op)
	}
	got := partitionByKey(ops, key)
	if len(got) != len(order) {
		t.Fatalf("%d parts, want %d", len(got), len(order))
	}
	for i, k := range order {
		if !reflect.DeepEqual(got[i], want[k]) {
			t.Fatalf("part %d (%s): %d ops, want %d", i, k, len(got[i]), len(want[k]))
		}
	}
	got[0] = append(got[0], porcupine.Operation{ClientId: -1})
	if got[1][0].ClientId == -1 {
		t.Fatal("appending to one part overwrote the next")
	}
	if partitionByKey(nil, key) != nil {
		t.Fatal("no operations gave parts")
	}
}

// The shared names are the ones built per record.
func TestNamesMatchPerRecord(t *testing.T) {
	nm := newNames()
	for _, r := range []history.Call{
		{Client: "c1", Thread: 3, Key: "k", Owner: "u:3"},
		{Client: "c1", Thread: 0, Key: "k", Node: "n2", Owner: "u:9:write"},
		{Client: "c2", Thread: 3, Key: "k", Node: "n2", Owner: "permit-1"},
		{Client: "c1", Thread: 3, Key: "k", Owner: "u:3"},
		{Client: "c1", Thread: 3, Key: "k", Owner: "v:7"}, // the thread's owner changes, and back
		{Client: "c1", Thread: 3, Key: "k", Owner: ""},
		{Client: "c1", Thread: 3, Key: "k", Owner: "u:3"},
	} {
		if nm.thread(&r) != threadName(r) || nm.key(&r) != nodeKey(r) || nm.owner(&r) != ownerName(r) {
			t.Fatalf("%+v: %q %q %q, want %q %q %q", r, nm.thread(&r), nm.key(&r), nm.owner(&r), threadName(r), nodeKey(r), ownerName(r))
		}
	}
}
