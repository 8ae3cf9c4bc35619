// Command shards runs make test's Go tests in one wall-clock window: the cmd/lockcheck package, whose chaos
// tests mostly wait on clocks (a fresh clone showed load under 0.5 for most of it), split by test name over
// several processes of one test binary, and every other package through go test, all at once.
//
// Each process has its own globals (os.Stderr swaps, the kinds registry, t.Setenv), so a test that is
// sequential inside its process stays so; across processes the tests share one worker build cache (builds
// are serialised by its lock files) and one lockcheck binary, and the docker tests take a machine-wide lock
// (internal/testkit/dockertest). Tests are dealt to shards longest first by the durations in weights.txt, which
// -write-weights refreshes from a run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	shards       int
	pkg          string
	timeout      time.Duration
	parallel     int
	weights      string
	writeWeights bool
	rest         bool
	run          string
}

func main() {
	var c config
	flag.IntVar(&c.shards, "shards", 4, "processes the sharded package's tests are split over")
	flag.StringVar(&c.pkg, "pkg", "./cmd/lockcheck", "the package whose tests are sharded")
	flag.DurationVar(&c.timeout, "timeout", 40*time.Minute, "each test process's -timeout")
	flag.IntVar(&c.parallel, "parallel", 4, "each test process's -parallel")
	flag.StringVar(&c.weights, "weights", "scripts/shards/weights.txt", "test durations used to balance the shards")
	flag.BoolVar(&c.writeWeights, "write-weights", false, "rewrite the weights file from this run's durations")
	flag.BoolVar(&c.rest, "rest", true, "also run every other package (go test ./... without the sharded one)")
	flag.StringVar(&c.run, "run", "", "only the sharded package's tests matching this regexp")
	flag.Parse()
	if c.shards < 1 || c.parallel < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: shards [-shards N] [-pkg ./cmd/lockcheck] [-timeout 40m] [-parallel 4] [-run RE] [-rest=false] [-write-weights]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shards:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// test is one top-level test of the sharded package, as a run saw it.
type test struct {
	name    string
	shard   int
	action  string // pass, fail, skip; "" if it never ended
	elapsed float64
	paused  bool // a parallel top-level test: it overlaps the shard's other parallel tests
	output  []string
}

func run(ctx context.Context, c config) (int, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "lockcheck-shards-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	importPath, err := goOutput(ctx, "list", "-f", "{{.ImportPath}}", c.pkg)
	if err != nil {
		return 1, err
	}
	dir, err := goOutput(ctx, "list", "-f", "{{.Dir}}", c.pkg)
	if err != nil {
		return 1, err
	}
	testBin := filepath.Join(tmp, "pkg.test")
	lcBin := filepath.Join(tmp, "lockcheck")
	if _, err := goOutput(ctx, "test", "-c", "-o", testBin, c.pkg); err != nil {
		return 1, err
	}
	if _, err := goOutput(ctx, "build", "-o", lcBin, c.pkg); err != nil {
		return 1, err
	}
	cache := filepath.Join(tmp, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		return 1, err
	}
	env := append(os.Environ(), "LOCKCHECK_TEST_CACHE="+cache, "LOCKCHECK_TEST_BINARY="+lcBin)

	list := exec.CommandContext(ctx, testBin, "-test.list", "^Test")
	list.Dir = dir
	list.Env = env
	listed, err := list.Output()
	if err != nil {
		return 1, fmt.Errorf("listing the tests of %s: %v", c.pkg, err)
	}
	names := strings.Fields(string(listed))
	listedNames := names
	if c.run != "" {
		names, err = matching(names, c.run)
		if err != nil {
			return 2, err
		}
	}
	weights, grouped := readWeights(c.weights)
	groups := deal(names, weights, grouped, c.shards)

	var wg sync.WaitGroup
	var mu sync.Mutex // one child's report at a time on stdout
	restFailed := false
	if c.rest {
		pkgs, err := otherPackages(ctx, importPath)
		if err != nil {
			return 1, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"test", "-count=1", "-timeout", c.timeout.String(), "-parallel", strconv.Itoa(c.parallel)}, pkgs...)
			cmd := exec.Command("go", args...)
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := runForwarding(ctx, cmd)
			failed := ""
			if err != nil {
				failed = fmt.Sprintf("go test (every package but %s): %v", importPath, err)
			}
			mu.Lock()
			defer mu.Unlock()
			os.Stdout.Write(out.Bytes())
			if failed != "" {
				restFailed = true
				fmt.Printf("FAIL\t%s\n", failed)
			}
		}()
	}
	results := make([][]*test, len(groups))
	shardErr := make([]error, len(groups))
	for i, g := range groups {
		if len(g) == 0 {
			continue
		}
		wg.Add(1)
		go func(i int, g []string) {
			defer wg.Done()
			t0 := time.Now()
			tests, stray, err := runShard(ctx, testBin, dir, importPath, env, g, c)
			for _, t := range tests {
				t.shard = i + 1
			}
			results[i], shardErr[i] = tests, err
			mu.Lock()
			defer mu.Unlock()
			report(os.Stdout, importPath, i+1, len(groups), tests, stray, err, time.Since(t0))
		}(i, g)
	}
	wg.Wait()

	var all []*test
	for _, r := range results {
		all = append(all, r...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].elapsed > all[j].elapsed })
	fmt.Printf("slowest tests of %s:", importPath)
	for _, t := range all[:min(8, len(all))] {
		fmt.Printf(" %s %.0fs (shard %d);", t.name, t.elapsed, t.shard)
	}
	fmt.Println()
	if c.writeWeights {
		kept := map[string]float64{} // -run measured some tests: the others (still in the package) keep theirs
		if c.run != "" {
			for _, n := range listedNames {
				if w, ok := weights[n]; ok {
					kept[n] = w
				}
			}
		}
		if err := writeWeights(c.weights, all, grouped, c.parallel, kept); err != nil {
			return 1, err
		}
	}
	var failed []string
	for i, r := range results {
		for _, t := range r {
			if t.failed() {
				failed = append(failed, fmt.Sprintf("%s (shard %d)", t.name, t.shard))
			}
		}
		if shardErr[i] != nil && !anyFailed(r) {
			failed = append(failed, fmt.Sprintf("shard %d: %v", i+1, shardErr[i]))
		}
	}
	if restFailed {
		failed = append(failed, "another package (its output is above)")
	}
	wall := time.Since(start).Round(time.Second)
	if ctx.Err() != nil {
		// A test process stopped by a signal leaves its docker containers (they are not its children):
		// lockcheck clean removes those of runs whose process is gone.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(cctx, lcBin, "clean").CombinedOutput(); err == nil && len(out) > 0 {
			os.Stdout.Write(out)
		}
		fmt.Printf("shards: interrupted after %s\n", wall)
		return 130, nil
	}
	if len(failed) > 0 {
		fmt.Printf("FAIL after %s: %s\n", wall, strings.Join(failed, ", "))
		return 1, nil
	}
	fmt.Printf("ok: every test passed in %s (%d processes of %s, and the other packages)\n", wall, len(groups), importPath)
	return 0, nil
}

// runShard runs one process of the test binary on the named tests and reads its events through test2json.
func runShard(ctx context.Context, bin, dir, importPath string, env, names []string, c config) ([]*test, []string, error) {
	re := "^(" + strings.Join(names, "|") + ")$"
	cmd := exec.Command(bin, "-test.v=test2json", "-test.run", re, "-test.count=1",
		"-test.timeout", c.timeout.String(), "-test.parallel", strconv.Itoa(c.parallel))
	cmd.Dir = dir
	cmd.Env = env
	conv := exec.Command("go", "tool", "test2json", "-t", "-p", importPath)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = cmd.Stdout
	conv.Stdin = pipe
	events, err := conv.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := conv.Start(); err != nil {
		return nil, nil, err
	}
	var order []*test
	var stray []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		order, stray = readEvents(events)
	}()
	runErr := runForwarding(ctx, cmd)
	<-done
	_ = conv.Wait()
	byName := map[string]*test{}
	for _, t := range order {
		byName[t.name] = t
	}
	for _, n := range names {
		if byName[n] == nil { // never started: a crash or a timeout before it
			t := &test{name: n, action: "unrun"}
			byName[n] = t
			order = append(order, t)
		}
	}
	return order, stray, runErr
}

// readEvents reads test2json's events (go tool test2json -t) into the top-level tests, in the order they
// started, and the lines that were not a test's. A test's elapsed is its own wall time from its start (or,
// a parallel one, its resumption) to its end, subtests included: go's Elapsed for a test leaves out its
// parallel subtests, so TestEveryControlIsFlagged's 20 runs weighed 0 s, and the dealer piled such tests on
// one shard.
func readEvents(r io.Reader) ([]*test, []string) {
	byName := map[string]*test{}
	began := map[string]time.Time{}
	var order []*test
	var stray []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			Time    time.Time
			Action  string
			Test    string
			Output  string
			Elapsed float64
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			stray = append(stray, sc.Text()+"\n")
			continue
		}
		if e.Test == "" {
			if e.Output != "" {
				stray = append(stray, e.Output)
			}
			continue
		}
		top, _, sub := strings.Cut(e.Test, "/")
		t := byName[top]
		if t == nil {
			t = &test{name: top}
			byName[top] = t
			order = append(order, t)
		}
		if e.Output != "" {
			t.output = append(t.output, e.Output)
		}
		if sub {
			continue
		}
		switch e.Action {
		case "run", "cont":
			began[top] = e.Time
		case "pause":
			t.paused = true
		case "pass", "fail", "skip":
			t.action, t.elapsed = e.Action, e.Elapsed
			if b, ok := began[top]; ok && !b.IsZero() && !e.Time.IsZero() {
				t.elapsed = max(t.elapsed, e.Time.Sub(b).Seconds())
			}
		}
	}
	return order, stray
}

// runForwarding runs cmd in a process group of its own and, when ctx ends (SIGINT or SIGTERM to this
// program), sends SIGTERM to the whole group, so that go test's test binaries stop too; it waits for cmd.
// A test process stops its own redis-servers and workers on SIGTERM, and they die with it (Pdeathsig).
func runForwarding(ctx context.Context, cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	defer close(exited)
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		case <-exited:
		}
	}()
	return cmd.Wait()
}

// failed: the test failed, never ended (a timeout's panic, a crash) or never started.
func (t *test) failed() bool { return t.action != "pass" && t.action != "skip" }

func anyFailed(tests []*test) bool {
	for _, t := range tests {
		if t.failed() {
			return true
		}
	}
	return false
}

// report prints a shard as go test prints a package: one line when it passed, and the whole output of
// each failed test (and of the process itself) when it did not.
func report(w io.Writer, importPath string, i, n int, tests []*test, stray []string, err error, took time.Duration) {
	passed, skipped := 0, 0
	for _, t := range tests {
		switch t.action {
		case "pass":
			passed++
		case "skip":
			skipped++
		}
	}
	if err == nil && !anyFailed(tests) {
		fmt.Fprintf(w, "ok  \t%s [shard %d/%d: %d passed, %d skipped]\t%.3fs\n", importPath, i, n, passed, skipped, took.Seconds())
		return
	}
	for _, t := range tests {
		if t.failed() {
			fmt.Fprintf(w, "--- output of %s (shard %d/%d) ---\n", t.name, i, n)
			for _, l := range t.output {
				io.WriteString(w, l)
			}
		}
	}
	for _, l := range stray {
		io.WriteString(w, l)
	}
	why := "a test failed"
	if err != nil {
		why = err.Error()
	}
	fmt.Fprintf(w, "FAIL\t%s [shard %d/%d: %s]\t%.3fs\n", importPath, i, n, why, took.Seconds())
}

// deal gives each test, or each group of tests as one, longest first, to the shard with the least work
// so far.
func deal(names []string, weights map[string]float64, groups map[string]string, n int) [][]string {
	w := func(s string) float64 {
		if v, ok := weights[s]; ok {
			return max(v, 0.5) // none is free: with no weight, 48 quick tests all went to one shard
		}
		return 5 // a new test: about a short run's length
	}
	type item struct {
		names  []string
		weight float64
	}
	var items []*item
	byGroup := map[string]*item{}
	for _, s := range names {
		g := groups[s]
		it := byGroup[g]
		if g == "" || it == nil {
			it = &item{}
			items = append(items, it)
			if g != "" {
				byGroup[g] = it
			}
		}
		it.names = append(it.names, s)
		it.weight += w(s)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].weight > items[j].weight })
	out := make([][]string, n)
	load := make([]float64, n)
	for _, it := range items {
		k := 0
		for j := range load {
			// ties go to the shard with the fewest tests
			if load[j] < load[k] || load[j] == load[k] && len(out[j]) < len(out[k]) {
				k = j
			}
		}
		out[k] = append(out[k], it.names...)
		load[k] += it.weight
	}
	return out
}

// readWeights reads "TestName seconds [group]" lines; a missing file deals every test the same weight.
// Tests of one group (docker: they take turns on the machine's engine) are dealt to one shard together, so
// that no other shard's sequential queue waits on the group's lock.
func readWeights(path string) (map[string]float64, map[string]string) {
	m, groups := map[string]float64{}, map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m, groups
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
			if len(f) == 3 {
				groups[f[0]] = f[2]
			}
		}
	}
	return m, groups
}

// writeWeights writes what each test adds to its shard's wall time: a sequential test its whole time, a
// parallel one its time shared with the -parallel others it overlaps. Dealt by their whole times, the shard
// of many sequential tests ended 250 s after the one of long parallel ones (475 s and 227 s). kept are the
// weights of tests this run did not measure (-run: a few tests re-measured on a shared machine, where a
// whole run's times are a guess), written back unchanged.
func writeWeights(path string, tests []*test, groups map[string]string, parallel int, kept map[string]float64) error {
	var b strings.Builder
	b.WriteString("# seconds each cmd/lockcheck test adds to its shard's wall time in one make test (a parallel test's\n")
	b.WriteString("# time over -parallel), and its group if it has one (go run ./scripts/shards -write-weights keeps the\n")
	b.WriteString("# groups; a group's tests share one shard)\n")
	w := map[string]float64{}
	for n, v := range kept {
		w[n] = v
	}
	for _, t := range tests {
		w[t.name] = t.elapsed
		if t.paused {
			w[t.name] /= float64(max(parallel, 1))
		}
	}
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s %.1f", n, w[n])
		if g := groups[n]; g != "" {
			b.WriteString(" " + g)
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func matching(names []string, re string) ([]string, error) {
	r, err := regexp.Compile(re)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if r.MatchString(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func otherPackages(ctx context.Context, skip string) ([]string, error) {
	out, err := goOutput(ctx, "list", "./...")
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, p := range strings.Fields(out) {
		if p != skip {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, nil
}

// goOutput runs the go command and returns its trimmed stdout, or its stderr as the error.
func goOutput(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.New("go " + strings.Join(args, " ") + ": " + strings.TrimSpace(stderr.String()+" "+err.Error()))
	}
	return strings.TrimSpace(string(out)), nil
}
