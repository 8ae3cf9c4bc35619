// Package violation measures how fast lockcheck finds the classic unsafe scenarios: the time from a run's
// start to its first violation, median over seeds, and how many seeds caught it at all, with the faults on
// the clock and fired by the lock's own events (--nemesis-trigger), side by side. It takes long (about
// 100 minutes for 20 seeds, more when porcupine runs out of time on a failover's history): `make bench`
// runs it; BENCH_SEEDS=N runs fewer seeds, BENCH_SCENARIO=word only the scenarios whose name has it.
package violation

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scenarios are the classic unsafe runs (README "Faults"), with the lengths used there.
var scenarios = []struct {
	name string
	args []string
}{
	{"naive, Sentinel failover", []string{"--lock", "naive", "--topology", "sentinel", "--nemesis", "failover",
		"--nemesis-interval", "3s", "--nemesis-duration", "12s", "--time", "40s"}},
	{"reentrant, lagging failover, holds 2-5s", []string{"--lock", "reentrant", "--topology", "sentinel",
		"--nemesis", "lagging-failover", "--nemesis-interval", "3s", "--nemesis-duration", "9s", "--keys", "4",
		"--hold", "2s-5s", "--time", "40s"}},
	{"redlock-spec, majority clock jump", []string{"--lock", "redlock-spec", "--nemesis", "clock",
		"--nemesis-interval", "1s", "--nemesis-duration", "1s", "--time", "20s"}},
	{"reentrant, client pause beyond the lease", []string{"--lock", "reentrant", "--nemesis", "client-pause",
		"--watchdog", "1s", "--nemesis-interval", "1s", "--nemesis-duration", "3s", "--time", "20s"}},
	{"setnx-retry-broken unlock, dropped replies", []string{"--lock-spec", "examples/locks/setnx-retry-broken.yaml",
		"--nemesis", "drop-reply", "--nemesis-interval", "1s", "--nemesis-duration", "1s", "--timeout", "400ms",
		"--time", "20s"}},
}

func BenchmarkTimeToViolation(b *testing.B) {
	seeds := 20
	if s, err := strconv.Atoi(os.Getenv("BENCH_SEEDS")); err == nil && s > 0 {
		seeds = s
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "lockcheck")).CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for i := 0; i < b.N; i++ {
		fmt.Printf("\ntime to first violation after the workload began, %d seeds (median of the caught; caught/seeds)\n", seeds)
		fmt.Printf("  %-45s %22s %22s\n", "scenario", "on the clock", "--nemesis-trigger")
		for _, sc := range scenarios {
			if only := os.Getenv("BENCH_SCENARIO"); only != "" && !strings.Contains(sc.name, only) {
				continue
			}
			var line [2]string
			for m, trigger := range []bool{false, true} {
				var found []time.Duration
				for seed := 1; seed <= seeds; seed++ {
					results := b.TempDir()
					args := append([]string{"run"}, sc.args...)
					args = append(args, "--seed", strconv.Itoa(seed), "--results", results)
					if trigger {
						args = append(args, "--nemesis-trigger")
					}
					if d, ok := firstViolation(b, root, bin, results, args); ok {
						found = append(found, d)
					}
				}
				line[m] = fmt.Sprintf("%6s  %2d/%d", medianText(found), len(found), seeds)
			}
			fmt.Printf("  %-45s %22s %22s\n", sc.name, line[0], line[1])
		}
	}
}

// firstViolation runs lockcheck and reads the earliest invalid checker's time from results.json.
func firstViolation(b *testing.B, root, bin, results string, args []string) (time.Duration, bool) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	_ = cmd.Run() // exit 1 is the point; the verdict is read from results.json
	data, err := os.ReadFile(filepath.Join(results, "latest", "results.json"))
	if err != nil {
		b.Fatalf("lockcheck %v: no results: %v", args, err)
	}
	var r struct {
		Checkers []struct {
			Valid any   `json:"valid"`
			At    int64 `json:"violation_at_ns"`
		} `json:"checkers"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatal(err)
	}
	first := int64(-1)
	for _, c := range r.Checkers {
		if c.Valid == false && (first < 0 || c.At < first) {
			first = c.At
		}
	}
	return time.Duration(first), first >= 0
}

func medianText(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("%.1fs", ds[len(ds)/2].Seconds())
}
