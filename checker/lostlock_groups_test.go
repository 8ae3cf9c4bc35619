package checker

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

// ownerGroups, built from the history, gives the groups and order that grouping the call-sorted MutexOps
// gave (what LostLock read before), on every corpus history and a generated one.
func TestOwnerGroupsMatchMutexOps(t *testing.T) {
	paths, err := filepath.Glob("testdata/corpus/*.jsonl.gz")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var hs []*history.History
	for _, p := range paths {
		hs = append(hs, gzHistory(t, p))
	}
	gen := filepath.Join(t.TempDir(), "gen.jsonl")
	if _, err := histgen.WriteFile(gen, histgen.Spec{Ops: 20000, Keys: 20, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	hs = append(hs, h)
	// Invokes out of call order (a recorder's writers race), with ties in call.
	var shuffled history.History
	for i, at := range []int64{50, 10, 5, 10, 20, 50, 30} {
		owner := []string{"u1:1", "u2:1", "u3:1"}[i%3]
		shuffled.Ops = append(shuffled.Ops, history.Operation{
			Invoke:   history.Call{Time: at, ID: int64(i + 1), Client: "c" + owner[1:2], Thread: 1, Key: "k", Owner: owner, F: "acquire"},
			Complete: &history.Result{Type: history.Ok, Time: at + 3}})
	}
	hs = append([]*history.History{&shuffled}, hs...)
	for n, h := range hs {
		type pair struct {
			c   Command
			out Reply
		}
		want := map[[2]string][]pair{}
		resent := map[[2]string]bool{} // the models join an unlock's resends into one command; LostLock reads each send
		var wantOrder [][2]string
		for _, o := range MutexOps(h) {
			c := o.Input.(Command)
			if c.Fair || c.Read {
				continue
			}
			k := [2]string{c.Key, c.Owner}
			if want[k] == nil {
				wantOrder = append(wantOrder, k)
			}
			want[k] = append(want[k], pair{c, o.Output.(Reply)})
			resent[k] = resent[k] || c.Resent
		}
		groups, order := ownerGroups(h)
		if !reflect.DeepEqual(order, wantOrder) {
			t.Fatalf("history %d: group order differs: %d groups, want %d", n, len(order), len(wantOrder))
		}
		for _, k := range order {
			var got []pair
			for _, o := range groups[k] {
				got = append(got, pair{o.c, o.out})
			}
			if resent[k] {
				if len(got) <= len(want[k]) {
					t.Fatalf("history %d: group %v: %d commands, want more than the models' %d (each send of a resent unlock)", n, k, len(got), len(want[k]))
				}
				continue
			}
			if !reflect.DeepEqual(got, want[k]) {
				t.Fatalf("history %d: group %v differs", n, k)
			}
		}
		if len(order) == 0 && (n == 0 || n == len(hs)-1) {
			t.Fatalf("history %d (built or generated) has no groups", n)
		}
	}
}
