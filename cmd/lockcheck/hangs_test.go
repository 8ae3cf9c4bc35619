package main

import (
	"bytes"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// buildBinary builds lockcheck into a temp dir, for tests that signal it or limit its resources.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

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
	bin := buildBinary(t)
	n := redistest.Start(t, node.PersistNone)
	args := func(api string) []string {
		return []string{"run", "--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
			"--external-toxiproxy", api, "--nemesis", "partition", "--time", "5s", "--results", t.TempDir()}
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
