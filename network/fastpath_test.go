package network_test

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/network"
)

// A connection copied directly before a cut (the link had no toxics) is black-holed from the cut on and
// closed at the heal, as toxiproxy's chain does; a connection opened after the heal carries data again.
func TestCutMovesDirectConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	p := network.New()
	defer p.Close()
	l, err := p.Add("x", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	dial := func() (net.Conn, net.Conn) {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s := <-accepted
		t.Cleanup(func() { s.Close() })
		return c, s
	}
	expect := func(c net.Conn, want string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q, %v: want %q", buf, err, want)
		}
	}
	c, s := dial()
	if _, err := c.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	expect(s, "a")
	if _, err := s.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	expect(c, "b")
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("during the cut")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("during the cut")); err != nil {
		t.Fatal(err)
	}
	for _, end := range []net.Conn{s, c} {
		_ = end.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if n, err := end.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("through a cut an end read %d bytes, %v: want nothing", n, err)
		}
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	for _, end := range []net.Conn{s, c} {
		_ = end.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := end.Read(make([]byte, 64)); err == nil {
			t.Fatalf("after the heal an end read %d bytes: want the connection closed", n)
		}
	}
	c2, s2 := dial()
	if _, err := c2.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	expect(s2, "after")
}
