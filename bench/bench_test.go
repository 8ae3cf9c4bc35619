// Package bench holds the speed targets, each measured side by side with its yardstick in one run and
// printed as a ratio: `make bench`.
package bench

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/node"
)

const concurrency = 8

var rps = regexp.MustCompile(`([0-9.]+) requests per second`)

// BenchmarkLockThroughput: lockcheck's RLock acquire rate against redis-benchmark running the same script
// at the same concurrency, straight to the node and through a toxiproxy link. Targets (issue 12): ratio
// >= 0.9 direct, >= 0.8 through the link. Beside them, what the hop itself allows: redis-benchmark through
// the same link, and through the plainest proxy Go has (two io.Copy per connection, which splice(2) in the
// kernel), so that a ratio below target can be told apart as the client's or the proxy's.
func BenchmarkLockThroughput(b *testing.B) {
	n := redistest.Start(b, node.PersistNone)
	px := network.New()
	defer px.Close()
	link, err := px.Add("bench->n1", n.Addr())
	if err != nil {
		b.Fatal(err)
	}
	plain := spliceProxy(b, n.Addr())
	for i := 0; i < b.N; i++ {
		// Rounds alternate the measures so that drift in the machine's speed hits all of them; medians are kept.
		var bases, directs, proxieds, linkBases, plainBases, plainLCs, bares []float64
		for round := 0; round < 3; round++ {
			rlock := primitives()[0]
			bases = append(bases, benchScript(b, n, rlock, 100_000))
			directs = append(directs, runOp(b, n.Addr(), n.Password(), 2*time.Second, rlock.op))
			proxieds = append(proxieds, runOp(b, link.Addr(), n.Password(), 2*time.Second, rlock.op))
			linkBases = append(linkBases, benchScriptAt(b, n, portOf(b, link.Addr()), rlock, 100_000))
			plainBases = append(plainBases, benchScriptAt(b, n, portOf(b, plain), rlock, 100_000))
			plainLCs = append(plainLCs, runOp(b, plain, n.Password(), 2*time.Second, rlock.op))
			bares = append(bares, bareRate(b, n, n.Addr(), rlock, 2*time.Second))
		}
		base, direct, proxied := median(bases), median(directs), median(proxieds)
		linkBase, plainBase, plainLC, bare := median(linkBases), median(plainBases), median(plainLCs), median(bares)
		fmt.Fprintf(os.Stdout, "\nlock throughput, %d clients, RLock acquire script on fresh keys (median of 3 rounds; load average %s)\n",
			concurrency, loadAverage())
		fmt.Fprintf(os.Stdout, "  redis-benchmark EVALSHA        %8.0f /s\n", base)
		fmt.Fprintf(os.Stdout, "  lockcheck RLock, direct        %8.0f /s   ratio %.2f (target >= 0.90)\n", direct, direct/base)
		fmt.Fprintf(os.Stdout, "  lockcheck RLock, via toxiproxy %8.0f /s   ratio %.2f (target >= 0.80)\n", proxied, proxied/base)
		fmt.Fprintf(os.Stdout, "  bare Go RESP client, direct    %8.0f /s   ratio %.2f; lockcheck / this %.2f\n", bare, bare/base, direct/bare)
		fmt.Fprintf(os.Stdout, "  what the hop allows:\n")
		fmt.Fprintf(os.Stdout, "  redis-benchmark, via toxiproxy %8.0f /s   ratio %.2f; lockcheck / this %.2f\n", linkBase, linkBase/base, proxied/linkBase)
		fmt.Fprintf(os.Stdout, "  redis-benchmark, via io.Copy   %8.0f /s   ratio %.2f\n", plainBase, plainBase/base)
		fmt.Fprintf(os.Stdout, "  lockcheck RLock, via io.Copy   %8.0f /s   ratio %.2f\n", plainLC, plainLC/base)
		b.ReportMetric(direct/base, "ratio-direct")
		b.ReportMetric(proxied/base, "ratio-proxied")
		b.ReportMetric(linkBase/base, "ratio-bench-via-link")
		b.ReportMetric(plainBase/base, "ratio-bench-via-copy")
		b.ReportMetric(bare/base, "ratio-bare-go")
	}
}

// spliceProxy listens on loopback and forwards each connection to upstream with io.Copy both ways, until
// the benchmark ends: the least a proxy in Go can do.
func spliceProxy(b *testing.B, upstream string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			b.Cleanup(func() { c.Close(); u.Close() })
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func portOf(b *testing.B, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// loadAverage is the 1-minute load average: on a shared machine the ratios move with it (redis-benchmark's
// one event loop suffers more from a busy machine than 8 goroutines do).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// legalHistory generates n lock commands over keys keys: on each key, clients take turns holding the lock
// (acquire, sometimes re-enter, release) while others are refused, with overlapping calls, as a busy run
// records them.
func legalHistory(n, keys int) []porcupine.Operation {
	rng := rand.New(rand.NewPCG(7, 7))
	var ops []porcupine.Operation
	perKey := n / keys
	for k := 0; k < keys; k++ {
		key := "lock-" + strconv.Itoa(k)
		t := int64(0)
		add := func(client int, f string, out checker.Reply, call, ret int64) {
			owner := "c" + strconv.Itoa(client) + "/1"
			ops = append(ops, porcupine.Operation{ClientId: client,
				Input:  checker.Command{Key: key, Client: owner, F: f, Owner: owner, Lease: int64(30 * time.Second), Call: call, Return: ret},
				Output: out, Call: call, Return: ret})
		}
		count := 0
		for count < perKey {
			holder := rng.IntN(8)
			add(holder, "acquire", checker.Reply{Outcome: checker.Applied}, t, t+100_000)
			count++
			if rng.IntN(4) == 0 {
				add(holder, "acquire", checker.Reply{Outcome: checker.Applied}, t+200_000, t+300_000)
				add(holder, "release", checker.Reply{Outcome: checker.Applied, Value: 0}, t+400_000, t+500_000)
				count += 2
			}
			for w := 0; w < 3; w++ { // refused waiters, overlapping each other
				if c := rng.IntN(8); c != holder {
					s := t + 150_000 + int64(w)*50_000
					add(c, "acquire", checker.Reply{Outcome: checker.Refused, Value: 29000}, s, s+200_000)
					count++
				}
			}
			add(holder, "release", checker.Reply{Outcome: checker.Applied, Value: 1}, t+600_000, t+700_000)
			count++
			t += 800_000
		}
	}
	return ops
}

// BenchmarkPorcupine100k: the porcupine check of a 100k-command history over 100 keys. Target < 5 s.
func BenchmarkPorcupine100k(b *testing.B) {
	ops := legalHistory(100_000, 100)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res := porcupine.CheckOperationsTimeout(checker.MutexModel.ToModel(), ops, time.Minute)
		took := time.Since(start)
		if res != porcupine.Ok {
			b.Fatalf("generated history judged %v", res)
		}
		start = time.Now()
		vres, _ := porcupine.CheckOperationsVerbose(checker.MutexModel.ToModel(), ops, time.Minute)
		vtook := time.Since(start)
		if vres != porcupine.Ok {
			b.Fatalf("verbose check judged %v", vres)
		}
		fmt.Fprintf(os.Stdout, "\nporcupine, %d commands over 100 keys\n", len(ops))
		fmt.Fprintf(os.Stdout, "  check            %6.2f s   (target < 5 s, ratio to target %.2f)\n", took.Seconds(), took.Seconds()/5)
		fmt.Fprintf(os.Stdout, "  verbose (HTML)   %6.2f s\n", vtook.Seconds())
		b.ReportMetric(took.Seconds(), "check-s")
		b.ReportMetric(math.Round(vtook.Seconds()*100)/100, "verbose-s")
	}
}
