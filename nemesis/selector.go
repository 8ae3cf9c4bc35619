package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Selector is --nemesis-targets: how many nodes or clients a fault hits (one, minority, majority, all; for
// nodes also primary), or exactly which. Named nodes and named clients narrow separately; a size applies
// to whichever of the two is not named. The zero value lets each fault use its own default.
type Selector struct {
	Size    string
	Nodes   []string
	Clients []string
}

// Sizes a selector accepts.
var sizes = []string{"one", "minority", "majority", "all", "primary"}

// ParseSelector reads --nemesis-targets against env's names.
func ParseSelector(s string, env *Env) (Selector, error) {
	var sel Selector
	s = strings.TrimSpace(s)
	if s == "" || s == "default" {
		return sel, nil
	}
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		switch {
		case slices.Contains(sizes, w):
			if sel.Size != "" {
				return sel, fmt.Errorf("--nemesis-targets: two sizes, %s and %s", sel.Size, w)
			}
			if w == "primary" && env.Replication == nil && len(env.Nodes) != 1 {
				return sel, fmt.Errorf("--nemesis-targets primary: topology %s has no primary", env.Topology)
			}
			sel.Size = w
		case slices.Contains(env.Nodes, w):
			sel.Nodes = append(sel.Nodes, w)
		case slices.Contains(env.Clients, w):
			sel.Clients = append(sel.Clients, w)
		default:
			return sel, fmt.Errorf("--nemesis-targets: %q is no size (%s), nor one of this run's nodes (%s) or clients (%s)", w,
				strings.Join(sizes, ", "), strings.Join(env.Nodes, ", "), strings.Join(env.Clients, ", "))
		}
	}
	return sel, nil
}

// count is how many of n a size picks.
func count(size string, n int, rng *rand.Rand) int {
	switch size {
	case "one":
		return 1
	case "minority":
		return 1 + rng.IntN(max((n-1)/2, 1))
	case "majority":
		return n/2 + 1
	case "all":
		return n
	}
	return 1
}

// pickNodes chooses the nodes one occurrence hits: the named ones, the primary (resolved at start), or a
// random set of the selector's size, else of dflt.
func pickNodes(rng *rand.Rand, env *Env, dflt string) []string {
	if len(env.Targets.Nodes) > 0 {
		env.uses(useNodes)
		return env.Targets.Nodes
	}
	size := dflt
	if env.Targets.Size != "" {
		env.uses(useSize)
		size = env.Targets.Size
	}
	if size == "primary" {
		return []string{Primary}
	}
	return pick(rng, env.Nodes, count(size, len(env.Nodes), rng))
}

// pickClients chooses clients the same way ("primary" does not apply to clients: dflt is used).
func pickClients(rng *rand.Rand, env *Env, dflt string) []string {
	if len(env.Targets.Clients) > 0 {
		env.uses(useClients)
		return env.Targets.Clients
	}
	size := dflt
	if env.Targets.Size != "" && env.Targets.Size != "primary" {
		env.uses(useSize)
		size = env.Targets.Size
	}
	return pick(rng, env.Clients, count(size, len(env.Clients), rng))
}

// named makes targets of node or client names.
func named(ss []string) []Target {
	var out []Target
	for _, s := range ss {
		out = append(out, NameTarget(s))
	}
	return out
}

// linkNodes are the nodes whose client links a link fault touches: the named nodes or the primary, else all.
func linkNodes(env *Env) []string {
	if len(env.Targets.Nodes) > 0 {
		env.uses(useNodes)
		return env.Targets.Nodes
	}
	if env.Targets.Size == "primary" {
		env.uses(useSize)
		return []string{Primary}
	}
	return env.Nodes
}

func pick(rng *rand.Rand, from []string, n int) []string {
	var out []string
	for _, i := range rng.Perm(len(from))[:min(n, len(from))] {
		out = append(out, from[i])
	}
	return out
}

// resolve replaces the primary placeholder in targets (a node, or a link's node) with the node that is
// primary now.
func resolve(ctx context.Context, env *Env, targets []Target) ([]Target, error) {
	var primary string
	out := make([]Target, len(targets))
	for i, t := range targets {
		if !t.IsPrimary() {
			out[i] = t
			continue
		}
		if primary == "" {
			switch {
			case env.Replication != nil:
				p, err := env.Replication.Primary(ctx, 0)
				if err != nil {
					return nil, err
				}
				primary = p
			case len(env.Nodes) == 1:
				primary = env.Nodes[0]
			default:
				return nil, fmt.Errorf("topology %s has no primary", env.Topology)
			}
		}
		out[i] = t.withNode(primary)
	}
	return out, nil
}

// The parts of a Selector a fault's Targets can use. Recording what the pickers actually read, rather
// than declaring it per fault, keeps a new fault's honesty automatic.
type usage uint8

const (
	useNodes usage = 1 << iota
	useClients
	useSize
)

// uses notes that a picker read part of the selector (only while checkTargets is asking).
func (e *Env) uses(u usage) {
	if e.used != nil {
		*e.used |= u
	}
}

// checkTargets refuses a --nemesis-targets that some fault would ignore, or part of which no fault uses:
// "--nemesis kill --nemesis-targets c1" would otherwise kill a random node as if c1 had not been named.
func checkTargets(faults []string, env *Env) error {
	sel := env.Targets
	if sel.Size == "" && len(sel.Nodes) == 0 && len(sel.Clients) == 0 {
		return nil
	}
	var all usage
	for _, name := range faults {
		probe := *env
		probe.used = new(usage)
		registry[name].Targets(rand.New(rand.NewPCG(0, 0)), &probe)
		if *probe.used == 0 {
			return fmt.Errorf("--nemesis-targets %s: fault %s %s", sel, name, ignores(name, probe))
		}
		all |= *probe.used
	}
	for _, part := range []struct {
		u    usage
		set  bool
		what string
	}{{useNodes, len(sel.Nodes) > 0, strings.Join(sel.Nodes, ",")},
		{useClients, len(sel.Clients) > 0, strings.Join(sel.Clients, ",")},
		{useSize, sel.Size != "", sel.Size}} {
		if part.set && all&part.u == 0 {
			return fmt.Errorf("--nemesis-targets %s: no fault of --nemesis %s uses %s", sel, strings.Join(faults, ","), part.what)
		}
	}
	return nil
}

// ignores says why a fault used none of the selector.
func ignores(name string, probe Env) string {
	probe.Targets = Selector{Nodes: probe.Nodes, Clients: probe.Clients}
	probe.used = new(usage)
	registry[name].Targets(rand.New(rand.NewPCG(0, 0)), &probe)
	switch *probe.used {
	case useNodes:
		return "hits nodes (name one, e.g. " + probe.Nodes[0] + ", or a size)"
	case useClients:
		return "hits clients (name one, e.g. " + probe.Clients[0] + ", or a size)"
	case 0:
		return "chooses its own targets (leave --nemesis-targets out)"
	}
	return "does not use it"
}

// String is the selector as --nemesis-targets spells it.
func (s Selector) String() string {
	parts := append(append([]string{}, s.Nodes...), s.Clients...)
	if s.Size != "" {
		parts = append([]string{s.Size}, parts...)
	}
	return strings.Join(parts, ",")
}
