// Package network puts every client-to-node link behind an in-process toxiproxy proxy, so one link can be
// cut, slowed or made to lose replies without touching the others.
package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxies owns the proxies of one run. Only toxiproxy's Proxy and ToxicCollection are used: its HTTP API
// server exits the process on error and is kept out of the library.
type Proxies struct {
	srv   *toxiproxy.ApiServer
	mu    sync.Mutex
	links []*Link
}

// New returns an empty set of proxies.
func New() *Proxies {
	return &Proxies{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())}
}

// Link is one proxied connection path, e.g. client c3 to node n1.
type Link struct {
	Name  string
	proxy *toxiproxy.Proxy
	srv   *toxiproxy.ApiServer
	ln    net.Listener
	mu    sync.Mutex
	state string // "", "cut", "drop-replies", "latency"

	connMu sync.Mutex
	conns  map[*conn]bool // open connections, both sides, closed by Close
	closed bool
	direct map[net.Conn]bool // sources copied directly, not through toxiproxy's chain (fastpath.go)
	toxic  atomic.Bool       // the link has toxics: connections go through the chain
	// acceptErrs counts failed accepts (out of descriptors, say) that the link outlived.
	acceptErrs atomic.Int64
}

// Add starts a proxy on a free loopback port in front of upstream. The accept loop is lockcheck's own:
// toxiproxy's returns on the first failed accept (EMFILE when descriptors run out) and leaves its
// listener open, so the kernel goes on accepting connections that nobody serves.
func (p *Proxies) Add(name, upstream string) (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	l := &Link{Name: name, proxy: toxiproxy.NewProxy(p.srv, name, ln.Addr().String(), upstream), srv: p.srv, ln: ln,
		conns: map[*conn]bool{}, direct: map[net.Conn]bool{}}
	go l.serve()
	p.mu.Lock()
	p.links = append(p.links, l)
	p.mu.Unlock()
	return l, nil
}

// dialWait bounds the dial upstream: a loopback dial answers at once unless its listener is wedged.
const dialWait = 3 * time.Second

// serve accepts until the link closes. A failed accept is retried after a growing pause (5 ms to 1 s), as
// net/http's server does, so a link outlives a moment without descriptors.
func (l *Link) serve() {
	var pause time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.acceptErrs.Add(1)
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		go l.connect(c)
	}
}

// connect joins an accepted client to the upstream through the link's toxics. When the upstream cannot be
// reached the client is closed at once, so it sees a refusal rather than a link that never answers.
func (l *Link) connect(client net.Conn) {
	up, err := net.DialTimeout("tcp", l.proxy.Upstream, dialWait)
	if err != nil {
		client.Close()
		return
	}
	down, upc := &conn{Conn: client, l: l}, &conn{Conn: up, l: l}
	l.connMu.Lock()
	if l.closed {
		l.connMu.Unlock()
		client.Close()
		up.Close()
		return
	}
	l.conns[down], l.conns[upc] = true, true
	l.connMu.Unlock()
	name := client.RemoteAddr().String()
	// The toxics write into the wrapped connections, whose Close forgets them. (toxiproxy's reset_peer
	// toxic would want the bare *net.TCPConn; lockcheck never adds it.)
	l.pipe(name+"upstream", client, upc, stream.Upstream)
	l.pipe(name+"downstream", up, down, stream.Downstream)
}

// conn is one side of a proxied connection, forgotten by its link when closed.
type conn struct {
	net.Conn
	l *Link
}

func (c *conn) Close() error {
	c.l.connMu.Lock()
	delete(c.l.conns, c)
	c.l.connMu.Unlock()
	return c.Conn.Close()
}

// close stops accepting and closes every connection.
func (l *Link) close() {
	l.connMu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = map[*conn]bool{}
	l.connMu.Unlock()
	l.ln.Close()
	for c := range conns {
		c.Conn.Close()
	}
}

// Links lists every link.
func (p *Proxies) Links() []*Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Link(nil), p.links...)
}

// Close stops every proxy and closes its connections.
func (p *Proxies) Close() {
	for _, l := range p.Links() {
		l.close()
	}
}

// Addr is where clients connect to use this link.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Upstream is the address the link forwards to.
func (l *Link) Upstream() string { return l.proxy.Upstream }

// State says which fault the link is under ("" when healthy).
func (l *Link) State() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Cut black-holes the link in both directions: bytes are swallowed, connections stay open and nothing is
// reset, as when packets are dropped by a partition. New connections are accepted and black-holed too.
func (l *Link) Cut() error {
	return l.apply("cut", blackholeToxic("cut-up", "upstream"), blackholeToxic("cut-down", "downstream"))
}

// DropReplies lets commands reach the node but swallows every reply: each command applies and its caller
// never learns so.
func (l *Link) DropReplies() error {
	return l.apply("drop-replies", blackholeToxic("drop-down", "downstream"))
}

// Delay adds latency and jitter (milliseconds) to both directions.
func (l *Link) Delay(latencyMs, jitterMs int) error {
	tox := func(name, stream string) string {
		return fmt.Sprintf(`{"name":%q,"type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":%d}}`,
			name, stream, latencyMs, jitterMs)
	}
	return l.apply("latency", tox("lat-up", "upstream"), tox("lat-down", "downstream"))
}

func blackholeToxic(name, stream string) string {
	return fmt.Sprintf(`{"name":%q,"type":"blackhole","stream":%q}`, name, stream)
}

func (l *Link) apply(state string, toxics ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != "" {
		return fmt.Errorf("link %s is already under %s", l.Name, l.state)
	}
	l.setToxic(true)
	for _, t := range toxics {
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(t)); err != nil {
			l.proxy.Toxics.ResetToxics(context.Background())
			l.setToxic(false)
			return fmt.Errorf("link %s: %w", l.Name, err)
		}
	}
	l.state = state
	return nil
}

// Heal removes every toxic. Connections that were black-holed are closed by toxiproxy, so clients
// reconnect instead of reading the rest of a half-swallowed stream.
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proxy.Toxics.ResetToxics(context.Background())
	l.setToxic(false)
	l.state = ""
	return nil
}

// blackhole is the toxic behind Cut: it drops every byte, and when the sender closes its side it does not
// pass the close on either, as a partition drops FIN packets too (toxiproxy's own timeout toxic forwards
// it, which would tell a primary at once that its partitioned replicas left). On removal it closes the
// connection, so both ends learn of the partition when it heals, and reconnect.
type blackhole struct{}

func (*blackhole) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil { // the sender closed: hold that back until the partition heals
				<-stub.Interrupt
				return
			}
		}
	}
}

func (*blackhole) Cleanup(stub *toxics.ToxicStub) { stub.Close() }

func init() { toxics.Register("blackhole", new(blackhole)) }
