package node_test

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// A node whose port another server took (here a forwarder to another node with the same password, as a
// run's own proxy can take a port between FreePort and redis-server's bind) must not start as if it were
// that server: a fault-free redlock run once judged "invalid" on a member that was really another member.
func TestStartRefusesAPortAnsweredByAnotherServer(t *testing.T) {
	other := redistest.Start(t, node.PersistNone)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", other.Addr())
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	refusesPort(t, ctx, node.Config{Name: "n2", Dir: t.TempDir(), Password: other.Password(), Port: port})
}

// refusesPort asserts that a node configured on a port another server answers does not start, and that
// its error names the node and the port as taken.
func refusesPort(t *testing.T, ctx context.Context, cfg node.Config) {
	t.Helper()
	n, err := node.Start(ctx, cfg)
	if err == nil {
		n.Stop()
		t.Fatalf("started on port %d, which another server answers", cfg.Port)
	}
	if !node.PortTaken(err) || !strings.Contains(err.Error(), cfg.Name) {
		t.Fatalf("error %q: want the port named as taken", err)
	}
}

// Another program's Redis with no password on the port (it accepts go-redis's AUTH with a user name) must
// not pass for the node either: a repro run once sent a member's traffic to such a server after a restart
// and judged the lock invalid.
func TestStartRefusesAPortAnsweredByAPasswordlessServer(t *testing.T) {
	port, err := node.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for { // until it answers: it must hold the port before the node tries to bind it
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the passwordless server did not start")
		case <-time.After(20 * time.Millisecond):
		}
	}
	refusesPort(t, ctx, node.Config{Name: "n4", Dir: t.TempDir(), Password: node.NewPassword(), Port: port})
}
