package network

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
)

// pipe forwards one direction of a proxied connection. While its link has no toxics it copies directly:
// toxiproxy's chain costs three goroutines and two channel hops per chunk even with no toxic in it, which
// halved lock throughput through the proxy. When a fault begins, every direct pipe is woken (a read
// deadline in the past) and hands the rest of its stream, from the chunk it read then, to toxiproxy's
// chain, so the toxics see every connection of the link as they would have (an idle one is black-holed
// and closed at heal too). A connection stays on the chain once there; new ones after the heal copy
// directly again.
func (l *Link) pipe(name string, src net.Conn, dst io.WriteCloser, dir stream.Direction) {
	if !l.watch(src) {
		l.proxy.Toxics.StartLink(l.srv, name, src, dst, dir)
		return
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			wake := errors.Is(err, os.ErrDeadlineExceeded)
			if wake {
				err = nil
			}
			// The end of the stream moves too: a cut holds a close back like any other packet.
			if (wake || l.toxic.Load()) && l.toxified(src, wake) {
				var in io.Reader = src
				if n > 0 {
					in = io.MultiReader(bytes.NewReader(bytes.Clone(buf[:n])), src)
				}
				l.proxy.Toxics.StartLink(l.srv, name, in, dst, dir)
				return
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// As toxiproxy's link does: the end of one direction closes the other side, which ends the other.
		l.unwatch(src)
		dst.Close()
	}()
}

// watch registers src as copied directly; false when the link has toxics (the chain takes it).
func (l *Link) watch(src net.Conn) bool {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	if l.toxic.Load() {
		return false
	}
	l.direct[src] = true
	return true
}

func (l *Link) unwatch(src net.Conn) {
	l.connMu.Lock()
	delete(l.direct, src)
	l.connMu.Unlock()
}

// toxified reports whether src must move to the toxic chain (and takes it off the direct ones); a wake
// that came when the fault was already healed only clears the deadline.
func (l *Link) toxified(src net.Conn, wake bool) bool {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	if wake || l.toxic.Load() {
		_ = src.SetReadDeadline(time.Time{})
	}
	if !l.toxic.Load() {
		return false
	}
	delete(l.direct, src)
	return true
}

// setToxic marks the link as having toxics (or none) and, when it has, wakes every direct pipe to move.
// Called before the toxics are added, so that no chunk read afterwards bypasses them.
func (l *Link) setToxic(on bool) {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	l.toxic.Store(on)
	if on {
		past := time.Unix(1, 0)
		for c := range l.direct {
			_ = c.SetReadDeadline(past)
		}
	}
}
