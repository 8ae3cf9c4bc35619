package wire

import (
	"fmt"
	"net"
	"sync"
)

// Tap is a TCP forwarder between a client's proxy and one node that records the lock commands passing
// through. It sits behind the proxy, nearest the node, so the toxics act before it: a command a cut
// swallows never shows (it never ran), a reply drop-replies swallows still does (the command ran), and the
// times it records, taken before a command is passed on and after its reply came back, bound when the
// server ran it.
type Tap struct {
	s            *Session
	ln           net.Listener
	upstream     string
	client, node string

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// Front starts a tap in front of upstream for client's link to a node and returns the address to put the
// link's proxy in front of instead of upstream. This is the one seam a runner needs: where it does
// proxies.Add(c+"->"+n, nodeAddr) it does proxies.Add(c+"->"+n, session.Front(nodeAddr, c, label)).
// label is the records' Node, which the models partition by: the node's name where every node is its own
// lock service (redlock), "n1" on single, sentinel and cluster, as the emulation records (a lock that moves
// to another node in a failover is still one lock).
func (s *Session) Front(upstream, client, node string) (string, error) {
	t, err := s.Listen(upstream, client, node)
	if err != nil {
		return "", err
	}
	return t.Addr(), nil
}

// Listen is Front returning the tap itself.
func (s *Session) Listen(upstream, client, node string) (*Tap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("wire tap %s->%s: %w", client, node, err)
	}
	t := &Tap{s: s, ln: ln, upstream: upstream, client: client, node: node, conns: map[net.Conn]bool{}}
	s.mu.Lock()
	s.taps = append(s.taps, t)
	s.mu.Unlock()
	t.wg.Add(1)
	go t.serve()
	return t, nil
}

// Close stops every tap of the session; the commands in flight end unknown.
func (s *Session) Close() {
	s.mu.Lock()
	taps := s.taps
	s.taps = nil
	s.mu.Unlock()
	for _, t := range taps {
		t.Close()
	}
}

// Addr is where the tap listens.
func (t *Tap) Addr() string { return t.ln.Addr().String() }

// Close stops listening, closes every forwarded connection and waits for them to be recorded as closed.
func (t *Tap) Close() {
	t.mu.Lock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.ln.Close()
	t.wg.Wait()
}

func (t *Tap) track(cs ...net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		t.conns[c] = true
	}
	return true
}

func (t *Tap) untrack(cs ...net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range cs {
		delete(t.conns, c)
		c.Close()
	}
}

func (t *Tap) serve() {
	defer t.wg.Done()
	for {
		in, err := t.ln.Accept()
		if err != nil {
			return
		}
		t.wg.Add(1)
		go t.forward(in)
	}
}

// bufSize is each direction's read buffer; a chunk is decoded before it is passed on.
const bufSize = 32 << 10

func (t *Tap) forward(in net.Conn) {
	defer t.wg.Done()
	out, err := net.Dial("tcp", t.upstream)
	if err != nil {
		in.Close() // the client sees the node refuse, as without the tap
		return
	}
	if !t.track(in, out) {
		return
	}
	t.s.mu.Lock()
	t.s.conns++
	name := connName(t.client, t.node, t.s.conns)
	t.s.mu.Unlock()
	m := NewConn(&connRecorder{s: t.s, client: t.client, node: t.node}, t.s.now)
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(from, to net.Conn, feed func([]byte)) {
		defer wg.Done()
		defer t.untrack(in, out) // one side ending ends the connection, as a proxy does
		buf := make([]byte, bufSize)
		for {
			n, err := from.Read(buf)
			if n > 0 {
				feed(buf[:n])
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(in, out, m.FromClient)
	go pipe(out, in, m.FromServer)
	wg.Wait()
	if err := m.Err(); err != nil {
		t.s.noteGaveUp(name, err)
	}
	m.Close()
}
