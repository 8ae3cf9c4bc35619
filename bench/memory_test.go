package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

// BenchmarkHistoryMemory: a synthetic run of 1M operations over 1000 keys fed through the recorder (the
// path every run's records take), then `lockcheck check` of that history in its own process, each beside
// its base (the same with 1000 operations), as bytes per operation above the base. Targets: <= 256 B/op
// and < 500 MB while recording; the check in < 10 s and < 1 GB.
func BenchmarkHistoryMemory(b *testing.B) {
	const big, small, keys = 1_000_000, 1_000, 1000
	dir := b.TempDir()
	bin := filepath.Join(dir, "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/lockcheck").CombinedOutput(); err != nil {
		b.Fatalf("build lockcheck: %v\n%s", err, out)
	}
	for i := 0; i < b.N; i++ {
		smallPath, bigPath := filepath.Join(dir, "small.jsonl"), filepath.Join(dir, "big.jsonl")
		baseHeap := liveHeap()
		if _, err := histgen.WriteFile(smallPath, histgen.Spec{Ops: small, Keys: keys, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		startRSS := peakRSS()
		n, err := histgen.WriteFile(bigPath, histgen.Spec{Ops: big, Keys: keys, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		endRSS, endHeap := peakRSS(), liveHeap()
		baseCheck := checkRun(b, bin, smallPath)
		bigCheck := checkRun(b, bin, bigPath)
		fi, _ := os.Stat(bigPath)
		recPerOp := float64(max(endHeap-baseHeap, 0)) / float64(n)
		checkPerOp := float64(bigCheck.rss-baseCheck.rss) / float64(n)
		fmt.Fprintf(os.Stdout, "\nhistory memory, %d operations over %d keys (%d MB on disk)\n", n, keys, fi.Size()>>20)
		fmt.Fprintf(os.Stdout, "  recording: live heap %+6.1f B/op (target <= 256); peak RSS %4d MB, %4d MB before the feed (target < 500 MB)\n",
			recPerOp, endRSS>>20, startRSS>>20)
		fmt.Fprintf(os.Stdout, "  check:     peak RSS %4d MB, %4d MB for %d ops (base): %6.0f B/op above the base (target < 1 GB in all)\n",
			bigCheck.rss>>20, baseCheck.rss>>20, small, checkPerOp)
		fmt.Fprintf(os.Stdout, "             cpu %5.1f s (user+sys), wall %5.1f s; base cpu %.1f s (target < 10 s)\n",
			bigCheck.cpu.Seconds(), bigCheck.wall.Seconds(), baseCheck.cpu.Seconds())
		b.ReportMetric(recPerOp, "rec-B/op")
		b.ReportMetric(float64(bigCheck.rss>>20), "check-MB")
		b.ReportMetric(bigCheck.cpu.Seconds(), "check-cpu-s")
	}
}

type usage struct {
	rss       int64 // bytes, the peak of the process and its children
	cpu, wall time.Duration
}

// checkRun runs lockcheck check on path and returns its peak RSS and times; the verdict must be valid.
func checkRun(b *testing.B, bin, path string) usage {
	cmd := exec.Command(bin, "check", path)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("lockcheck check %s: %v\n%s", path, err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return usage{rss: ru.Maxrss << 10, wall: wall,
		cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

// liveHeap is the heap still reachable after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// peakRSS is this process's peak resident set so far.
func peakRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss << 10
}
