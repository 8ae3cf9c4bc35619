package topology

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/topology/kind"
	"github.com/redis/go-redis/v9"
)

// MasterName is the name lockcheck's own Sentinels monitor.
const MasterName = "lockcheck"

// MasterName is the name the Sentinels monitor (an external deployment's may differ).
func (t *Topology) MasterName() string {
	if t.masterName != "" {
		return t.masterName
	}
	return MasterName
}

func init() { registerStart(kind.Sentinel, (*Topology).startSentinel) }

// startSentinel brings up a primary and two replicas, each behind a front proxy that it announces as its
// address (and, behind that, a tap that can hold one replica's replication stream), and three Sentinels
// monitoring the primary's front. Replication and Sentinel traffic therefore
// pass through the front proxies (before and after a failover, since Sentinel reconfigures replicas to the
// announced addresses), and cutting a node's front cuts it off from replicas and Sentinels alike, while
// each client still has its own proxy to every node.
func (t *Topology) startSentinel(ctx context.Context, s Spec) error {
	ports := make([]int, 3)
	var releases []func()
	defer func() { // normally done just before the nodes start
		for _, r := range releases {
			r()
		}
	}()
	for i := range ports {
		p, release, err := node.ReservePort()
		if err != nil {
			return err
		}
		releases = append(releases, release)
		ports[i] = p
		name := fmt.Sprintf("n%d", i+1)
		front, tap, err := t.addFront("*", name, p, network.ReplicaTag)
		if err != nil {
			return err
		}
		t.taps[name] = tap
		t.nodeAt[front.Addr()] = name
	}
	frontPort := func(i int) string { return t.portOf("*", fmt.Sprintf("n%d", i+1)) }
	for _, r := range releases { // every proxy and tap is listening: the nodes may bind their ports now
		r()
	}
	releases = nil
	for i := range ports {
		name := fmt.Sprintf("n%d", i+1)
		extra := []string{"replica-announce-ip 127.0.0.1", "replica-announce-port " + frontPort(i)}
		if i > 0 {
			extra = append(extra, "replicaof 127.0.0.1 "+frontPort(0))
		}
		cfg := s.node(name, t.Password)
		cfg.Port, cfg.Extra = ports[i], extra
		nd, err := node.Start(ctx, cfg)
		if err != nil {
			return err
		}
		t.Nodes = append(t.Nodes, nd)
	}
	if err := t.waitFor(ctx, t.Nodes[0].Addr(), func(c *redis.Client) bool {
		info := c.Info(ctx, "replication").Val()
		return strings.Count(info, "state=online") == 2
	}); err != nil {
		return fmt.Errorf("replicas never came online: %w", err)
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("s%d", i)
		sn, err := node.Start(ctx, node.Config{Runtime: s.Runtime, Server: s.Server, Name: name, Dir: filepath.Join(s.Dir, "sentinels", name), Password: t.Password,
			Sentinel: true, Extra: []string{
				"sentinel monitor " + MasterName + " 127.0.0.1 " + frontPort(0) + " 2",
				"sentinel auth-pass " + MasterName + " " + t.Password,
				"sentinel down-after-milliseconds " + MasterName + " 1000",
				"sentinel failover-timeout " + MasterName + " 5000",
				"sentinel parallel-syncs " + MasterName + " 1",
			}})
		if err != nil {
			return err
		}
		t.Sentinels = append(t.Sentinels, sn)
	}
	for _, sn := range t.Sentinels {
		if err := t.waitFor(ctx, sn.Addr(), func(c *redis.Client) bool {
			return c.Do(ctx, "SENTINEL", "CKQUORUM", MasterName).Err() == nil &&
				len(c.Do(ctx, "SENTINEL", "REPLICAS", MasterName).Val().([]any)) == 2
		}); err != nil {
			return fmt.Errorf("sentinel %s never saw the quorum and both replicas: %w", sn.Name(), err)
		}
	}
	return t.clientLinks(s.Clients, s.Front)
}

// admin connects straight to addr (no proxy), for the harness's own commands.
func (t *Topology) admin(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Password: t.Password, MaxRetries: -1, DisableIdentity: true,
		Protocol: 2, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
}

func (t *Topology) waitFor(ctx context.Context, addr string, ok func(*redis.Client) bool) error {
	c := t.admin(addr)
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(c) {
		if time.Now().After(deadline) {
			return errors.New("timed out after 30s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// SentinelAddrs lists the Sentinels' addresses.
func (t *Topology) SentinelAddrs() []string {
	if len(t.Sentinels) == 0 {
		return t.sentinelAddrs // an external deployment's
	}
	var out []string
	for _, s := range t.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// Dialer returns a dial function for client that reaches a node, by any address it is known by, through
// that client's own proxy to it; other addresses (the Sentinels) are dialed as they are.
func (t *Topology) Dialer(client string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if name, ok := t.nodeAt[addr]; ok {
			if l := t.links[[2]string{client, name}]; l != nil {
				addr = l.Addr()
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// sentinelPrimary asks the Sentinels which node is the primary now.
func (t *Topology) sentinelPrimary(ctx context.Context) (string, error) {
	var errs []error
	for _, sa := range t.SentinelAddrs() {
		c := t.admin(sa)
		addr, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", t.MasterName()).StringSlice()
		c.Close()
		if err == nil && len(addr) == 2 {
			if name, ok := t.nodeAt[addr[0]+":"+addr[1]]; ok {
				return name, nil
			}
			err = fmt.Errorf("unknown primary address %s:%s", addr[0], addr[1])
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no Sentinel named the primary: %w", errors.Join(errs...))
}

// sentinelFailover asks the Sentinels for a failover with nothing broken (SENTINEL FAILOVER) and waits up
// to 15 s for them to report the new primary.
func (t *Topology) sentinelFailover(ctx context.Context) (string, error) {
	before, err := t.sentinelPrimary(ctx)
	if err != nil {
		return "", err
	}
	var errs []error
	asked := false
	for _, sa := range t.SentinelAddrs() {
		c := t.admin(sa)
		err := c.Do(ctx, "SENTINEL", "FAILOVER", t.MasterName()).Err()
		c.Close()
		if err == nil {
			asked = true
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", sa, err))
	}
	if !asked {
		return "", fmt.Errorf("SENTINEL FAILOVER refused: %w", errors.Join(errs...))
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if now, err := t.sentinelPrimary(ctx); err == nil && now != before {
			return fmt.Sprintf("SENTINEL FAILOVER: primary %s -> %s", before, now), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Sprintf("SENTINEL FAILOVER accepted; primary still %s after 15s", before), nil
}
