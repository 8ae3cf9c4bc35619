package coverage

import (
	"bytes"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

func generated(tb testing.TB, ops int) *history.History {
	tb.Helper()
	var b bytes.Buffer
	if _, err := histgen.Write(&b, histgen.Spec{Ops: ops, Keys: 4, Seed: 1}); err != nil {
		tb.Fatal(err)
	}
	h, err := history.Read(&b)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// A legal history (histgen's: re-entries, watchdog renewals, refusals, unknown outcomes, a partition)
// shows only transitions the model allows, and few of them: the state space is small.
func TestLegalHistoryStaysAllowed(t *testing.T) {
	h := generated(t, 20_000)
	m := Of(h)
	legal := legalSet(FamilyOf(h))
	for _, x := range m.Core().Transitions() {
		if !legal[x] {
			t.Errorf("a legal history shows %s (%d times), which the model does not allow", x, m.Core().Count(x))
		}
	}
	if m.Len() < 5 || m.Len() > 100 {
		t.Errorf("%d distinct transitions in %d operations", m.Len(), len(h.Ops))
	}
}

// go test -run - -bench Of ./coverage: the time per operation, the same for 10 times the history.
func BenchmarkOf(b *testing.B) {
	for _, n := range []int{20_000, 200_000} {
		h := generated(b, n)
		b.Run(itoa(int64(n)), func(b *testing.B) {
			for range b.N {
				Of(h)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(h.Ops)), "ns/operation")
		})
	}
}

// The recorded runs (checker/testdata/corpus): how many distinct transitions each reached, of how many its
// model allows, and how faithful the replay is: in a run porcupine judged valid, a transition the model
// does not allow is the replay's misreading (a hold it lost track of), and stays rare.
func TestCorpusCoverage(t *testing.T) {
	es, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%-42s %-20s %7s %8s %14s %10s", "run", "family", "commands", "distinct", "reached/allowed", "disallowed")
	for _, e := range es {
		h, err := e.History()
		if err != nil {
			t.Fatal(err)
		}
		fam := FamilyOf(h)
		legal := legalSet(fam)
		m := Of(h)
		core := m.Core()
		total, bad, reached := 0, 0, 0
		for _, x := range core.Transitions() {
			total += core.Count(x)
			if legal[x] {
				reached++
			} else {
				bad += core.Count(x)
			}
		}
		t.Logf("%-42s %-20s %7d %8d %8d/%-6d %9.1f%%", e.Name, fam, total, m.Len(), reached, len(legal), 100*float64(bad)/float64(max(total, 1)))
		// Rare: under one command in fifty, and never more than two in a short history (the Redlock worker's
		// 74 judged commands after unknown acquires and releases read two so: 2.7%, both the replay's).
		if e.Want == checker.Valid && bad*50 > total && bad > 2 {
			t.Errorf("%s (valid): %d of %d commands read as transitions the model does not allow", e.Name, bad, total)
		}
		if m.Len() < 5 {
			t.Errorf("%s: only %d distinct transitions", e.Name, m.Len())
		}
	}
}
