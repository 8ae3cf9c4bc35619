package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/internal/textfile"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/report"
)

// Config says how to run a suite.
type Config struct {
	Exe       string // the lockcheck binary that performs each run
	Dir       string // the suite's results directory
	Parallel  int
	Repeat    int  // rounds of the whole matrix; 0 with UntilFail: until one fails
	UntilFail bool // stop after the first case that misses its expectation
	KeepAll   bool // keep every run's directory, not only those that missed their expectation
	Progress  io.Writer
	// Each, when set, is told every outcome as it is recorded (one at a time), with its directory
	// (Dir, relative to the suite's) already decided: repro and bisect name each kept run's directory.
	Each func(Outcome)
}

// StoryPrefix starts the progress line under a run's that tells its story (the Action reads it).
const StoryPrefix = "story: "

// PrintOutcome writes o's progress line ("ok   ID VERDICT (want ...) 4.2s", FAIL when it missed its
// expectation) and, under it, its story: what a suite prints as each run ends and merge prints for each run
// it gathered, so that the Action reads both alike.
func PrintOutcome(w io.Writer, o Outcome) {
	mark := "ok  "
	if !o.Met {
		mark = "FAIL"
	}
	fmt.Fprintf(w, "%s %-50s %-8s (want %s) %5.1fs\n", mark, roundID(o), o.Verdict, o.Case.expectText(), o.Seconds)
	if o.Story != "" {
		fmt.Fprintf(w, "  %s%s\n", StoryPrefix, o.Story)
	}
	if o.Known != "" { // "known: `NAME`, ..." or "new: ...", as the run's results.json says it
		fmt.Fprintf(w, "  %s\n", o.Known)
	}
}

// Outcome is one case's run, as suite.json keeps it.
type Outcome struct {
	Case
	Round      int     `json:"round"`
	Exit       int     `json:"exit"`
	Verdict    string  `json:"verdict"` // valid, invalid, unknown, or error (no verdict: the run failed)
	Met        bool    `json:"met"`
	Violation  string  `json:"violation,omitempty"` // the first violation (the run's story), or the run's error line
	Story      string  `json:"story,omitempty"`     // the run's story (report.Story), whatever its verdict
	Known      string  `json:"known,omitempty"`     // an invalid run's known-or-new line (report.Known)
	KnownAs    string  `json:"known_as,omitempty"`  // the catalog entry it matched, if one did
	FirstNs    int64   `json:"first_violation_ns,omitempty"`
	Seconds    float64 `json:"seconds"`
	Dir        string  `json:"dir,omitempty"` // the run's directory, relative to the suite's; empty when not kept
	Lock       string  `json:"lock,omitempty"`
	Topology   string  `json:"topology,omitempty"`
	Nemesis    string  `json:"nemesis,omitempty"`
	ClientName string  `json:"client,omitempty"`
}

// Report is suite.json.
type Report struct {
	Name     string    `json:"name"`
	File     string    `json:"file,omitempty"`
	Shard    string    `json:"shard,omitempty"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Outcomes []Outcome `json:"outcomes"`
	Stopped  string    `json:"stopped,omitempty"` // why the suite stopped early (interrupted, until-fail)
	dir      string    // where it is written: the page's links are relative to it
}

// Failed counts the outcomes that missed their expectation.
func (r *Report) Failed() int {
	n := 0
	for _, o := range r.Outcomes {
		if !o.Met {
			n++
		}
	}
	return n
}

// Run performs the cases, Parallel at a time, and writes suite.json and index.html into cfg.Dir as it goes
// (so an interrupted suite keeps what it ran). The context's end stops the runs in flight (each gets one
// SIGINT and ends as its own Ctrl-C does) and starts no more.
func Run(ctx context.Context, s *Suite, shard string, cfg Config) (*Report, error) {
	if err := distinct(s.Cases); err != nil { // cases made in code (compare, repro) as well as parsed
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := RunsDir(cfg.Dir); err != nil {
		return nil, err
	}
	// Each case's directory is cleared and made through a root on the suite's directory: nothing a link
	// under it names outside it is removed or written.
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rep := &Report{Name: s.Name, File: s.Path, Shard: shard, Started: time.Now()}
	var mu sync.Mutex
	save := func() error {
		rep.Seconds = time.Since(rep.Started).Seconds()
		if err := rep.Write(cfg.Dir); err != nil {
			return err
		}
		return WritePage(cfg.Dir, rep)
	}
	if err := save(); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	par := max(cfg.Parallel, 1)
	rounds := max(cfg.Repeat, 1)
	if cfg.UntilFail && cfg.Repeat == 0 {
		rounds = int(^uint(0) >> 1)
	}
	jobs := make(chan Outcome)
	var wg sync.WaitGroup
	var saveErr error
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range jobs {
				o = runCase(ctx, cfg, root, o)
				if ctx.Err() != nil { // stopped by the suite's end (Ctrl-C, until-fail): not a result; its directory stays
					continue
				}
				mu.Lock()
				rep.Outcomes = append(rep.Outcomes, o)
				if err := save(); err != nil && saveErr == nil {
					saveErr = err
				}
				if cfg.Each != nil {
					cfg.Each(o)
				}
				if cfg.Progress != nil {
					PrintOutcome(cfg.Progress, o)
				}
				if !o.Met && cfg.UntilFail {
					rep.Stopped = "until-fail: " + roundID(o) + " missed its expectation"
					stop()
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for r := 1; r <= rounds; r++ {
		for _, c := range s.Cases {
			select {
			case <-ctx.Done():
				break feed
			case jobs <- Outcome{Case: c, Round: r}:
			}
		}
	}
	close(jobs)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() != nil && rep.Stopped == "" {
		rep.Stopped = "interrupted"
	}
	if err := save(); err != nil {
		return rep, err
	}
	return rep, saveErr
}

func (c Case) expectText() string { return strings.Join(c.Expect, " or ") }

func roundID(o Outcome) string {
	if o.Round > 1 {
		return fmt.Sprintf("%s#%d", o.ID, o.Round)
	}
	return o.ID
}

// runDirName is a case's directory under runs/: its id with the slashes made safe.
func runDirName(o Outcome) string {
	return strings.NewReplacer("/", "_", "#", "_r").Replace(roundID(o))
}

// runCase performs one run as a child lockcheck in its own process group, so a terminal's Ctrl-C reaches
// it only through the suite (once), and it dies (with its own teardown) when the suite dies.
func runCase(ctx context.Context, cfg Config, root *os.Root, o Outcome) Outcome {
	rel := filepath.Join("runs", runDirName(o))
	dir := filepath.Join(cfg.Dir, rel)
	_ = root.RemoveAll(rel) // a rerun into the same suite directory
	if err := root.Mkdir(rel, 0o755); err != nil {
		o.Verdict, o.Exit, o.Violation = "error", 255, err.Error()
		return o
	}
	out, err := root.Create(filepath.Join(rel, "output.txt"))
	if err != nil {
		o.Verdict, o.Exit, o.Violation = "error", 255, err.Error()
		return o
	}
	defer out.Close()
	child, env, red := o.child()
	args := append([]string{"run"}, child...)
	args = append(args, "--results", dir)
	cmd := exec.Command(cfg.Exe, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	node.DieWithParent(cmd, syscall.SIGTERM)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		o.Verdict, o.Exit, o.Violation = "error", 255, err.Error()
		return o
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGINT) // once: the run tears down and keeps its history
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	o.Seconds = time.Since(began).Seconds()
	o.Exit = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		o.Exit = ee.ExitCode()
		if o.Exit < 0 {
			o.Exit = 255
		}
	} else if err != nil {
		o.Exit = 255
	}
	o.Verdict = "error"
	if res, runDir := readRun(dir); res != nil {
		o.Verdict = res.Valid.String()
		o.Lock, o.Topology, o.Nemesis = res.Lock, res.Topology, strings.Join(res.Nemesis, ",")
		o.ClientName = res.Versions["client"]
		o.Violation, o.FirstNs = firstViolation(res)
		o.Story = res.StoryText()
		o.Known = res.KnownText()
		if res.Known != nil && res.Known.Entry != nil {
			o.KnownAs = res.Known.Entry.Name
		}
		o.Dir = filepath.Join(rel, runDir)
	}
	if o.Verdict == "error" || o.Exit > 2 {
		o.Verdict = "error"
		o.Violation = red.String(textfile.LastLine(filepath.Join(dir, "output.txt")))
	}
	o.Met = o.Verdict != "error" && o.Case.Met(verdicts[o.Verdict])
	if o.Met && !cfg.KeepAll {
		_ = root.RemoveAll(rel)
		o.Dir = ""
	} else if o.Dir == "" {
		o.Dir = rel
	}
	return o
}

// DirError is a directory in a suite's results that lockcheck removes and writes in but did not make: a
// link (a results directory from a checkout or a shared place may hold one) or not a directory. Bad input:
// nothing is removed or written through it.
type DirError struct{ msg string }

func (e DirError) Error() string { return e.msg }

// RunsDir makes dir/runs, or finds a real directory there (a DirError if not); Run calls it too.
func RunsDir(dir string) error { return Subdir(dir, "runs") }

// Subdir makes dir/name, where runs will be removed and written, or finds a real directory there: a link
// or anything else is a DirError.
func Subdir(dir, name string) error {
	p := filepath.Join(dir, name)
	err := os.Mkdir(p, 0o755)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(p)
	what := "not a directory"
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		what = "a symbolic link"
	}
	return DirError{p + ": " + what + ": lockcheck removes and writes runs only in a directory of its own; remove it"}
}

// readRun finds the run directory lockcheck made under dir and reads its results.json.
func readRun(dir string) (*report.Results, string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := safefile.Read(filepath.Join(dir, e.Name(), "results.json"), safefile.ResultsMax)
		if err != nil {
			continue
		}
		var r report.Results
		if json.Unmarshal(b, &r) == nil {
			return &r, e.Name()
		}
	}
	return nil, ""
}

func firstViolation(r *report.Results) (string, int64) {
	var msg string
	at := r.FirstViolation()
	for _, c := range r.Checkers {
		if c.Valid == checker.Invalid && c.Violation != "" && msg == "" {
			msg = c.Checker + ": " + c.Violation
		}
	}
	if t := r.StoryText(); at >= 0 && t != "" { // the run's story leads, in every line and message that quotes it
		msg = t
	}
	if at < 0 {
		for _, c := range r.Checkers {
			if c.Valid == checker.Unknown {
				return c.Checker + ": " + c.Summary, 0
			}
		}
		return "", 0
	}
	return msg, at
}

// Write writes suite.json into dir, atomically.
func (r *Report) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteAtomic(filepath.Join(dir, "suite.json"), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// ReadReport reads a suite.json: a regular file of at most safefile.ResultsMax.
func ReadReport(path string) (*Report, error) {
	b, err := safefile.Read(path, safefile.ResultsMax)
	if err != nil {
		return nil, err
	}
	r, err := decodeReport(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func decodeReport(b []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a suite.json: %v", err)
	}
	return &r, nil
}
