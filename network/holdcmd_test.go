package network_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// A held command type: a PEXPIRE (plain, or a script whose first call is pexpire) waits at the proxy and
// applies only at the heal, with its reply; other commands, on other connections, pass meanwhile.
func TestHoldCommandDelaysOnlyThatCommand(t *testing.T) {
	ctx := context.Background()
	n, l, _ := proxied(t)
	conn := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: l.Addr(), Password: n.Password(), ReadTimeout: 20 * time.Second,
			PoolSize: 1, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
		t.Cleanup(func() { c.Close() })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	plain, script, other := conn(), conn(), conn()
	direct := redistest.Client(t, n.Addr(), n.Password())
	for _, k := range []string{"a", "b"} {
		if err := direct.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.HoldCommand("pexpire"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- plain.PExpire(ctx, "a", time.Hour).Err() }()
	go func() {
		done <- script.Eval(ctx, "return redis.call('pexpire', KEYS[1], ARGV[1])", []string{"b"}, 3600000).Err()
	}()
	// The other connection's commands, a script whose first call is not pexpire among them, pass at once.
	if err := other.Set(ctx, "c", "v", 0).Err(); err != nil {
		t.Fatalf("another command through the held link: %v", err)
	}
	if v, err := other.Eval(ctx, "redis.call('get', KEYS[1]); return redis.call('pexpire', KEYS[1], 5000)",
		[]string{"c"}).Int(); err != nil || v != 1 {
		t.Fatalf("a script whose first call is GET: %d, %v", v, err)
	}
	select {
	case err := <-done:
		t.Fatalf("a held PEXPIRE was answered during the fault (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	for _, k := range []string{"a", "b"} {
		if d, err := direct.PTTL(ctx, k).Result(); err != nil || d != -1 {
			t.Fatalf("%s: pttl %v, %v during the fault: the held PEXPIRE reached the node", k, d, err)
		}
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a held PEXPIRE after the heal: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the held PEXPIREs were not delivered at the heal")
		}
	}
	for _, k := range []string{"a", "b"} {
		if d, err := direct.PTTL(ctx, k).Result(); err != nil || d < 1000 {
			t.Fatalf("%s: pttl %v, %v after the heal, want the delivered PEXPIRE's hour", k, d, err)
		}
	}
	if err := plain.Set(ctx, "d", "v", 0).Err(); err != nil {
		t.Fatalf("after the heal the link carries on: %v", err)
	}
}

// A PEXPIRE split across writes is still told, and what its connection sends after it waits behind it, so
// the replies come in the order the commands were sent.
func TestHoldCommandSplitWritesKeepOrder(t *testing.T) {
	n, l, _ := proxied(t)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	send := func(s string) {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	line := func() string {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimSpace(s)
	}
	send(fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", len(n.Password()), n.Password()))
	if a, b := line(), line(); a != "+OK" || b != "+OK" {
		t.Fatalf("AUTH, SET: %q %q", a, b)
	}
	if err := l.HoldCommand("PEXPIRE"); err != nil {
		t.Fatal(err)
	}
	send("*3\r\n$7\r\nPEX")
	time.Sleep(50 * time.Millisecond) // two TCP segments, not a tuned wait: the toxic must join them either way
	send("PIRE\r\n$1\r\nk\r\n$7\r\n3600000\r\n*2\r\n$4\r\nPTTL\r\n$1\r\nk\r\n")
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, err := r.Peek(1); err == nil {
		t.Fatalf("a reply came during the hold: %q", b)
	}
	direct := redistest.Client(t, n.Addr(), n.Password())
	if d := direct.PTTL(context.Background(), "k").Val(); d != -1 {
		t.Fatalf("pttl %v during the hold", d)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if a := line(); a != ":1" {
		t.Fatalf("PEXPIRE after the heal: %q, want :1", a)
	}
	if b := line(); !strings.HasPrefix(b, ":") || b == ":-1" || b == ":-2" {
		t.Fatalf("PTTL after the held PEXPIRE: %q, want the hour", b)
	}
}
