package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/runner"
)

// BenchmarkThreads: the same total concurrency (8 owners) as 2 client instances × 4 threads and as
// 8 instances × 1 thread, side by side, on one fault-free RLock run each (8 keys, holds 1-5 ms): operations
// and critical sections per second, and the ratio threads/instances. Threads share their instance's
// connection pool and pub/sub connection, as an application's thread pool shares one RedissonClient.
func BenchmarkThreads(b *testing.B) {
	results := b.TempDir()
	one := func(clients, threads int) (ops, secs float64) {
		o := runner.Defaults()
		o.Lock, o.Clients, o.Threads, o.Keys = "reentrant", clients, threads, 8
		o.Time, o.Quiet, o.Seed, o.Results = 8*time.Second, time.Second, 1, results
		o.Hold, o.Reentry = "1ms-5ms", 0
		res, err := runner.Run(context.Background(), o, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		h, err := history.ReadFile(res.Files["history"])
		if err != nil {
			b.Fatal(err)
		}
		if len(h.Ops) == 0 {
			b.Fatalf("%d×%d: no operations", clients, threads)
		}
		d := float64(h.End()-h.Ops[0].Invoke.Time) / 1e9
		user := 0
		for _, op := range h.Ops {
			if op.Invoke.F == "tryLock" || op.Invoke.F == "unlock" {
				user++
			}
		}
		return float64(user) / d, float64(len(h.Sections)) / d
	}
	for i := 0; i < b.N; i++ {
		tOps, tSecs := one(2, 4)
		cOps, cSecs := one(8, 1)
		fmt.Fprintf(os.Stdout, "\nthreads vs instances, RLock, 8 owners, 8 keys, 8 s fault-free, holds 1-5 ms\n")
		fmt.Fprintf(os.Stdout, "  %-22s %12s %12s\n", "", "tryLock+unlock/s", "sections/s")
		fmt.Fprintf(os.Stdout, "  %-22s %12.0f %12.0f\n", "--clients 2 --threads 4", tOps, tSecs)
		fmt.Fprintf(os.Stdout, "  %-22s %12.0f %12.0f\n", "--clients 8 --threads 1", cOps, cSecs)
		fmt.Fprintf(os.Stdout, "  %-22s %12.2f %12.2f\n", "ratio threads/instances", tOps/cOps, tSecs/cSecs)
		b.ReportMetric(tOps/cOps, "ratio-threads/instances")
	}
}
