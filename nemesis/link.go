package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Faults on the client-to-node links: partitions of several shapes (Jepsen's grudges), latency, swallowed
// or held replies, held commands.
func init() {
	cut := func(l Link, _ Params) error { return l.Cut() }
	blackhole := func(Params) string { return "black-hole: bytes dropped both ways, connections kept open" }
	// partition black-holes the links between a random minority of clients (at least one) and every node:
	// the cut-off clients time out while the others carry on. Right after a grant it cuts the holder itself
	// (the reference's S7: the holder is cut off from Redis while it holds), rather than whichever clients
	// the seed drew.
	Register("partition", linkFault{pick: minorityLinks, apply: cut, what: blackhole})
	RegisterTriggered("partition", "grant", callerLinks)
	Register("partition-node", linkFault{pick: isolateNode, apply: cut, what: blackhole})
	Register("partition-halves", linkFault{pick: halves, apply: cut, what: blackhole})
	Register("partition-ring", linkFault{pick: majorityRing, apply: cut, what: blackhole})

	Register("latency", linkFault{pick: minorityLinks, apply: func(l Link, p Params) error {
		return l.Delay(int(p.Latency.Milliseconds()), int(p.Jitter.Milliseconds()))
	}, what: func(p Params) string { return fmt.Sprintf("latency %s ± %s both ways", p.Latency, p.Jitter) }})

	Register("drop-reply", linkFault{pick: oneClientLinks, apply: func(l Link, _ Params) error { return l.DropReplies() },
		what: func(Params) string { return "replies swallowed: commands apply, callers never hear" }})
	RegisterTriggered("drop-reply", "unlock", callerLinks)

	// hold-replies is the pause during acquisition (S2): every client's commands reach the nodes and apply,
	// their replies wait at the proxies until the heal, as in a paused client's kernel buffer. All clients,
	// because whoever wins the free lock must be one whose grant waits: fired by a release (the lock just
	// became free), the releaser's next tryLock or a queued waiter's, whichever comes first, takes it and
	// reads its grant after the lease. One client's replies alone mostly held an attempt that lost (waiters
	// hear of a release before the releaser tries again) and missed.
	Register("hold-replies", linkFault{pick: everyClientLinks, needs: NeedsHeldReplies, apply: func(l Link, _ Params) error {
		h, ok := l.(interface{ HoldReplies() error })
		if !ok {
			return fmt.Errorf("this link cannot hold replies (a toxiproxy server's links cannot)")
		}
		return h.HoldReplies()
	}, what: func(p Params) string {
		return "replies held until the heal: commands apply, callers hear them " + p.Duration.String() + " late"
	}})
	RegisterTriggered("hold-replies", "release", func(_ Event, planned []Target) []Target { return planned })

	// delay-pexpire holds PEXPIRE commands (and what each connection sends after one) at the clients'
	// proxies for the fault's duration and delivers them in order at the heal: the gap between a
	// MultiLock's member grants and its final lease (Redisson's expireAsync, H6 in docs/findings.md), which
	// a pause of a whole client cannot aim at. Every client's, as hold-replies does, because the one whose
	// final lease must be late is whoever wins the lock next, which no plan knows; fired by a release, every
	// client's but the releaser's, so that one may take the lock again at once, unheld, after the members
	// of a held winner ran out.
	Register("delay-pexpire", delayCommand("PEXPIRE"))
	RegisterTriggered("delay-pexpire", "release", notCaller)
}

// linkFault applies a toxic to chosen client-to-node links and heals them.
type linkFault struct {
	pick  func(rng *rand.Rand, env *Env) []Target
	apply func(Link, Params) error
	what  func(Params) string
	needs Needs // beyond the links
}

func (f linkFault) Needs() Needs { return NeedsLinks | f.needs }

func (f linkFault) Targets(rng *rand.Rand, env *Env) []Target { return f.pick(rng, env) }

func (f linkFault) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	return f.what(env.Params), healLinks(env, targets),
		eachLink(env, targets, func(l Link) error { return f.apply(l, env.Params) })
}

// healLinks heals the links.
func healLinks(env *Env, links []Target) Heal {
	return func(context.Context) error { return eachLink(env, links, Link.Heal) }
}

// delayCommand is a link fault on every client that holds the commands running command; another command
// to delay is one more Register line.
func delayCommand(command string) Fault {
	return linkFault{pick: everyClientLinks, apply: func(l Link, _ Params) error {
		h, ok := l.(interface{ HoldCommand(string) error })
		if !ok {
			return fmt.Errorf("this link cannot hold commands (a toxiproxy server's links cannot)")
		}
		return h.HoldCommand(command)
	}, what: func(p Params) string {
		return command + " held until the heal (" + p.Duration.String() + "), then delivered in order; other commands pass"
	}}
}

func link(env *Env, t Target) (Link, error) {
	var l Link
	if t.Kind == LinkTo {
		l = env.Link(t.From, t.Name)
	}
	if l == nil {
		return nil, fmt.Errorf("no link %q", t)
	}
	return l, nil
}

func eachLink(env *Env, targets []Target, f func(Link) error) error {
	var errs []error
	for _, t := range targets {
		l, err := link(env, t)
		if err == nil {
			err = f(l)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// minorityLinks: the links of a random minority of the clients (at least one) to every node.
func minorityLinks(rng *rand.Rand, env *Env) []Target {
	return clientLinks(pickClients(rng, env, "minority"), linkNodes(env))
}

// oneClientLinks: the links of one random client to every node.
func oneClientLinks(rng *rand.Rand, env *Env) []Target {
	return clientLinks(pickClients(rng, env, "one"), linkNodes(env))
}

// everyClientLinks: every client's links to every node, or the named clients' (a schedule's step aims
// hold-replies at the one client whose grant must come back late).
func everyClientLinks(_ *rand.Rand, env *Env) []Target {
	clients := env.Clients
	if len(env.Targets.Clients) > 0 {
		env.uses(useClients)
		clients = env.Targets.Clients
	}
	return clientLinks(clients, linkNodes(env))
}

func clientLinks(clients, nodes []string) []Target {
	var out []Target
	for _, c := range clients {
		for _, n := range nodes {
			out = append(out, LinkTarget(c, n))
		}
	}
	return out
}

// isolateNode cuts one node (or the selected nodes) off from every client (or the selected clients).
func isolateNode(rng *rand.Rand, env *Env) []Target {
	clients := env.Clients
	if len(env.Targets.Clients) > 0 {
		env.uses(useClients)
		clients = env.Targets.Clients
	}
	return clientLinks(clients, pickNodes(rng, env, "one"))
}

// halves splits clients and nodes into two sides at random (the nodes' first side the larger) and cuts
// every link across.
func halves(rng *rand.Rand, env *Env) []Target {
	nodes := rng.Perm(len(env.Nodes))
	clients := rng.Perm(len(env.Clients))
	nodeSide := map[string]int{}
	for i, j := range nodes {
		if i >= (len(nodes)+1)/2 {
			nodeSide[env.Nodes[j]] = 1
		}
	}
	var out []Target
	for i, j := range clients {
		side := 0
		if i >= (len(clients)+1)/2 {
			side = 1
		}
		for _, n := range env.Nodes {
			if nodeSide[n] != side {
				out = append(out, LinkTarget(env.Clients[j], n))
			}
		}
	}
	if len(out) == 0 { // one node and one client: nothing to cut across, so cut it off entirely
		out = append(out, LinkTarget(env.Clients[0], env.Nodes[0]))
	}
	return out
}

// majorityRing gives each client its own majority of the nodes (a window of n/2+1 starting at a rotating
// offset) and cuts the rest: every client sees a majority, and no two see the same one.
func majorityRing(rng *rand.Rand, env *Env) []Target {
	n := len(env.Nodes)
	start := rng.IntN(n)
	var out []Target
	for i, c := range env.Clients {
		first := (start + i) % n
		for k := 0; k < n; k++ {
			if (k-first+n)%n >= n/2+1 {
				out = append(out, LinkTarget(c, env.Nodes[k]))
			}
		}
	}
	return out
}

// callerLinks moves a link fault from the planned client's links to the caller's links to the same nodes.
func callerLinks(ev Event, planned []Target) []Target {
	return toTheCaller(ev, planned, LinkTo, func(t *Target) { t.From = ev.Client })
}

// toTheCaller rewrites each planned target of kind to name the event's caller (once each), or keeps the
// plan when the event has no caller or a target is of another kind.
func toTheCaller(ev Event, planned []Target, kind TargetKind, move func(*Target)) []Target {
	if ev.Client == "" {
		return planned
	}
	var out []Target
	for _, t := range planned {
		if t.Kind != kind {
			return planned
		}
		move(&t)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// notCaller drops the event's client's links from the planned ones.
func notCaller(ev Event, planned []Target) []Target {
	var out []Target
	for _, t := range planned {
		if t.Kind != LinkTo || t.From != ev.Client {
			out = append(out, t)
		}
	}
	return out
}
