package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/runner"
)

// BenchmarkRedissonWorker: the real Redisson through its worker against lockcheck's Go emulation of the
// same lock, side by side on the same fault-free run: when the first lock command goes out (on the run's
// clock, which starts before Redis does: Redis start, the JVMs' start and init, all included) and critical
// sections per second. The worker is built first if it is not cached (not timed).
func BenchmarkRedissonWorker(b *testing.B) {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s not found: the Redisson worker needs Java 17 and Maven", tool)
		}
	}
	if os.Getenv("LOCKCHECK_WORKERS") == "" {
		b.Setenv("LOCKCHECK_WORKERS", filepath.Join("..", "workers"))
	}
	results := b.TempDir()
	one := func(client string) (first time.Duration, perSec float64) {
		o := runner.Defaults()
		o.Lock, o.Clients, o.Time, o.Quiet, o.Seed, o.Results = "reentrant", 4, 8*time.Second, time.Second, 1, results
		o.Hold, o.Reentry = "1ms-5ms", 0
		o.Worker.Client = client
		res, err := runner.Run(context.Background(), o, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		h, err := history.ReadFile(res.Files["history"])
		if err != nil {
			b.Fatal(err)
		}
		if len(h.Ops) == 0 || len(h.Sections) == 0 {
			b.Fatalf("%s: no operations", client)
		}
		start := h.Ops[0].Invoke.Time
		return time.Duration(start), float64(len(h.Sections)) / (float64(h.End()-start) / 1e9)
	}
	one("redisson") // build and warm the cache
	for i := 0; i < b.N; i++ {
		wFirst, wRate := one("redisson")
		gFirst, gRate := one("")
		fmt.Fprintf(os.Stdout, "\nRedisson worker vs the Go emulation, RLock, 4 clients, 8 s fault-free, holds 1-5 ms\n")
		fmt.Fprintf(os.Stdout, "  first lock command at   redisson %6.2f s   emulation %6.2f s   (run clock: Redis start included)\n",
			wFirst.Seconds(), gFirst.Seconds())
		fmt.Fprintf(os.Stdout, "  critical sections/s     redisson %6.0f     emulation %6.0f     ratio %.2f\n", wRate, gRate, wRate/gRate)
		b.ReportMetric(wFirst.Seconds(), "s-first-op-redisson")
		b.ReportMetric(wRate/gRate, "ratio-redisson/emulation")
	}
}
