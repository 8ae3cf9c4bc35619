package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
	"golang.org/x/sys/unix"
)

// started is a lockcheck process with its stderr captured.
type started struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

func start(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	s := &started{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-s.done })
	return s
}

// exited waits up to d for the process to end and returns its exit code, or fails the test.
func (s *started) exited(t *testing.T, d time.Duration, what string) int {
	t.Helper()
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("%s: still running after %v; stderr:\n%s", what, d, s.stderr)
		return -1
	}
}

// silentListener accepts connections and never answers them; accepted closes at the first.
func silentListener(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 100)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			once.Do(func() { close(first) })
			held <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	return ln.Addr().String(), first
}

// An external toxiproxy API that accepts and never answers fails the attach within its timeout, with one
// line naming the server, and SIGINT ends the attach at once. Before, both hung for ever.
func TestExternalSilentToxiproxy(t *testing.T) {
	// Sequential: exits within 15 s and 3 s bounds.
	bin := buildBinary(t)
	n := redistest.Start(t, node.PersistNone)
	args := func(api string) []string {
		return []string{"run", "--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
			"--external-toxiproxy", api, "--nemesis", "partition", "--time", "13s", "--results", t.TempDir()}
	}
	addr, _ := silentListener(t)
	api := "http://" + addr
	p := start(t, exec.Command(bin, args(api)...))
	code := p.exited(t, 15*time.Second, "attach to a silent toxiproxy")
	if code == exitValid || code == exitInvalid || code == exitUnknown {
		t.Fatalf("exit %d: a verdict for a run that never attached", code)
	}
	if msg := p.stderr.String(); !strings.Contains(msg, "toxiproxy server at "+api) || !strings.Contains(msg, "no answer within") {
		t.Fatalf("stderr does not say the toxiproxy server did not answer:\n%s", msg)
	}

	addr, accepted := silentListener(t)
	p = start(t, exec.Command(bin, args("http://"+addr)...))
	select { // the attach is in flight: the signal must end it
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("lockcheck never called the toxiproxy server")
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exited(t, 3*time.Second, "SIGINT during the attach"); code == exitValid {
		t.Fatalf("exit %d after SIGINT", code)
	}
}

// A run that cannot have the descriptors it needs is refused before anything starts, with one line that
// names the need and the limit. Before, 200 clients under ulimit -n 1024 spun on failed dials and then
// hung in teardown.
func TestTooFewDescriptorsRefused(t *testing.T) {
	// Sequential: ulimit on a child; exit within 10 s.
	bin := buildBinary(t)
	root := t.TempDir()
	// sh's ulimit -n sets the soft and the hard limit: the run cannot raise it.
	p := start(t, exec.Command("sh", "-c", `ulimit -n 1024 && exec "$0" "$@"`, bin, "run", "--clients", "200",
		"--time", "10s", "--results", root))
	if code := p.exited(t, 10*time.Second, "a run short of descriptors"); code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, p.stderr)
	}
	msg := strings.TrimSpace(p.stderr.String())
	if strings.Count(msg, "\n") != 0 || !regexp.MustCompile(`needs up to \d+ file descriptors .*the limit is 1024`).MatchString(msg) {
		t.Fatalf("want one line naming the need and the limit, got:\n%s", msg)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("a refused run left %d entries in the results directory", len(entries))
	}
}

// exhaust starts a 100-client run and, once its topology is up, lowers its descriptor limit to what it
// has open, so every connection it makes from then on fails with EMFILE (as when a run outgrows
// ulimit -n). It returns the process and the results root.
func exhaust(t *testing.T, bin string, runFor string) (*started, string) {
	t.Helper()
	root := t.TempDir()
	p := start(t, exec.Command(bin, "run", "--clients", "100", "--time", runFor, "--quiet", "1s", "--check-timeout", "5s",
		"--seed", "1", "--results", root))
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(p.stderr.String(), "started in"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run never started; stderr:\n%s", p.stderr)
		}
	}
	pid := runningChild(t, p.cmd.Process.Pid)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: uint64(len(fds)), Max: uint64(len(fds))}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatal(err)
	}
	return p, root
}

// runningChild is the process that runs the test under lockcheck's supervisor (see supervise.go): the one
// whose limits matter.
func runningChild(t *testing.T, supervisor int) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", supervisor)) // each thread's own
	if err != nil {
		t.Fatal(err)
	}
	var f []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		f = append(f, strings.Fields(string(b))...)
	}
	if len(f) != 1 {
		t.Fatalf("supervisor %d has children %q, want one", supervisor, f)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// checkExhausted asserts what a run that ran out of descriptors must leave: exit 255 with a line saying
// so, results written with that note, and clients that backed off instead of spinning.
func checkExhausted(t *testing.T, p *started, root string, code int, took time.Duration) {
	t.Helper()
	if code != exitHarness || !strings.Contains(p.stderr.String(), "file descriptors ran out during the run") {
		t.Fatalf("exit %d, want %d with the reason; stderr:\n%s", code, exitHarness, p.stderr)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil || !strings.Contains(string(b), "file descriptors ran out") {
		t.Fatalf("results.json lacks the note (%v)", err)
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, o := range h.Ops {
		if o.Invoke.F == "tryLock" {
			calls++
		}
	}
	// Backing off, a failing client makes about one call a second; spinning, it made dozens.
	if limit := int(100 * 4 * took.Seconds()); calls > limit {
		t.Fatalf("%d tryLock calls in %v from 100 clients: they spun", calls, took)
	}
}

// A run whose descriptors run out mid-run ends by itself in bounded time, says so in one line, exits 255
// and writes its results.
func TestDescriptorExhaustionEnds(t *testing.T) {
	// Sequential: the limit is the descriptor count at one instant; a call rate per second.
	bin := buildBinary(t)
	begin := time.Now()
	p, root := exhaust(t, bin, "6s")
	code := p.exited(t, 60*time.Second, "a run out of descriptors")
	checkExhausted(t, p, root, code, time.Since(begin))
}

// SIGINT ends a run whose descriptors ran out promptly, with its results written. Before, teardown
// blocked closing pub/sub connections on proxies that had stopped accepting, and only SIGKILL ended it.
func TestDescriptorExhaustionObeysSIGINT(t *testing.T) {
	// Sequential: the limit is the descriptor count at one instant; a call rate per second.
	bin := buildBinary(t)
	begin := time.Now()
	p, root := exhaust(t, bin, "5m")
	// Wait until the exhaustion shows: a client's dial failed with EMFILE.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
		if b, _ := os.ReadFile(filepath.Join(dir, "history.jsonl")); bytes.Contains(b, []byte("too many open files")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no operation failed for want of descriptors")
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.exited(t, 45*time.Second, "SIGINT to a run out of descriptors")
	checkExhausted(t, p, root, code, time.Since(begin))
}

// kill -9 of lockcheck takes its workers with it, and everything they started: here each worker's child
// left its group and session (setsid) and ignores SIGTERM, as the nodes already died with it. Before, the
// workers' escaped children were left running under pid 1.
func TestKill9KillsWorkersAndTheirEscapedChildren(t *testing.T) {
	// Sequential: what lockcheck started must be gone within 10 s of kill -9.
	p, mark := startMarked(t, "escape.sh", "60s")
	// The run started, and both workers are up, each with its escaped child.
	var left []string
	for deadline := time.Now().Add(30 * time.Second); len(left) < 4 || !strings.Contains(p.stderr.String(), "started in"); time.Sleep(20 * time.Millisecond) {
		if left = taggedWith("MARK=" + mark); time.Now().After(deadline) {
			t.Fatalf("want the 2 workers and their 2 children, %d processes carry the mark: %v; stderr:\n%s", len(left), left, p.stderr)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.exited(t, 5*time.Second, "lockcheck after kill -9")
	for deadline := time.Now().Add(10 * time.Second); len(left) > 0; time.Sleep(20 * time.Millisecond) {
		if left = taggedWith("MARK=" + mark); len(left) > 0 && time.Now().After(deadline) {
			t.Fatalf("alive 10 s after kill -9 of lockcheck: %v", left)
		}
	}
}

// taggedWith lists the live processes (not zombies) whose environment holds kv.
func taggedWith(kv string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if slices.ContainsFunc(bytes.Split(env, []byte{0}), func(b []byte) bool { return string(b) == kv }) {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}
