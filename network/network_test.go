package network_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/node"
	"github.com/redis/go-redis/v9"
)

// A cut link black-holes its client (it times out) while a client on another link carries on; healing
// restores the cut client.
func TestCutTimesOutOneClientOnly(t *testing.T) {
	ctx := context.Background()
	n := redistest.Start(t, node.PersistNone)
	px := network.New()
	t.Cleanup(px.Close)
	cut, err := px.Add("c1->n1", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ok, err := px.Add("c2->n1", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c1 := redistest.Client(t, cut.Addr(), n.Password())
	c2 := redistest.Client(t, ok.Addr(), n.Password())
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cut.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := cut.Cut(); err == nil {
		t.Fatal("a second fault on a cut link was accepted")
	}
	start := time.Now()
	err = c1.Set(ctx, "k", "from-c1", 0).Err()
	if err == nil {
		t.Fatal("SET through a cut link succeeded")
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Fatalf("a black-holed command failed fast (%v, %v): the link was reset, not cut", time.Since(start), err)
	}
	if err := c2.Set(ctx, "k", "from-c2", 0).Err(); err != nil {
		t.Fatalf("the other client was hit too: %v", err)
	}
	if err := cut.Heal(); err != nil {
		t.Fatal(err)
	}
	if cut.State() != "" {
		t.Fatalf("state %q after heal", cut.State())
	}
	if v, err := c1.Get(ctx, "k").Result(); err != nil || v != "from-c2" {
		t.Fatalf("after heal: %q, %v (the cut SET must not have arrived)", v, err)
	}
}

// With replies dropped, a command reaches Redis and applies, and its caller never hears back.
func TestDropRepliesAppliesCommand(t *testing.T) {
	ctx := context.Background()
	n, l, c := proxied(t)
	if err := l.DropReplies(); err != nil {
		t.Fatal(err)
	}
	if err := c.Incr(ctx, "counter").Err(); err == nil {
		t.Fatal("a reply came back through a link that drops replies")
	}
	direct := redistest.Client(t, n.Addr(), n.Password())
	if v, err := direct.Get(ctx, "counter").Int(); err != nil || v != 1 {
		t.Fatalf("counter = %d, %v: the command should have applied", v, err)
	}
	_ = l.Heal()
}

func TestDelayAddsLatency(t *testing.T) {
	ctx := context.Background()
	_, l, c := proxied(t)
	if err := l.Delay(100, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("PING took %v through 100ms each way", d)
	}
	_ = l.Heal()
}

// proxied starts a node and one link to it, and returns a client that has already talked through it.
func proxied(t *testing.T) (*node.Node, *network.Link, *redis.Client) {
	n := redistest.Start(t, node.PersistNone)
	px := network.New()
	t.Cleanup(px.Close)
	l, err := px.Add("c1->n1", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c := redistest.Client(t, l.Addr(), n.Password())
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return n, l, c
}

// A cut drops a closing side's FIN like any other packet: the far end learns nothing until the heal, which
// then closes the connection.
func TestCutHoldsClosesUntilHeal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p := network.New()
	defer p.Close()
	l, err := p.Add("x", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	defer server.Close()
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	_ = server.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 8)
	if _, err := server.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("through a cut the server saw %v, want nothing", err)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := server.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the heal the server saw %v, want EOF", err)
	}
}
