package node_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/redistest"
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
	n, err := node.Start(ctx, node.Config{Name: "n2", Dir: t.TempDir(), Password: other.Password(), Port: port})
	if err == nil {
		n.Stop()
		t.Fatalf("started on port %d, which another server answers", port)
	}
	if !node.PortTaken(err) || !strings.Contains(err.Error(), "n2") {
		t.Fatalf("error %q: want the port named as taken", err)
	}
}
