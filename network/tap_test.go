package network

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTaggers(t *testing.T) {
	hs := "*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n18002\r\n"
	if tag, ok := ReplicaTag([]byte("*1\r\n$4\r\nPING\r\n" + hs)); !ok || tag != "18002" {
		t.Fatalf("replica tag %q %v", tag, ok)
	}
	if _, ok := ReplicaTag([]byte("*1\r\n$4\r\nPING\r\n")); ok {
		t.Fatal("a PING was tagged")
	}
	bus := append([]byte("RCmb\x00\x00\x08\x00\x00\x01"), 0x46, 0x52) // port 18002 big-endian
	if tag, ok := BusTag(bus); !ok || tag != "18002" {
		t.Fatalf("bus tag %q %v", tag, ok)
	}
}

// A stalled peer's replies are held, in order, and delivered when released; other connections flow.
func TestTapStallAndDrop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	tap, err := NewTap(ln.Addr().String(), func(b []byte) (string, bool) {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			return strings.TrimSpace(string(b[:i])), true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Close()
	dial := func(tag string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", tap.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(tag + "\n"))
		r := bufio.NewReader(c)
		if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != tag {
			t.Fatalf("echo %q %v", line, err)
		}
		return c, r
	}
	a, ra := dial("a")
	defer a.Close()
	b, rb := dial("b")
	defer b.Close()
	tap.Stall("a", true)
	_, _ = a.Write([]byte("held\n"))
	_, _ = b.Write([]byte("flows\n"))
	if line, _ := rb.ReadString('\n'); line != "flows\n" {
		t.Fatalf("b got %q", line)
	}
	_ = a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := ra.ReadString('\n'); err == nil {
		t.Fatal("a stalled reply arrived")
	}
	_ = a.SetReadDeadline(time.Time{})
	tap.Stall("a", false)
	if line, _ := ra.ReadString('\n'); line != "held\n" {
		t.Fatalf("after release a got %q", line)
	}
	tap.Drop("b", true)
	if _, err := rb.ReadString('\n'); err == nil {
		t.Fatal("a dropped peer's connection stayed open")
	}
}
