package coverage

import (
	"bytes"
	"testing"

	"github.com/lockcheck/lockcheck/history"
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
