package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
)

// primitive is one lock's main acquire, as lockcheck runs it and as redis-benchmark runs its script.
type primitive struct {
	name   string
	script string
	keys   []string // redis-benchmark keys (with __rand_int__)
	args   []string
	preset map[string]string // keys to set first (counters with room for every acquire)
	op     func(ctx context.Context, r *locks.Redisson, rng *rand.Rand) error
}

func fresh(prefix string, rng *rand.Rand) string { return prefix + strconv.Itoa(rng.IntN(1_000_000)) }

func primitives() []primitive {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	big := "1000000000000"
	return []primitive{
		{name: "reentrant", script: "acquire", keys: []string{"b:__rand_int__"}, args: []string{"30000", "o:1"},
			op: func(ctx context.Context, r *locks.Redisson, rng *rand.Rand) error {
				_, err := r.Lock(fresh("b:", rng), 1).TryLock(ctx, 0, 30*time.Second)
				return err
			}},
		{name: "fenced", script: "fenced_acquire", keys: []string{"f:__rand_int__", "tok"}, args: []string{"30000", "o:1"},
			op: func(ctx context.Context, r *locks.Redisson, rng *rand.Rand) error {
				_, err := r.FencedLock(fresh("f:", rng), 1, false).TryLock(ctx, 0, 30*time.Second)
				return err
			}},
		{name: "fair", script: "fair_acquire", keys: []string{"fa:__rand_int__", "q:__rand_int__", "t:__rand_int__"},
			args: []string{"30000", "o:1", "5000", now},
			op: func(ctx context.Context, r *locks.Redisson, rng *rand.Rand) error {
				_, err := r.FairLock(fresh("fa:", rng), 1, false).TryLock(ctx, 0, 30*time.Second)
				return err
			}},
		{name: "rwlock (write)", script: "rw_write_acquire", keys: []string{"rw:__rand_int__"}, args: []string{"30000", "o:1:write"},
			op: func(ctx context.Context, r *locks.Redisson, rng *rand.Rand) error {
				_, err := r.WriteLock(fresh("rw:", rng), 1).TryLock(ctx, 0, 30*time.Second)
				return err
			}},
		{name: "semaphore", script: "sem_acquire", keys: []string{"sem"}, args: []string{"1"}, preset: map[string]string{"sem": big},
			op: func(ctx context.Context, r *locks.Redisson, _ *rand.Rand) error {
				_, err := r.Semaphore("sem", 1, false).TryAcquire(ctx, 1, 0)
				return err
			}},
		{name: "expirable-semaphore", script: "pes_acquire", keys: []string{"pes", "{pes}:timeout", "redisson_sc:{pes}"},
			args: []string{"1", "99999999999999", now, "922337203685477", "publish", "id__rand_int__"}, preset: map[string]string{"pes": big},
			op: func(ctx context.Context, r *locks.Redisson, _ *rand.Rand) error {
				_, err := r.PermitExpirableSemaphore("pes", 1, false).TryAcquire(ctx, 0, 30*time.Second)
				return err
			}},
		{name: "latch (countDown)", script: "latch_count_down", keys: []string{"latch", "ch"}, args: []string{"0", "publish"},
			preset: map[string]string{"latch": big},
			op: func(ctx context.Context, r *locks.Redisson, _ *rand.Rand) error {
				return r.CountDownLatch("latch", 1, false).CountDown(ctx)
			}},
	}
}

// runOp runs op from concurrency clients (each its own Redisson instance, history recorded and discarded)
// for d and returns operations per second.
func runOp(b *testing.B, addr, password string, d time.Duration, op func(context.Context, *locks.Redisson, *rand.Rand) error) float64 {
	scripts, _ := locks.LoadScripts("redisson", "")
	rec := history.NewRecorder(io.Discard, history.NewClock())
	var total atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for c := 0; c < concurrency; c++ {
		r := locks.NewRedisson(fmt.Sprintf("c%d", c), locks.ClientConfig{Addr: addr, Password: password, PoolSize: 1},
			locks.DefaultRedissonConfig(), scripts, rec)
		defer r.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 2))
			k := int64(0)
			for time.Now().Before(stop) {
				if err := op(context.Background(), r, rng); err != nil {
					b.Error(err)
					return
				}
				k++
			}
			total.Add(k)
		}()
	}
	wg.Wait()
	return float64(total.Load()) / d.Seconds()
}

// benchScript runs p's script through redis-benchmark at the same concurrency and returns requests/s.
func benchScript(b *testing.B, n *node.Node, p primitive, requests int) float64 {
	return benchScriptAt(b, n, n.Port(), p, requests)
}

// loadScript loads p's script on the node and returns its SHA, for EVALSHA.
func loadScript(b *testing.B, n *node.Node, p primitive) string {
	scripts, _ := locks.LoadScripts("redisson", "")
	admin := redistest.Client(b, n.Addr(), n.Password())
	sha, err := admin.ScriptLoad(context.Background(), scripts.Source(p.script)).Result()
	if err != nil {
		b.Fatal(err)
	}
	return sha
}

// benchScriptAt is benchScript sent to port, the node's or a proxy's in front of it.
func benchScriptAt(b *testing.B, n *node.Node, port int, p primitive, requests int) float64 {
	sha := loadScript(b, n, p)
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-a", n.Password(), "-c", strconv.Itoa(concurrency),
		"-n", strconv.Itoa(requests), "-r", "1000000", "-q", "EVALSHA", sha, strconv.Itoa(len(p.keys))}
	out, err := exec.Command("redis-benchmark", append(append(args, p.keys...), p.args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	m := rps.FindStringSubmatch(string(out))
	if m == nil {
		b.Fatalf("redis-benchmark printed no rate:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// BenchmarkPrimitives: each primitive's acquire through lockcheck's client (history recorded) against
// redis-benchmark running the same script at the same concurrency, as a ratio. Composite locks (multi,
// redlock, redlock-spec) run these scripts once per member and have no single script to compare.
func BenchmarkPrimitives(b *testing.B) {
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(os.Stdout, "\nprimitive throughput, %d clients (lockcheck / redis-benchmark on the same script)\n", concurrency)
		for _, p := range primitives() {
			n := redistest.Start(b, node.PersistNone)
			admin := redistest.Client(b, n.Addr(), n.Password())
			for k, v := range p.preset {
				admin.Set(context.Background(), k, v, 0)
			}
			base := benchScript(b, n, p, 60_000)
			lc := runOp(b, n.Addr(), n.Password(), 2*time.Second, p.op)
			fmt.Fprintf(os.Stdout, "  %-22s %8.0f /s vs %8.0f /s   ratio %.2f\n", p.name, lc, base, lc/base)
			b.ReportMetric(lc/base, "ratio-"+p.script)
			n.Stop()
		}
	}
}
