package network

import (
	"errors"
	"net"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Tap is a plain TCP forwarder in front of one Redis node that tells its peers' connections apart: a
// replica announces itself with "REPLCONF listening-port <port>" (ReplicaTag), a cluster node stamps its
// announced port on every bus message (BusTag), and the tap tags the connection with that port. It can
// then hold what the node sends to one peer (Stall: a lagging replication stream) or refuse one peer
// (Drop), which no toxiproxy toxic can do since a toxic applies to every connection of a proxy. The tap
// sits behind the node's proxy, so that proxy's toxics still apply to everything.
type Tap struct {
	ln     net.Listener
	target string
	tagger Tagger

	mu      sync.Mutex
	cond    *sync.Cond
	stalled map[string]bool // tag -> replies held
	dropped map[string]bool // tag -> connections closed and refused
	conns   map[net.Conn]string
	closed  bool
}

// Tagger finds a connection's tag in the first bytes it sent; ok is false until it has seen enough.
type Tagger func(start []byte) (tag string, ok bool)

// NewTap listens on a free loopback port and forwards to target, tagging connections with tagger.
func NewTap(target string, tagger Tagger) (*Tap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &Tap{ln: ln, target: target, tagger: tagger, stalled: map[string]bool{}, dropped: map[string]bool{},
		conns: map[net.Conn]string{}}
	t.cond = sync.NewCond(&t.mu)
	go t.serve()
	return t, nil
}

// Addr is where the tap listens.
func (t *Tap) Addr() string { return t.ln.Addr().String() }

// Stall holds (on) or releases (off) everything the node sends to the replica that announced port. Held
// bytes are delivered in order on release: a lagging link, not a lossy one.
func (t *Tap) Stall(port string, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if on {
		t.stalled[port] = true
	} else {
		delete(t.stalled, port)
	}
	t.cond.Broadcast()
}

// Drop closes every connection tagged tag and every new one as soon as it is tagged (on), or lets them be
// again (off): the peer can no longer reach the node.
func (t *Tap) Drop(tag string, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !on {
		delete(t.dropped, tag)
		return
	}
	t.dropped[tag] = true
	for c, tg := range t.conns {
		if tg == tag {
			c.Close()
		}
	}
}

// setTag records c's tag; false if that peer is dropped (c is then closed).
func (t *Tap) setTag(c net.Conn, tag string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conns[c] = tag
	if t.dropped[tag] {
		c.Close()
		return false
	}
	return true
}

// Close stops listening and closes every forwarded connection.
func (t *Tap) Close() {
	t.mu.Lock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
	t.stalled, t.dropped = map[string]bool{}, map[string]bool{}
	t.cond.Broadcast()
	t.mu.Unlock()
	t.ln.Close()
}

func (t *Tap) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return false
	}
	t.conns[c] = ""
	return true
}

func (t *Tap) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

// serve accepts until the tap closes; a failed accept (out of descriptors, say) is retried after a
// growing pause, as the links' is, rather than leaving a listener nobody serves.
func (t *Tap) serve() {
	var pause time.Duration
	for {
		in, err := t.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		go t.forward(in)
	}
}

var listeningPort = regexp.MustCompile(`(?i)listening-port\r\n\$\d+\r\n(\d+)\r\n`)

// sniffLimit bounds how much of a connection's start is searched for its tag: a replica's handshake is its
// first few commands, a bus message's header its first bytes.
const sniffLimit = 1024

// ReplicaTag tags a replica's connection with the port it announces in REPLCONF listening-port.
func ReplicaTag(start []byte) (string, bool) {
	if m := listeningPort.FindSubmatch(start); m != nil {
		return string(m[1]), true
	}
	return "", false
}

// BusTag tags a cluster bus connection with the sender's announced port: a bus message starts with
// "RCmb", its total length (4 bytes), version (2) and the sender's port (2, big-endian).
func BusTag(start []byte) (string, bool) {
	if len(start) < 12 {
		return "", false
	}
	if string(start[:4]) != "RCmb" {
		return "?", true
	}
	return strconv.Itoa(int(start[10])<<8 | int(start[11])), true
}

func (t *Tap) forward(in net.Conn) {
	out, err := net.DialTimeout("tcp", t.target, dialWait)
	if err != nil {
		in.Close()
		return
	}
	if !t.track(in) || !t.track(out) {
		in.Close()
		out.Close()
		return
	}
	defer t.untrack(in)
	defer t.untrack(out)
	var tagMu sync.Mutex
	tag := ""
	done := make(chan struct{}, 2)
	go func() { // upstream: copy, and look for the replica's announcement
		defer func() { done <- struct{}{} }()
		var seen []byte
		found := false
		buf := make([]byte, 32<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if !found && len(seen) < sniffLimit {
					seen = append(seen, buf[:n]...)
					if tg, ok := t.tagger(seen); ok {
						tagMu.Lock()
						tag = tg
						tagMu.Unlock()
						found = true
						if !t.setTag(in, tg) {
							return
						}
					}
				}
				if _, werr := out.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // downstream: copy, held while this connection's replica is stalled
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := out.Read(buf)
			if n > 0 {
				tagMu.Lock()
				tg := tag
				tagMu.Unlock()
				if !t.wait(tg) {
					return
				}
				if _, werr := in.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	<-done
}

// wait blocks while tag is stalled; false when the tap closed.
func (t *Tap) wait(tag string) bool {
	if tag == "" {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.stalled[tag] && !t.closed {
		t.cond.Wait()
	}
	return !t.closed
}
