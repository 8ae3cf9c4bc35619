package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// decideBound is the target: every recorded history decided within it.
const decideBound = 10 * time.Second

// BenchmarkCorpusDecides: porcupine (the frontier search) on the committed recorded histories
// (checker/testdata/corpus), the hard ones included. Target: each < 10 s, none unknown, each the verdict
// its index names.
func BenchmarkCorpusDecides(b *testing.B) {
	entries, err := corpus.Load()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(os.Stdout, "\nporcupine on the recorded corpus (%d histories; target: each < %s, none unknown)\n", len(entries), decideBound)
		var worst time.Duration
		bad := 0
		for _, e := range entries {
			res, took, err := e.Judge(context.Background(), decideBound)
			if err != nil {
				b.Fatal(err)
			}
			d, _ := res.Details.(map[string]any)
			hard := ""
			if e.Hard {
				hard = "hard"
			}
			mark := "ok"
			if res.Valid != e.Want || res.Valid == checker.Unknown || took > decideBound {
				mark, bad = "FAIL", bad+1
			}
			fmt.Fprintf(os.Stdout, "  %-36s %-4s %5v commands %4v unknown  %7.3f s  %-7v (want %v) %s\n", e.Name, hard,
				d["operations"], d["unknown_operations"], took.Seconds(), res.Valid, e.Want, mark)
			worst = max(worst, took)
		}
		fmt.Fprintf(os.Stdout, "  slowest %.3f s, %d of %d off target\n", worst.Seconds(), bad, len(entries))
		b.ReportMetric(worst.Seconds(), "slowest-s")
		if bad > 0 {
			b.Fatalf("%d histories off target", bad)
		}
	}
}
