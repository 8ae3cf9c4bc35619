// Package topology brings up a set of Redis nodes and one proxied link from every client to every node,
// and tears them all down again.
package topology

import (
	"context"
	"errors"
	"fmt"

	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/bounded"
	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/topology/kind"
)

// Kinds of topology.
const (
	Single   = "single"   // one master
	Redlock  = "redlock"  // N independent masters
	Sentinel = "sentinel" // a primary, two replicas, three Sentinels
	Cluster  = "cluster"  // Redis Cluster: three masters, three replicas
)

// Kinds lists the topologies' names (kind.All).
var Kinds = func() []string {
	var out []string
	for _, k := range kind.All {
		out = append(out, k.Name)
	}
	return out
}()

// Kind is what a kind of topology is (topology/kind): ask it, never compare kind names outside this package.
type Kind = kind.Kind

// KindNamed is the kind called name (--topology, the meta record's topology); an unknown one is not Known.
func KindNamed(name string) Kind { return kind.Named(name) }

// Spec says what to start.
type Spec struct {
	Kind        string
	Nodes       int // masters for redlock; ignored for single
	Clients     []string
	Dir         string // node directories go under Dir/nodes
	Persistence string
	ClockLib    string       // clockshift library every node preloads ("" for none): needed by the clock fault
	Runtime     node.Runtime // how servers run: nil for processes, or containers (node/docker)
	Server      node.Server  // the server binary every node and Sentinel runs: the zero value is the host's
	// Front, when set, is put between each client's proxy and the node it reaches (the wire recorder): it
	// gets the node's address and returns the one the proxy should forward to instead.
	Front func(client, node, addr string) (string, error)
}

// Topology is a running deployment.
type Topology struct {
	Kind     string
	Password string
	Nodes    []*node.Node
	Startup  time.Duration

	Sentinels []*node.Node // sentinel topology only

	proxies *network.Proxies
	// links are (client, node); client "*" is the node's shared front proxy (the address it announces) and
	// "bus" its cluster-bus proxy.
	links   map[[2]string]network.Proxy
	nodeAt  map[string]string       // an address a node is known by -> its name
	taps    map[string]*network.Tap // behind each front: sentinel and cluster
	busTaps map[string]*network.Tap // behind each bus proxy: cluster
	shards  []shard                 // cluster only

	// An external deployment's (Attach): its Sentinels, their master name, and what to release at Stop.
	sentinelAddrs []string
	masterName    string
	closers       []func()

	// What faults changed and the final heal must undo (Restore).
	changedMu                    sync.Mutex
	stalled, cutOff, prioritized map[string]bool
}

// Validate checks a spec before anything starts.
func (s Spec) Validate() error {
	k := KindNamed(s.Kind)
	if !k.Known() {
		return fmt.Errorf("unknown topology %q (have: %s)", s.Kind, strings.Join(Kinds, ", "))
	}
	if k.Masters && s.Nodes < 1 {
		return fmt.Errorf("--nodes must be at least 1, got %d", s.Nodes)
	}
	if len(s.Clients) == 0 {
		return fmt.Errorf("a topology needs at least one client")
	}
	return nil
}

// starts holds the start of each kind that is more than independent nodes behind the client links
// (Sentinel, Cluster): a kind's file registers it in its init.
var starts = map[string]func(t *Topology, ctx context.Context, s Spec) error{}

func registerStart(k Kind, start func(t *Topology, ctx context.Context, s Spec) error) {
	starts[k.Name] = start
}

// Start brings the topology up. On error everything already started is stopped.
func Start(ctx context.Context, s Spec) (*Topology, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return startTry(ctx, s, 2)
}

// startTry is Start, trying again (up to retries more times) when a node's fixed port was taken.
func startTry(ctx context.Context, s Spec, retries int) (_ *Topology, err error) {
	begin := time.Now()
	t := &Topology{Kind: s.Kind, Password: node.NewPassword(), proxies: network.New(),
		links: map[[2]string]network.Proxy{}, nodeAt: map[string]string{}, taps: map[string]*network.Tap{},
		busTaps: map[string]*network.Tap{}}
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	if start := starts[s.Kind]; start != nil {
		if err := start(t, ctx, s); err != nil {
			if node.PortTaken(err) && retries > 0 { // another process bound a chosen port first: start afresh
				t.Stop()
				_ = os.RemoveAll(filepath.Join(s.Dir, "nodes")) // a half-formed cluster's nodes.conf must not be reused
				_ = os.RemoveAll(filepath.Join(s.Dir, "sentinels"))
				return startTry(ctx, s, retries-1)
			}
			return nil, err
		}
		t.Startup = time.Since(begin)
		return t, nil
	}
	// Independent nodes (single, redlock): as many as the kind has.
	n := KindNamed(s.Kind).NodeCount(s.Nodes)
	if err := t.startNodes(ctx, n, func(i int, name string) node.Config {
		return s.node(name, t.Password)
	}); err != nil {
		return nil, err
	}
	if err := t.clientLinks(s.Clients, s.Front); err != nil {
		return nil, err
	}
	t.Startup = time.Since(begin)
	return t, nil
}

// node is the configuration every data node of the spec shares, the one place its fields are passed down;
// callers add a port and config lines.
func (s Spec) node(name, password string) node.Config {
	return node.Config{Runtime: s.Runtime, Server: s.Server, Name: name, Dir: filepath.Join(s.Dir, "nodes", name),
		Password: password, Persistence: s.Persistence, ClockLib: s.ClockLib}
}

// startNodes starts n nodes (n1…) in parallel, since a start is mostly waiting for the server to answer;
// cfg gives node i's configuration. On error the nodes that started are kept in t.Nodes, for Stop.
func (t *Topology) startNodes(ctx context.Context, n int, cfg func(i int, name string) node.Config) error {
	t.Nodes = make([]*node.Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Nodes[i], errs[i] = node.Start(ctx, cfg(i, fmt.Sprintf("n%d", i+1)))
		}()
	}
	wg.Wait()
	t.Nodes = slices.DeleteFunc(t.Nodes, func(nd *node.Node) bool { return nd == nil })
	return errors.Join(errs...)
}

// addFront puts a tap (tagging connections with tagger) and a proxy called prefix->name in front of port;
// the node announces the proxy's address.
func (t *Topology) addFront(prefix, name string, port int, tagger network.Tagger) (network.Proxy, *network.Tap, error) {
	tap, err := network.NewTap(fmt.Sprintf("127.0.0.1:%d", port), tagger)
	if err != nil {
		return nil, nil, err
	}
	p, err := t.proxies.Add(prefix+"->"+name, tap.Addr())
	if err != nil {
		tap.Close()
		return nil, nil, err
	}
	t.links[[2]string{prefix, name}] = p
	return p, tap, nil
}

// clientLinks puts a proxy between every client and every node, behind it front's tap when set.
func (t *Topology) clientLinks(clients []string, front func(client, node, addr string) (string, error)) error {
	for _, nd := range t.Nodes {
		t.nodeAt[nd.Addr()] = nd.Name()
		for _, c := range clients {
			upstream := nd.Addr()
			if front != nil {
				var err error
				if upstream, err = front(c, nd.Name(), upstream); err != nil {
					return err
				}
			}
			l, err := t.proxies.Add(c+"->"+nd.Name(), upstream)
			if err != nil {
				return err
			}
			t.links[[2]string{c, nd.Name()}] = l
		}
	}
	return nil
}

// Addrs returns the addresses, one per node in order, through which client reaches the nodes (directly
// where an external deployment gave no toxiproxy).
func (t *Topology) Addrs(client string) []string {
	var out []string
	for _, nd := range t.Nodes {
		if l := t.links[[2]string{client, nd.Name()}]; l != nil {
			out = append(out, l.Addr())
		} else {
			out = append(out, nd.Addr())
		}
	}
	return out
}

// NodeNames lists the nodes.
func (t *Topology) NodeNames() []string {
	var out []string
	for _, nd := range t.Nodes {
		out = append(out, nd.Name())
	}
	return out
}

// ClientNames lists the clients that have links.
func (t *Topology) ClientNames() []string {
	seen := map[string]bool{}
	var out []string
	for k := range t.links {
		if k[0] != "*" && k[0] != "bus" && !seen[k[0]] {
			seen[k[0]] = true
			out = append(out, k[0])
		}
	}
	sort.Strings(out)
	return out
}

// Link returns the proxied link from client to node, or nil.
func (t *Topology) Link(client, nodeName string) network.Proxy {
	return t.links[[2]string{client, nodeName}]
}

// Faulty is what a fault does to a link.
type Faulty interface {
	Cut() error
	DropReplies() error
	Delay(latencyMs, jitterMs int) error
	Heal() error
}

// Fault returns what faults act on for (client, node): the proxied link, except that a cluster node's
// "bus" link covers both directions of its gossip (the peers' bus taps refuse what it sends them). Nil
// when there is no such link.
func (t *Topology) Fault(client, nodeName string) Faulty {
	l := t.links[[2]string{client, nodeName}]
	if l == nil {
		return nil
	}
	if client == "bus" {
		return busLink{t: t, node: nodeName, Proxy: l}
	}
	return l
}

// busLink is a cluster node's gossip, both ways.
type busLink struct {
	network.Proxy
	t    *Topology
	node string
}

func (b busLink) Cut() error {
	err := b.Proxy.Cut()
	b.peers(true)
	return err
}

func (b busLink) Heal() error {
	b.peers(false)
	return b.Proxy.Heal()
}

func (b busLink) peers(drop bool) {
	port := b.t.portOf("*", b.node)
	for name, tap := range b.t.busTaps {
		if name != b.node {
			tap.Drop(port, drop)
		}
	}
}

// Node returns the named node, or nil.
func (t *Topology) Node(name string) *node.Node {
	for _, nd := range t.Nodes {
		if nd.Name() == name {
			return nd
		}
	}
	return nil
}

// StopWait bounds each step of Stop: the proxies, the taps, the nodes (stopped together), each closer. A
// node's own stop escalates to SIGKILL after 3 s; a step still running after StopWait is left to finish by
// itself, so that teardown always ends (the nodes die with lockcheck anyway: Pdeathsig).
const StopWait = 10 * time.Second

// Stop tears everything down: proxies first, so clients see the end, then every node.
func (t *Topology) Stop() {
	if t.proxies != nil {
		bounded.Run(StopWait, t.proxies.Close)
	}
	var taps []func()
	for _, tap := range t.taps {
		taps = append(taps, tap.Close)
	}
	for _, tap := range t.busTaps {
		taps = append(taps, tap.Close)
	}
	bounded.All(StopWait, taps...)
	var nodes []func()
	for _, nd := range append(t.Sentinels, t.Nodes...) {
		nodes = append(nodes, nd.Stop)
	}
	bounded.All(StopWait, nodes...)
	for i := len(t.closers) - 1; i >= 0; i-- {
		bounded.Run(StopWait, t.closers[i])
	}
	t.closers = nil
}
