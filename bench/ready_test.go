package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// BenchmarkTimeToReady: how long each topology takes to come up (nodes answering, every client's proxies
// listening), on processes and, where a Docker engine answers, on containers, as ratios to one bare
// redis-server process start, all measured here side by side, median of 5.
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
	var rt *docker.Runtime
	if docker.EngineUp(ctx) {
		if err := docker.EnsureImage(ctx); err != nil {
			b.Fatal(err)
		}
		r, err := docker.Connect(ctx, docker.DefaultImage, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		rt = r
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
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
		fmt.Fprintf(os.Stdout, "\ntime to ready, 8 clients (median of 5), ratios to one bare redis-server process start (%.1f ms)\n", ms(bare))
		fmt.Fprintf(os.Stdout, "  %-10s %12s %7s %12s %7s %16s\n", "topology", "process ms", "ratio", "docker ms", "ratio", "docker/process")
		for _, spec := range []topology.Spec{{Kind: topology.Single}, {Kind: topology.Redlock, Nodes: 5},
			{Kind: topology.Sentinel}, {Kind: topology.Cluster}} {
			ready := func(runtime node.Runtime) time.Duration {
				return median5(func() time.Duration {
					spec.Clients, spec.Dir, spec.Runtime = clients, b.TempDir(), runtime
					t, err := topology.Start(ctx, spec)
					if err != nil {
						b.Fatal(err)
					}
					defer t.Stop()
					return t.Startup
				})
			}
			p := ready(nil)
			b.ReportMetric(float64(p)/float64(bare), "ratio-"+spec.Kind)
			if rt == nil {
				fmt.Fprintf(os.Stdout, "  %-10s %12.1f %7.1f %12s %7s %16s\n", spec.Kind, ms(p), float64(p)/float64(bare), "-", "-", "no engine")
				continue
			}
			d := ready(rt)
			b.ReportMetric(float64(d)/float64(bare), "ratio-docker-"+spec.Kind)
			fmt.Fprintf(os.Stdout, "  %-10s %12.1f %7.1f %12.1f %7.1f %16.1f\n", spec.Kind, ms(p), float64(p)/float64(bare),
				ms(d), float64(d)/float64(bare), float64(d)/float64(p))
		}
	}
}

// go-redis logs the dial failures of clients whose nodes a benchmark has just stopped; the figures are
// what matters here.
func init() { redis.SetLogger(quietLog{}) }

type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...interface{}) {}
