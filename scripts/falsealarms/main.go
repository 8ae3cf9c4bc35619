// Command falsealarms (`make falsealarms`) runs lockcheck where it must find nothing: fault-free runs of
// every lock the Go emulation has, and seeds of each fault combination that must stay safe. Any invalid
// verdict is a false alarm or a real finding; each one is named with the command that reproduces it.
package main

import (
	"context"
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

	"github.com/lockcheck/lockcheck/kinds"
)

// Case is one line of the campaign: a lock, the run's flags, and how many seeds (1..Seeds) to run.
type Case struct {
	Name  string
	Lock  string
	Args  []string // besides --lock, --seed and --results
	Seeds int
}

// Command is what reproduces one run of the case by hand.
func (c Case) Command(seed int) []string {
	args := append([]string{"run", "--lock", c.Lock}, c.Args...)
	return append(args, "--seed", strconv.Itoa(seed))
}

// The runs that must be valid. Fault-free runs are short; the fault combinations are the documented safe
// ones: Redisson's WAIT on Sentinel failover and on CLUSTER FAILOVER, the fenced lock's tokens under a client pause beyond its
// lease, and every lock under partitions and kill -9 with every write fsynced (AOF always).
var (
	faultFree = []string{"--time", "4s", "--quiet", "1s"}
	safe      = []struct {
		name  string
		locks func() []string // nil: every emulated lock
		args  []string
	}{
		{"sentinel-failover", only("reentrant"), []string{"--topology", "sentinel", "--nemesis", "failover",
			"--nemesis-interval", "3s", "--nemesis-duration", "8s", "--time", "25s"}},
		// Settled in issue 12: WAIT-acknowledged locks survive CLUSTER FAILOVER in every mode.
		{"cluster-failover-command", only("reentrant"), []string{"--topology", "cluster", "--nemesis", "failover-command",
			"--nemesis-interval", "2s", "--nemesis-duration", "4s", "--time", "20s"}},
		{"client-pause", only("fenced"), []string{"--nemesis", "client-pause", "--watchdog", "1s",
			"--nemesis-interval", "1s", "--nemesis-duration", "3s", "--time", "12s", "--quiet", "1s"}},
		// On single, except the locks over independent masters, which run on their own topology.
		{"partition-kill-aof", nil, []string{"--nemesis", "partition,kill", "--persistence", "always",
			"--nemesis-interval", "1s", "--nemesis-duration", "2s", "--time", "10s", "--quiet", "1s"}},
	}
)

func only(names ...string) func() []string { return func() []string { return names } }

// emulated lists the locks the Go emulation has: not the negative controls, not a library's own lock.
func emulated() []string {
	var out []string
	for _, name := range kinds.KindNames() {
		if k, _ := kinds.Lookup(name); k.Broken == "" && !k.WorkerOnly {
			out = append(out, name)
		}
	}
	return out
}

// Cases is the campaign: runs fault-free seeds per lock, seeds per safe combination.
func Cases(runs, seeds int) []Case {
	var out []Case
	for _, l := range emulated() {
		out = append(out, Case{Name: "fault-free/" + l, Lock: l, Args: faultFree, Seeds: runs})
	}
	for _, s := range safe {
		ls := emulated()
		if s.locks != nil {
			ls = s.locks()
		}
		for _, l := range ls {
			out = append(out, Case{Name: s.name + "/" + l, Lock: l, Args: s.args, Seeds: seeds})
		}
	}
	return out
}

// Exit codes of lockcheck run.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
)

// Outcome is one run's verdict.
type Outcome struct {
	Case Case
	Seed int
	Code int
	Dir  string // its run directory (kept unless valid)
	Took time.Duration
	Why  string // why the campaign stopped it, if it did
}

// Tally counts a campaign's outcomes; the ones not valid are listed.
type Tally struct {
	Runs, Valid, Invalid, Unknown, Errors int
	Bad                                   []Outcome
	Groups                                map[string]*Group // by the case name's first part
}

// Group is the count and time of one kind of case (fault-free, sentinel-failover, ...).
type Group struct {
	Runs, Valid int
	Took        time.Duration // summed over its runs
}

func (t *Tally) add(o Outcome) {
	t.Runs++
	if t.Groups == nil {
		t.Groups = map[string]*Group{}
	}
	name, _, _ := strings.Cut(o.Case.Name, "/")
	g := t.Groups[name]
	if g == nil {
		g = &Group{}
		t.Groups[name] = g
	}
	g.Runs++
	g.Took += o.Took
	if o.Code == exitValid {
		g.Valid++
	}
	switch o.Code {
	case exitValid:
		t.Valid++
		return
	case exitInvalid:
		t.Invalid++
	case exitUnknown:
		t.Unknown++
	default:
		t.Errors++ // bad input or a harness error: the run proved nothing
	}
	t.Bad = append(t.Bad, o)
}

// Campaign runs the cases through the lockcheck binary bin, parallel runs at a time, under root.
type Campaign struct {
	Bin      string
	Root     string
	Parallel int
	Keep     bool // keep the run directories of valid runs too
	Out      io.Writer
	// Limit bounds each run's wall time and MaxRSS its process tree's memory (0: unbounded); a run
	// stopped for either has no verdict, and says why.
	Limit  time.Duration
	MaxRSS int64
	First  int // the first seed of every case (a long campaign can go on where another stopped); 0 is 1
}

// Run runs every seed of every case and returns the tally; ctx ends it early (the runs cut short are not
// counted).
func (c Campaign) Run(ctx context.Context, cases []Case) Tally {
	type job struct {
		c    Case
		seed int
	}
	jobs := make(chan job)
	results := make(chan Outcome)
	var wg sync.WaitGroup
	for i := 0; i < max(c.Parallel, 1); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				o, ok := c.one(ctx, j.c, j.seed)
				if ok {
					results <- o
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, cs := range cases {
			for s := max(c.First, 1); s < max(c.First, 1)+cs.Seeds; s++ {
				select {
				case jobs <- job{cs, s}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var t Tally
	for o := range results {
		t.add(o)
		if o.Code != exitValid {
			fmt.Fprintf(c.Out, "%s seed %d: %s (%s)\n", o.Case.Name, o.Seed, o.verdict(), o.Dir)
		}
	}
	return t
}

// one runs one seed of a case; false when ctx ended it.
func (c Campaign) one(ctx context.Context, cs Case, seed int) (Outcome, bool) {
	dir := filepath.Join(c.Root, filepath.FromSlash(cs.Name), "seed-"+strconv.Itoa(seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Outcome{Case: cs, Seed: seed, Code: -1, Dir: dir}, true
	}
	log, err := os.Create(filepath.Join(dir, "output.txt"))
	if err != nil {
		return Outcome{Case: cs, Seed: seed, Code: -1, Dir: dir}, true
	}
	defer log.Close()
	cmd := exec.Command(c.Bin, append(cs.Command(seed), "--results", dir)...)
	cmd.Stdout, cmd.Stderr = log, log
	// lockcheck stops on SIGINT with a final heal and its children torn down: never kill it outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(log, "falsealarms: %v\n", err)
		return Outcome{Case: cs, Seed: seed, Code: -1, Dir: dir}, true
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(os.Interrupt)
		case <-done:
		}
	}()
	why := make(chan string, 1)
	go func() { why <- guard(cmd.Process.Pid, c.Limit, c.MaxRSS, done) }()
	err = cmd.Wait()
	close(done)
	stopped := <-why
	if ctx.Err() != nil {
		return Outcome{}, false
	}
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 || stopped != "" {
		code = -1
	}
	if stopped != "" {
		fmt.Fprintf(log, "falsealarms: stopped: %s\n", stopped)
	}
	o := Outcome{Case: cs, Seed: seed, Code: code, Dir: dir, Took: time.Since(start), Why: stopped}
	if code == exitValid && !c.Keep {
		_ = os.RemoveAll(dir) // a valid run's history is of no further use; a campaign would fill the disk
	}
	return o, true
}

func (o Outcome) verdict() string {
	if o.Why != "" {
		return "no verdict (stopped: " + o.Why + ")"
	}
	switch o.Code {
	case exitValid:
		return "valid"
	case exitInvalid:
		return "INVALID"
	case exitUnknown:
		return "unknown"
	}
	return fmt.Sprintf("no verdict (exit %d)", o.Code)
}

// Report prints the totals, then each run that was not valid with the command that reproduces it.
func Report(w io.Writer, t Tally, took time.Duration) {
	fmt.Fprintf(w, "falsealarms: %d runs, %d invalid, %d unknown, %d without a verdict, in %s\n",
		t.Runs, t.Invalid, t.Unknown, t.Errors, took.Round(time.Second))
	names := make([]string, 0, len(t.Groups))
	for n := range t.Groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := t.Groups[n]
		fmt.Fprintf(w, "  %-20s %4d runs, %4d valid, %.1f s a run\n", n, g.Runs, g.Valid, g.Took.Seconds()/float64(g.Runs))
	}
	for _, o := range t.Bad {
		fmt.Fprintf(w, "  %s: lockcheck %s   (%s)\n", o.verdict(), strings.Join(o.Case.Command(o.Seed), " "), o.Dir)
	}
}

func main() {
	bin := flag.String("bin", "bin/lockcheck", "the lockcheck binary")
	runs := flag.Int("runs", 100, "fault-free runs (seeds) per lock")
	seeds := flag.Int("seeds", 20, "seeds per safe fault combination")
	parallel := flag.Int("parallel", 2, "runs at a time")
	root := flag.String("dir", "", "where run directories go (default: a new temporary directory)")
	keep := flag.Bool("keep", false, "keep the run directories of valid runs")
	match := flag.String("only", "", "run only the cases whose name matches this regular expression")
	limit := flag.Duration("limit", 5*time.Minute, "stop a run still going after this long (0: never)")
	maxMB := flag.Int64("max-mb", 4096, "stop a run whose processes use more memory than this, in MB (0: never)")
	first := flag.Int("first", 1, "the first seed: -runs and -seeds count from it")
	flag.Parse()
	c := Campaign{Bin: *bin, Root: *root, Parallel: *parallel, Keep: *keep, Out: os.Stdout, Limit: *limit,
		MaxRSS: *maxMB << 20, First: *first}
	os.Exit(start(c, *runs, *seeds, *match))
}

// start runs the campaign: exit 0 when no run was invalid or without a verdict, 1 otherwise, 2 when
// interrupted, 254 on bad flags.
func start(c Campaign, runs, seeds int, match string) int {
	code, err := campaign(c, runs, seeds, match)
	if err != nil {
		fmt.Fprintln(os.Stderr, "falsealarms:", err)
	}
	return code
}

func campaign(c Campaign, runs, seeds int, match string) (int, error) {
	bin, root := c.Bin, c.Root
	if runs < 0 || seeds < 0 || c.Parallel < 1 || c.Limit < 0 || c.MaxRSS < 0 || c.First < 1 {
		return 254, fmt.Errorf("-runs, -seeds, -limit and -max-mb must be ≥ 0, -parallel and -first ≥ 1")
	}
	re, err := regexp.Compile(match)
	if err != nil {
		return 254, fmt.Errorf("-only: %v", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return 254, fmt.Errorf("no lockcheck binary: %v (make build)", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return 254, err
	}
	if root == "" {
		if root, err = os.MkdirTemp("", "falsealarms-"); err != nil {
			return 254, err
		}
	}
	var cases []Case
	n := 0
	for _, c := range Cases(runs, seeds) {
		if re.MatchString(c.Name) && c.Seeds > 0 {
			cases = append(cases, c)
			n += c.Seeds
		}
	}
	fmt.Printf("falsealarms: %d cases, %d runs, %d at a time, run directories under %s\n", len(cases), n, c.Parallel, root)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	c.Bin, c.Root = bin, root
	t := c.Run(ctx, cases)
	Report(os.Stdout, t, time.Since(began))
	switch {
	case ctx.Err() != nil:
		return 2, fmt.Errorf("interrupted after %d of %d runs", t.Runs, n)
	case t.Invalid > 0 || t.Errors > 0:
		return 1, nil
	}
	return 0, nil
}
