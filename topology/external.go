package topology

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/docker"
	"gopkg.in/yaml.v3"
)

// External describes a deployment lockcheck did not start (--backend external), as a YAML file.
type External struct {
	Topology string `yaml:"topology"` // single, redlock or sentinel
	Password string `yaml:"password"`
	// PasswordEnv names an environment variable holding the password instead.
	PasswordEnv string `yaml:"password_env"`
	// Toxiproxy is a running toxiproxy server's API (http://127.0.0.1:8474): lockcheck creates one proxy
	// per client and node there for the link faults, and deletes them at the end. Without it clients
	// connect directly and link faults are refused.
	Toxiproxy  string         `yaml:"toxiproxy"`
	MasterName string         `yaml:"master_name"`
	Sentinels  []string       `yaml:"sentinels"`
	Nodes      []ExternalNode `yaml:"nodes"`
}

// ExternalNode is one data node of an external deployment.
type ExternalNode struct {
	Name string `yaml:"name"`
	Addr string `yaml:"addr"` // where it listens; lockcheck's per-client proxies forward here
	// Announced is the address it is known by to Sentinel and its peers, if not Addr (its front proxy).
	Announced string `yaml:"announced"`
	// Front names the toxiproxy proxy its peers and the Sentinels reach it through: the failover fault
	// cuts it.
	Front string `yaml:"front"`
	// Container names its Docker container: kill, pause and restart then act on it.
	Container string `yaml:"container"`
}

// LoadExternal reads and checks a deployment file.
func LoadExternal(path string) (External, error) {
	var e External
	b, err := safefile.Read(path, safefile.SpecMax) // a regular file only: a FIFO or /dev/zero is refused at once
	if err != nil {
		return e, fmt.Errorf("--external: %w", err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("%s: %v", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return e.check("--external " + path)
}

// ExternalFlags are the flag form of a deployment: comma-separated addresses (and, in the same order,
// containers), the rest as in the file.
type ExternalFlags struct {
	Topology, Addrs, Containers, Password, Toxiproxy, Sentinels, MasterName string
}

// ExternalFromFlags builds and checks a deployment from flags.
func ExternalFromFlags(f ExternalFlags) (External, error) {
	e := External{Topology: f.Topology, Password: f.Password, Toxiproxy: f.Toxiproxy, MasterName: f.MasterName}
	if e.Topology == "" {
		e.Topology = Single
	}
	split := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	e.Sentinels = split(f.Sentinels)
	containers := split(f.Containers)
	addrs := split(f.Addrs)
	if len(containers) > 0 && len(containers) != len(addrs) {
		return e, fmt.Errorf("--external-containers: %d containers for %d addresses", len(containers), len(addrs))
	}
	for i, a := range addrs {
		n := ExternalNode{Name: fmt.Sprintf("n%d", i+1), Addr: a}
		if len(containers) > 0 {
			n.Container = containers[i]
		}
		e.Nodes = append(e.Nodes, n)
	}
	return e.check("--external-addrs")
}

// check validates a deployment; what names where it came from.
func (e External) check(what string) (External, error) {
	path := what
	if e.PasswordEnv != "" {
		e.Password = os.Getenv(e.PasswordEnv)
		if e.Password == "" {
			return e, fmt.Errorf("%s: password_env %s is not set", path, e.PasswordEnv)
		}
	}
	switch e.Topology {
	case Single, Redlock:
	case Sentinel:
		if len(e.Sentinels) == 0 || e.MasterName == "" {
			return e, fmt.Errorf("%s: a sentinel deployment needs sentinels and master_name", path)
		}
	case Cluster:
		return e, fmt.Errorf("%s: cluster deployments are not supported yet (single, redlock, sentinel)", path)
	default:
		return e, fmt.Errorf("%s: topology %q: want single, redlock or sentinel", path, e.Topology)
	}
	if len(e.Nodes) == 0 || e.Topology == Single && len(e.Nodes) != 1 {
		return e, fmt.Errorf("%s: %s needs nodes (one for single)", path, e.Topology)
	}
	if err := checkAddrs(e.Sentinels...); err != nil {
		return e, fmt.Errorf("%s: sentinels: %v", path, err)
	}
	if err := checkToxiproxy(e.Toxiproxy); err != nil {
		return e, fmt.Errorf("%s: %v", path, err)
	}
	seen := map[string]bool{}
	for i, n := range e.Nodes {
		if n.Addr == "" {
			return e, fmt.Errorf("%s: node %d has no addr", path, i+1)
		}
		if err := checkAddrs(n.Addr, n.Announced); err != nil {
			return e, fmt.Errorf("%s: node %d: %v", path, i+1, err)
		}
		if n.Name == "" {
			e.Nodes[i].Name = fmt.Sprintf("n%d", i+1)
		}
		if seen[e.Nodes[i].Name] {
			return e, fmt.Errorf("%s: two nodes called %s", path, e.Nodes[i].Name)
		}
		seen[e.Nodes[i].Name] = true
	}
	return e, nil
}

// Refusal says why a fault cannot run against the deployment, or "": it asks what the fault declares it
// needs (nemesis.Fault.Needs), so a new fault needs no line here.
func (e External) Refusal(fault string) string {
	return e.refuses(nemesis.NeedsOf(fault))
}

// refuses says why a deployment cannot meet needs, or "".
func (e External) refuses(needs nemesis.Needs) string {
	containers := !slices.ContainsFunc(e.Nodes, func(n ExternalNode) bool { return n.Container == "" })
	fronts := !slices.ContainsFunc(e.Nodes, func(n ExternalNode) bool { return n.Front == "" })
	switch {
	case needs&nemesis.NeedsProcess != 0 && !containers:
		return "it needs process control: give every node's container in the deployment file"
	case needs&nemesis.NeedsClockLib != 0:
		return "a node's clock can only be moved on nodes lockcheck starts (the clockshift library is preloaded at start)"
	case needs&nemesis.NeedsHeldReplies != 0:
		return "replies are held by a toxic of lockcheck's own proxies, which a toxiproxy server does not have"
	case needs&nemesis.NeedsPeerTaps != 0:
		return "it needs lockcheck's taps between the nodes, which only its own topologies have"
	case needs&nemesis.NeedsFronts != 0 && (e.Toxiproxy == "" || !fronts):
		return "it cuts the primary's front: give toxiproxy and every node's front proxy in the deployment file"
	case needs&nemesis.NeedsLinks != 0 && e.Toxiproxy == "":
		return "link faults go through toxiproxy: give its API address (toxiproxy:) in the deployment file"
	}
	return ""
}

// Attach stands a Topology over an external deployment: its nodes as found (and their containers where
// named), and, on its toxiproxy server, one proxy per client and node created for this run.
func Attach(ctx context.Context, e External, clients []string, runID string) (_ *Topology, err error) {
	begin := time.Now()
	t := &Topology{Kind: e.Topology, Password: e.Password, links: map[[2]string]network.Proxy{},
		nodeAt: map[string]string{}, taps: map[string]*network.Tap{}, busTaps: map[string]*network.Tap{},
		sentinelAddrs: e.Sentinels, masterName: e.MasterName}
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	var srv *network.Server
	if e.Toxiproxy != "" {
		if srv, err = network.Dial(ctx, e.Toxiproxy, "lockcheck-"+runID); err != nil {
			return nil, DeploymentError{err}
		}
		t.closers = append(t.closers, srv.Close)
	}
	var rt *docker.Runtime
	for _, n := range e.Nodes {
		var proc node.Proc
		if n.Container != "" {
			if rt == nil {
				if rt, err = docker.ConnectEngine(ctx); err != nil {
					return nil, fmt.Errorf("node %s names container %s: %w", n.Name, n.Container, err)
				}
				t.closers = append(t.closers, func() { rt.Close() })
			}
			if proc, err = rt.Adopt(ctx, n.Name, n.Container); err != nil {
				return nil, err
			}
		}
		var runtime node.Runtime
		if rt != nil {
			runtime = rt
		}
		t.Nodes = append(t.Nodes, node.Attach(n.Name, n.Addr, e.Password, runtime, proc))
		t.nodeAt[n.Addr] = n.Name
		if n.Announced != "" {
			t.nodeAt[n.Announced] = n.Name
		}
		if n.Front != "" && srv != nil {
			front, err := srv.Existing(n.Front)
			if err != nil {
				return nil, DeploymentError{fmt.Errorf("node %s's front: %w", n.Name, err)}
			}
			t.links[[2]string{"*", n.Name}] = front
		}
		for _, c := range clients {
			if srv == nil {
				continue
			}
			l, err := srv.Add(c+"->"+n.Name, n.Addr)
			if err != nil {
				return nil, err
			}
			t.links[[2]string{c, n.Name}] = l
		}
	}
	if err := t.checkReachable(ctx); err != nil {
		return nil, err
	}
	t.Startup = time.Since(begin)
	return t, nil
}

// checkReachable pings every node (and Sentinel) directly, so a wrong address or password is one clear
// error before the run.
func (t *Topology) checkReachable(ctx context.Context) error {
	var errs []error
	for _, nd := range t.Nodes {
		c := t.admin(nd.Addr())
		if err := c.Ping(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("node %s at %s: %w", nd.Name(), nd.Addr(), err))
		}
		c.Close()
	}
	for _, sa := range t.sentinelAddrs {
		c := t.admin(sa)
		if err := c.Ping(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("sentinel at %s: %w", sa, err))
		}
		c.Close()
	}
	if err := oneLine("the deployment does not answer as described", len(t.Nodes)+len(t.sentinelAddrs), errs); err != nil {
		return DeploymentError{err}
	}
	return nil
}

// DeleteKeys deletes, on every node, the keys matching any of patterns that skip does not accept. A
// replica's refusal (READONLY, or MOVED on a cluster) is not an error: its primary's DEL reaches it.
func (t *Topology) DeleteKeys(ctx context.Context, patterns []string, skip func(key string) bool) error {
	var errs []error
	for _, nd := range t.Nodes {
		c := t.admin(nd.Addr())
		for _, p := range patterns {
			iter := c.Scan(ctx, 0, p, 1000).Iterator()
			for iter.Next(ctx) {
				k := iter.Val()
				if skip != nil && skip(k) {
					continue
				}
				if err := c.Del(ctx, k).Err(); err != nil && !strings.HasPrefix(err.Error(), "READONLY") && !strings.HasPrefix(err.Error(), "MOVED") {
					errs = append(errs, fmt.Errorf("node %s: DEL %s: %w", nd.Name(), k, err))
				}
			}
			if err := iter.Err(); err != nil {
				errs = append(errs, fmt.Errorf("node %s: SCAN: %w", nd.Name(), err))
			}
		}
		c.Close()
	}
	return errors.Join(errs...)
}

// Leftover is a key found on a node before a run: state that an earlier run (or someone else) left.
type Leftover struct {
	Node, Key string
	PTTL      time.Duration // -1: no expiry
}

// Leftovers scans every node for keys matching any of patterns (SCAN MATCH), with their pttl, leaving out
// those skip accepts; a key seen on several nodes (a primary and its replicas) is listed once.
func (t *Topology) Leftovers(ctx context.Context, patterns []string, skip func(key string) bool) ([]Leftover, error) {
	var out []Leftover
	seen := map[string]bool{}
	for _, nd := range t.Nodes {
		c := t.admin(nd.Addr())
		for _, p := range patterns {
			iter := c.Scan(ctx, 0, p, 1000).Iterator()
			for iter.Next(ctx) {
				k := iter.Val()
				if seen[k] || skip != nil && skip(k) {
					continue
				}
				seen[k] = true
				pttl, err := c.PTTL(ctx, k).Result()
				if err != nil {
					c.Close()
					return nil, fmt.Errorf("node %s: PTTL %s: %w", nd.Name(), k, err)
				}
				out = append(out, Leftover{Node: nd.Name(), Key: k, PTTL: pttl})
			}
			if err := iter.Err(); err != nil {
				c.Close()
				return nil, fmt.Errorf("node %s: SCAN: %w", nd.Name(), err)
			}
		}
		c.Close()
	}
	return out, nil
}
