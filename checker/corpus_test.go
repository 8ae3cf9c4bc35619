package checker_test

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// Every recorded history in testdata/corpus gets the verdict its index names, decided (never unknown).
// The bound is generous for a loaded machine; `make bench` holds the hard ones to 10 s.
func TestCorpus(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("empty corpus")
	}
	for _, e := range entries {
		t.Run(e.Name, func(t *testing.T) {
			res, took, err := e.Judge(context.Background(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.Valid != e.Want {
				t.Fatalf("%s: porcupine says %v (%s; %s), want %v", e.Name, res.Valid, res.Summary, res.Violation, e.Want)
			}
			if res.Valid == checker.Valid { // and the legal order it found is one, step by step
				lin, h, err := e.Checker(time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				for _, part := range lin.Model.Partition(lin.Operations(h)) { // API calls too
					got, order := checker.LegalOrder(context.Background(), lin.Model, part)
					if err := checker.CheckOrder(lin.Model, part, order); got != porcupine.Ok || err != nil {
						t.Fatalf("%s: the frontier's order (%v) does not check: %v", e.Name, got, err)
					}
				}
			}
			t.Logf("%s: %v in %s", e.Name, res.Valid, took.Round(time.Millisecond))
		})
	}
}

// The hard invalid histories' verdicts, established without the frontier search: porcupine's own search on
// the commands of the violating key between two quiet moments around the violation (nothing in flight
// across either), started from every state the lock could be in at the first: free, or held by any owner
// of the key with any re-entry count its acquires allow, its lease ending at any time. Any legal order of
// the whole history would give one of the window from one of those states, so none there means none at all.
// The frontier only says where to look.
func TestCorpusWindowProof(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.How, "window-proof") {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			lin, h, err := e.Checker(time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			res := lin.Check(context.Background(), h)
			key, _, ok := strings.Cut(strings.TrimPrefix(res.Violation, "key "), ":")
			if res.Valid != checker.Invalid || !ok {
				t.Fatalf("want an invalid verdict naming a key, got %v: %s", res.Valid, res.Violation)
			}
			var ops []porcupine.Operation
			for _, o := range lin.Convert(h) {
				if o.Input.(checker.Command).Key == key {
					ops = append(ops, o)
				}
			}
			sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
			culprit := int64(math.MinInt64)
			for _, o := range ops {
				if o.Call == res.At {
					culprit = max(culprit, o.Return)
				}
			}
			// Quiet moments: ops[i] is called after every command called before it has returned.
			var quiet []int
			reach := int64(math.MinInt64)
			for i, o := range ops {
				if reach < o.Call {
					quiet = append(quiet, i)
				}
				reach = max(reach, o.Return)
			}
			to := len(ops)
			for _, i := range quiet {
				if ops[i].Call > culprit {
					to = i
					break
				}
			}
			// Start ever further back until the window pins the lock down (a start state of the superset
			// too loose to contradict the violation proves nothing, but is not wrong either).
			for back := time.Duration(0); ; back = max(2*back, 500*time.Millisecond) {
				from := 0
				for _, i := range quiet {
					if ops[i].Call <= res.At-int64(back) {
						from = i
					}
				}
				got, n, states := windowCheck(ops, from, to)
				t.Logf("%s: %d commands of key %s from %s to %s, %d starting states: %v", e.Name, n, key,
					checker.Secs(ops[from].Call), checker.Secs(ops[to-1].Call), states, got)
				if got == porcupine.Illegal {
					return
				}
				if from == 0 || got == porcupine.Unknown {
					t.Fatalf("porcupine's own search on the window: %v, want Illegal", got)
				}
			}
		})
	}
}

// windowCheck runs porcupine's own search on ops[from:to] from every state the lock could be in at
// ops[from] (the mutex model), bounded to a minute.
func windowCheck(ops []porcupine.Operation, from, to int) (porcupine.CheckResult, int, int) {
	holds := map[string]int{"": 0}
	for _, o := range ops[:from] {
		if in := o.Input.(checker.Command); in.F == "acquire" {
			holds[in.Owner]++
		}
	}
	init := []interface{}{checker.MutexState{}}
	for owner, n := range holds {
		for k := 1; k <= n && owner != ""; k++ {
			init = append(init, checker.MutexState{Owner: owner, Holds: k, Lo: 0, Hi: math.MaxInt64})
		}
	}
	m := checker.MutexModel
	m.Init = func() []interface{} { return init }
	return porcupine.CheckOperationsTimeout(m.ToModel(), ops[from:to], time.Minute), to - from, len(init)
}
