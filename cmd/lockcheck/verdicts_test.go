package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

// buildBinary builds lockcheck once per test binary, for the tests that need a real process (signals,
// crashes, pipes, resource limits); TestMain removes it.
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if bin := os.Getenv("LOCKCHECK_TEST_BINARY"); bin != "" { // built once by scripts/shards
			binPath = bin
			return
		}
		dir, err := os.MkdirTemp("", "lockcheck-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		bin := filepath.Join(dir, "lockcheck")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	binOnce         sync.Once
	binDir, binPath string
	binErr          error
)

// liveRun is a lockcheck run started as a process, with its stderr collected line by line.
type liveRun struct {
	cmd    *exec.Cmd
	root   string
	stderr chan string
	all    *bytes.Buffer
	done   chan error
}

func startRun(t *testing.T, bin string, args ...string) *liveRun {
	t.Helper()
	r := &liveRun{root: t.TempDir(), stderr: make(chan string, 1000), all: &bytes.Buffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(bin, append(append([]string{"run"}, args...), "--results", r.root)...)
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			r.all.WriteString(sc.Text() + "\n")
			select {
			case r.stderr <- sc.Text():
			default:
			}
		}
	}()
	go func() { <-lines; r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
		}
	})
	return r
}

// dir waits until the run records operations, and returns its directory.
func (r *liveRun) underWay(t *testing.T) string {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		dir, _ := filepath.EvalSymlinks(filepath.Join(r.root, "latest"))
		hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
		if strings.Count(string(hist), `"type":"ok"`) > 20 {
			return dir
		}
	}
	t.Fatal("the run never got under way")
	return ""
}

// wait returns the exit code, failing the test if the process does not end within d.
func (r *liveRun) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case err := <-r.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		t.Fatalf("lockcheck did not exit within %s; stderr:\n%s", d, r.all)
		return -1
	}
}

// waitLine waits for a stderr line containing s.
func (r *liveRun) waitLine(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-r.stderr:
			if strings.Contains(l, s) {
				return
			}
		case <-timeout:
			t.Fatalf("no stderr line with %q", s)
		}
	}
}

type fullResults struct {
	Valid       any      `json:"valid"`
	Interrupted bool     `json:"interrupted"`
	Notes       []string `json:"notes"`
}

func readJSON(t *testing.T, path string) fullResults {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r fullResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

func endRecord(t *testing.T, dir string) *history.Record {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return h.Ended
}

// Issue 9 item 1: a run stopped by a signal ends its history with an interrupted end record; a re-check says
// unknown (never valid), keeps the run's results.json, and a truncated copy without the end record is
// unknown too. Item 12: SIGHUP is such an interruption, not a death without a verdict.
func TestInterruptedRunNeverChecksValid(t *testing.T) {
	t.Parallel() // a child process signalled once: an interrupted run is unknown whenever it is stopped
	bin := buildBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			r := startRun(t, bin, "--time", "60s", "--seed", "4")
			dir := r.underWay(t)
			if err := r.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := r.wait(t, 30*time.Second); code != exitUnknown {
				t.Fatalf("run: exit %d, want %d; stderr:\n%s", code, exitUnknown, r.all)
			}
			end := endRecord(t, dir)
			name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}[sig]
			if end == nil || history.EndReason(end.F) != history.EndInterrupted || end.Detail != name {
				t.Fatalf("end record %+v, want interrupted by %s", end, name)
			}
			before, _ := os.ReadFile(filepath.Join(dir, "results.json"))
			if res := readJSON(t, filepath.Join(dir, "results.json")); !res.Interrupted || res.Valid != "unknown" {
				t.Fatalf("run results: %+v", res)
			}
			if code := execute(context.Background(), []string{"check", dir}); code != exitUnknown {
				t.Fatalf("check: exit %d, want %d", code, exitUnknown)
			}
			after, _ := os.ReadFile(filepath.Join(dir, "results.json"))
			if !bytes.Equal(before, after) {
				t.Fatal("check rewrote the run's results.json")
			}
			if res := readJSON(t, filepath.Join(dir, "history.check.json")); !res.Interrupted || res.Valid != "unknown" {
				t.Fatalf("check results: %+v", res)
			}

			// The same history cut short: no end record, and half a last line.
			hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
			lines := strings.SplitAfter(strings.TrimSuffix(string(hist), "\n"), "\n")
			lines = lines[:len(lines)-1] // the end record
			last := lines[len(lines)-1]
			cut := filepath.Join(t.TempDir(), "cut.jsonl")
			if err := os.WriteFile(cut, []byte(strings.Join(lines[:len(lines)-1], "")+last[:len(last)/2]), 0o644); err != nil {
				t.Fatal(err)
			}
			if code := execute(context.Background(), []string{"check", cut}); code != exitUnknown {
				t.Fatalf("check of the truncated history: exit %d, want %d", code, exitUnknown)
			}
			res := readJSON(t, strings.TrimSuffix(cut, ".jsonl")+".check.json")
			if res.Valid != "unknown" || !strings.Contains(strings.Join(res.Notes, "\n"), "no end record") {
				t.Fatalf("truncated check: %+v", res)
			}
		})
	}
}

// Issue 9 item 5: a crafted history cannot decide the verdict; it is refused with its line.
func TestCraftedHistoriesAreRefused(t *testing.T) {
	t.Parallel() // checks of crafted histories
	bin := buildBinary(t)
	meta := func(lock, family string) string {
		return fmt.Sprintf(`{"type":"meta","time":1,"data":{"lock":%q,"topology":"single","seed":1,"checks":{"family":%q}}}`, lock, family)
	}
	grants := func(lease string) string {
		return `{"type":"invoke","time":100,"id":1,"client":"c1","thread":1,"key":"lock-0","owner":"a:1","f":"acquire","args":{"lease_ms":` + lease + `}}
{"type":"ok","time":200,"id":1,"client":"c1","thread":1,"key":"lock-0","owner":"a:1","f":"acquire"}
{"type":"invoke","time":300,"id":2,"client":"c2","thread":1,"key":"lock-0","owner":"b:1","f":"acquire","args":{"lease_ms":` + lease + `}}
{"type":"ok","time":400,"id":2,"client":"c2","thread":1,"key":"lock-0","owner":"b:1","f":"acquire"}
{"type":"end","time":500,"f":"completed"}
`
	}
	check := func(t *testing.T, content string) (int, string) {
		path := filepath.Join(t.TempDir(), "history.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "check", path)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	// The control: the double grant with an ordinary lease is found.
	if code, out := check(t, meta("reentrant", "mutex")+"\n"+grants("30000")); code != exitInvalid {
		t.Fatalf("double grant: exit %d, want %d (%s)", code, exitInvalid, out)
	}
	// An endless file is not read into memory (issue 9 item 11): a device is refused before any read (issue
	// 29 item 6; an endless line in a regular file is refused at its bound, history's TestReadBoundsLineLength).
	var stderr bytes.Buffer
	zero := exec.Command(bin, "check", "/dev/zero")
	zero.Stderr = &stderr
	_ = zero.Run()
	if code := zero.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), "/dev/zero: not a regular file (a character device)") {
		t.Fatalf("check /dev/zero: exit %d, stderr %q", code, stderr.String())
	}
	for name, c := range map[string]struct{ content, want string }{
		"negative lease":    {meta("reentrant", "mutex") + "\n" + grants("-30000"), "history line 2: args.lease_ms -30000"},
		"overflowing lease": {meta("reentrant", "mutex") + "\n" + grants("10000000000000"), "history line 2: args.lease_ms"},
		"unknown lock":      {meta("nope", "mutex") + "\n" + grants("30000"), "history line 1: meta record"},
		"unknown family":    {meta("reentrant", "bogus") + "\n" + grants("30000"), "history line 1: meta record: family \"bogus\""},
		"another family":    {meta("reentrant", "semaphore") + "\n" + grants("30000"), "history line 1: meta record: family"},
		"second meta":       {meta("reentrant", "mutex") + "\n" + meta("semaphore", "semaphore") + "\n" + grants("30000"), "history line 2: a second meta record"},
		"garbage last line": {meta("reentrant", "mutex") + "\n" + grants("30000") + "\x00\x00garbage", "history line 7"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out := check(t, c.content)
			if code != exitUsage || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want %d and one line with %q", code, out, exitUsage, c.want)
			}
		})
	}
}

// Issue 9 item 14: check names its outputs after its input and refuses to replace a file lockcheck did
// not write.
func TestCheckDoesNotOverwriteForeignFiles(t *testing.T) {
	t.Parallel() // checks of crafted histories
	dir := t.TempDir()
	hist := `{"type":"meta","time":1,"data":{"lock":"reentrant","topology":"single","checks":{"family":"mutex"}}}
{"type":"cs","time":3,"client":"c1","thread":1,"key":"lock-0","owner":"a:1","enter":2,"exit":3}
{"type":"fault","time":4,"client":"nemesis","f":"heal","phase":"final"}
{"type":"end","time":5,"f":"completed"}
`
	path := filepath.Join(dir, "run7.jsonl")
	mine := filepath.Join(dir, "run7.check.json")
	for _, f := range [][2]string{{path, hist}, {filepath.Join(dir, "results.json"), "precious"}, {mine, "also precious"}} {
		if err := os.WriteFile(f[0], []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := execute(context.Background(), []string{"check", path}); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	for f, want := range map[string]string{"results.json": "precious", "run7.check.json": "also precious"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != want {
			t.Fatalf("%s was overwritten: %q", f, b)
		}
	}
	if err := os.Remove(mine); err != nil {
		t.Fatal(err)
	}
	for range 2 { // its own outputs it replaces
		if code := execute(context.Background(), []string{"check", path}); code != exitValid {
			t.Fatalf("exit %d, want %d", code, exitValid)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "results.json")); string(b) != "precious" {
		t.Fatal("results.json was overwritten")
	}
}

// Issue 9 item 6: a panic in any goroutine and a Go fatal error exit 255, not 2 (an unknown verdict).
func TestCrashExits255(t *testing.T) {
	t.Parallel() // child processes that crash at once
	bin := buildBinary(t)
	for _, how := range []string{"panic", "goroutine", "fatal"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(bin, "locks")
			cmd.Env = append(os.Environ(), crashTestEnv+"="+how)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != exitHarness || !strings.Contains(stderr.String(), "lockcheck: crashed") {
				t.Fatalf("exit %d, want %d; stderr tail: %q", code, exitHarness, tail(stderr.String()))
			}
		})
	}
	// Without a crash the child's exit code is passed on.
	if err := exec.Command(bin, "locks").Run(); err != nil {
		t.Fatalf("locks: %v", err)
	}
}

func tail(s string) string { return s[max(0, len(s)-300):] }

// Issue 9 item 12: with stdout and stderr into a pipe whose reader has gone (| head), the run is not killed
// by SIGPIPE at its next status line: it ends with its verdict and results.
func TestClosedPipeDoesNotKillTheRun(t *testing.T) {
	t.Parallel() // a fault-free valid run in a child process
	bin := buildBinary(t)
	root := t.TempDir()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--time", "7s", "--quiet", "1s", "--seed", "2", "--results", root)
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pw.Close()
	if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil { // head -1
		t.Fatal(err)
	}
	pr.Close()
	err = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() || cmd.ProcessState.ExitCode() != exitValid {
		t.Fatalf("run: %v (%v)", err, ws)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if res := readJSON(t, filepath.Join(dir, "results.json")); res.Valid != true {
		t.Fatalf("results: %+v", res)
	}
}

// Issue 9 item 12: SIGINT stops a check that is still under way (here: a history of 300 000 operations,
// seconds of reading and judging), without writing anything. The signal is sent once the check has the
// history open (an event, read from /proc); a FIFO served this before, and check now refuses one at once.
func TestSIGINTStopsACheck(t *testing.T) {
	// Sequential: SIGINT must stop a check within its bound.
	bin := buildBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	if _, err := histgen.WriteFile(path, histgen.Spec{Ops: 300_000, Keys: 50, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "check", path)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !waitOpened(cmd.Process.Pid, path, 20*time.Second) {
		t.Fatal("the check did not open its history within 20 s")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("SIGINT did not stop the check")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitUnknown || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "history.check.json")); !os.IsNotExist(err) {
		t.Fatalf("an interrupted check wrote results (%v)", err)
	}
}

// childrenOf lists pid's children: each thread of the supervisor lists its own (the run is forked from a
// locked thread).
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// waitOpened waits until a process of pid's (the supervisor or the run it forks) holds path open.
func waitOpened(pid int, path string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, p := range append([]int{pid}, childrenOf(pid)...) {
			fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p))
			for _, fd := range fds {
				if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p, fd.Name())); err == nil && l == path {
					return true
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// Issue 9 item 7: a second SIGINT while lockcheck tears down exits at once, non-zero, and the history still
// ends with a record that says so.
func TestSecondSIGINTExitsAtOnce(t *testing.T) {
	// Sequential: a second SIGINT must end the run within 5 s.
	bin := buildBinary(t)
	r := startRun(t, bin, "--time", "60s", "--nemesis", "partition", "--nemesis-interval", "1s", "--seed", "3")
	dir := r.underWay(t)
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r.waitLine(t, "SIGINT: stopping")
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 5*time.Second); code != exitHarness {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitHarness, r.all)
	}
	if !strings.Contains(r.all.String(), "exiting at once") {
		t.Fatalf("stderr:\n%s", r.all)
	}
	end := endRecord(t, dir)
	if end == nil || history.EndReason(end.F) != history.EndInterrupted || !strings.Contains(end.Detail, "then SIGINT") {
		t.Fatalf("end record %+v", end)
	}
}

// A TERM sent to every lockcheck process at once (pkill, a cgroup's stop) is one signal, not two: the run
// tears down and gives its verdict instead of exiting at once.
func TestSignalToEveryProcessCountsOnce(t *testing.T) {
	// Sequential: signals to every process at once must count once.
	bin := buildBinary(t)
	r := startRun(t, bin, "--time", "60s", "--seed", "8")
	dir := r.underWay(t)
	pids := append([]int{r.cmd.Process.Pid}, childrenOf(r.cmd.Process.Pid)...)
	if len(pids) < 2 {
		t.Fatalf("no child of the supervisor %d found", r.cmd.Process.Pid)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	if code := r.wait(t, 30*time.Second); code != exitUnknown {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUnknown, r.all)
	}
	if end := endRecord(t, dir); end == nil || end.Detail != "SIGTERM" {
		t.Fatalf("end record %+v", end)
	}
}

// The supervised child is not in the terminal's foreground process group: with stty tostop its writes to
// the terminal must not stop it.
func TestTerminalWithTostop(t *testing.T) {
	t.Parallel() // a child on a pseudo-terminal listing locks
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) for a pseudo-terminal")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", "stty tostop; "+bin+" locks", "/dev/null")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err != nil || !strings.Contains(string(out), "reentrant") {
		t.Fatalf("lockcheck locks on a tostop terminal: %v %v\n%s", ctx.Err(), err, out)
	}
}

// Job control reaches the child, which runs in a process group of its own: Ctrl-Z (TSTP) stops it with
// the supervisor and CONT resumes it.
func TestStopAndContinueReachTheChild(t *testing.T) {
	// Sequential: job control: the child stops and resumes within 10 s.
	bin := buildBinary(t)
	r := startRun(t, bin, "--time", "60s", "--seed", "9")
	r.underWay(t)
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", r.cmd.Process.Pid))
	child := ""
	for _, f := range tasks {
		if b, _ := os.ReadFile(f); len(strings.Fields(string(b))) > 0 {
			child = strings.Fields(string(b))[0]
		}
	}
	if child == "" {
		t.Fatal("no child of the supervisor")
	}
	state := func() string {
		b, _ := os.ReadFile("/proc/" + child + "/stat")
		_, after, _ := strings.Cut(string(b), ") ")
		return after[:1]
	}
	waitState := func(want func(string) bool, what string) {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if want(state()) {
				return
			}
		}
		t.Fatalf("the child never became %s (state %s)", what, state())
	}
	if err := r.cmd.Process.Signal(syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	waitState(func(s string) bool { return s == "T" }, "stopped")
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(func(s string) bool { return s != "T" }, "running")
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != exitUnknown {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUnknown, r.all)
	}
}
