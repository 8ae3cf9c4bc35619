package network

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// A link whose upstream cannot be reached closes its client at once: the client sees the end instead of a
// link that never answers.
func TestLinkClosesClientWhenUpstreamIsGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	px := New()
	t.Cleanup(px.Close)
	l, err := px.Add("c1->gone", gone)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	begin := time.Now()
	_, err = c.Read(make([]byte, 1))
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		t.Fatal("the client side stayed open with no upstream")
	}
	if err == nil {
		t.Fatal("read data from a link with no upstream")
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("the client side was closed after %v", took)
	}
}

// maxFD is the highest descriptor number the process has open.
func maxFD(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	top := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > top {
			top = n
		}
	}
	return top
}

// A link outlives an accept that failed for want of descriptors (EMFILE): once descriptors are free again
// it serves the connection that waited. toxiproxy's own accept loop returned on the first failure, and the
// kernel went on queueing connections on a listener nobody served, which under descriptor exhaustion left
// clients (and a pub/sub health check holding its connection's lock) waiting on a dead proxy.
func TestLinkOutlivesAcceptFailure(t *testing.T) {
	n := redistest.Start(t, node.PersistNone)
	px := New()
	t.Cleanup(px.Close)
	l, err := px.Add("c1->n1", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// Fill every hole below the highest open descriptor, so the next ones are numbered in order; then
	// allow one more, the client's socket: the link's accept has none left.
	var fillers []*os.File
	defer func() {
		for _, f := range fillers {
			f.Close()
		}
	}()
	top := maxFD(t)
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, f)
		if int(f.Fd()) >= top {
			top = int(f.Fd())
			break
		}
	}
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	limited := orig
	limited.Cur = uint64(top + 2)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limited); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
				t.Error(err)
			}
		}
	}
	defer restore()
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		restore()
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); l.acceptErrs.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			restore()
			t.Fatal("the link's accept never failed: the descriptor limit did not bite")
		}
	}
	restore()
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("the connection that waited through the failed accept was never served: %v", err)
	}
	if !strings.HasPrefix(reply, "-NOAUTH") && !strings.HasPrefix(reply, "+PONG") {
		t.Fatalf("reply %q is not Redis's", reply)
	}
}
