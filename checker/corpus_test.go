package checker_test

import (
	"bytes"
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// Every recorded history in testdata/corpus gets the verdict its index names, decided (never unknown).
// The bound is generous for a loaded machine; `make bench` holds the hard ones to 10 s.
func TestCorpus(t *testing.T) {
	for _, e := range loadCorpus(t) {
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
	eachJudged(t, func(e corpus.Entry) bool { return strings.HasPrefix(e.How, "window-proof") }, func(t *testing.T,
		e corpus.Entry, lin *checker.Linearizable, h *history.History, res checker.Result) {
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
		quiet, to := checker.QuietMoments(ops, res.At)
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

// eachJudged runs test, as a subtest, on each corpus entry that want keeps, with its checker and verdict.
func eachJudged(t *testing.T, want func(corpus.Entry) bool, test func(t *testing.T, e corpus.Entry,
	lin *checker.Linearizable, h *history.History, res checker.Result)) {
	for _, e := range loadCorpus(t) {
		if !want(e) {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			lin, h, err := e.Checker(time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			test(t, e, lin, h, lin.Check(context.Background(), h))
		})
	}
}

// loadCorpus is the corpus's entries.
func loadCorpus(t *testing.T) []corpus.Entry {
	t.Helper()
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("empty corpus")
	}
	return entries
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

// The proof of every invalid corpus history: at most 10 operations of its illegal key that, written as an
// excerpt, read back by the history reader and checked by the same checker alone, are still invalid. The
// sizes it logs are docs/checking.md's table.
func TestCorpusProof(t *testing.T) {
	eachJudged(t, func(e corpus.Entry) bool { return e.Want == checker.Invalid }, func(t *testing.T,
		e corpus.Entry, lin *checker.Linearizable, h *history.History, res checker.Result) {
		start := time.Now()
		p, ok := lin.Proof(context.Background(), h, res, checker.ProofBound)
		if !ok {
			t.Fatalf("no proof of %s", res.Violation)
		}
		took := time.Since(start)
		if len(p.Ops) > 10 {
			t.Errorf("the proof has %d operations, want at most 10", len(p.Ops))
		}
		var b bytes.Buffer
		if err := p.Excerpt(h).Write(&b); err != nil {
			t.Fatal(err)
		}
		x, err := history.Read(&b)
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := e.Checker(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if r := again.Check(context.Background(), x); r.Valid != checker.Invalid {
			t.Fatalf("the excerpt of %d operations is %v: %s", len(x.Ops), r.Valid, r.Summary)
		}
		t.Logf("%s: %d of %d operations (window %d), %d fault records, minimal %v, %d candidates in %s",
			e.Name, len(p.Ops), len(h.Ops), p.Window, len(p.Faults), p.Minimal, p.Tried, took.Round(time.Millisecond))
	})
}
