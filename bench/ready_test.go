package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/topology"
)

// BenchmarkTimeToReady: how long each topology takes to come up (nodes answering, every client's proxies
// listening), as a ratio to one bare redis-server start, both measured here, median of 5.
func BenchmarkTimeToReady(b *testing.B) {
	ctx := context.Background()
	clients := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}
	median5 := func(f func() time.Duration) time.Duration {
		var ds []float64
		for i := 0; i < 5; i++ {
			ds = append(ds, float64(f()))
		}
		return time.Duration(median(ds))
	}
	for i := 0; i < b.N; i++ {
		bare := median5(func() time.Duration {
			start := time.Now()
			n, err := node.Start(ctx, node.Config{Name: "n1", Dir: b.TempDir(), Password: node.NewPassword()})
			if err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			n.Stop()
			return d
		})
		fmt.Fprintf(os.Stdout, "\ntime to ready, 8 clients (median of 5)\n  bare redis-server       %7.1f ms\n", float64(bare.Microseconds())/1000)
		for _, spec := range []topology.Spec{{Kind: topology.Single}, {Kind: topology.Redlock, Nodes: 5}, {Kind: topology.Sentinel}} {
			d := median5(func() time.Duration {
				spec.Clients, spec.Dir = clients, b.TempDir()
				t, err := topology.Start(ctx, spec)
				if err != nil {
					b.Fatal(err)
				}
				defer t.Stop()
				return t.Startup
			})
			fmt.Fprintf(os.Stdout, "  %-22s  %7.1f ms   ratio %.1f\n", spec.Kind, float64(d.Microseconds())/1000, float64(d)/float64(bare))
			b.ReportMetric(float64(d)/float64(bare), "ratio-"+spec.Kind)
		}
	}
}
