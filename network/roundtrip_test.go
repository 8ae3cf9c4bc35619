package network_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/lockcheck/lockcheck/network"
)

// BenchmarkLinkRoundTrip: 8 connections each sending 64 bytes through a healthy link to an echo server and
// reading them back, the shape of a lock client's commands. ns/op is per round trip.
func BenchmarkLinkRoundTrip(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	p := network.New()
	defer p.Close()
	l, err := p.Add("x", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	const conns = 8
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", l.Addr())
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			buf := make([]byte, 64)
			for i := c; i < b.N; i += conns {
				if _, err := conn.Write(buf); err != nil {
					b.Error(err)
					return
				}
				if _, err := io.ReadFull(conn, buf); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
