package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

func init() {
	Register("latency", linkFault{pick: minorityLinks, apply: func(l Link, p Params) error {
		return l.Delay(int(p.Latency.Milliseconds()), int(p.Jitter.Milliseconds()))
	}, what: func(p Params) string { return fmt.Sprintf("latency %s ± %s both ways", p.Latency, p.Jitter) }})
	Register("drop-reply", linkFault{pick: oneClientLinks, apply: func(l Link, _ Params) error { return l.DropReplies() },
		what: func(Params) string { return "replies swallowed: commands apply, callers never hear" }})
	Register("pause", pause{})
	Register("client-pause", clientPause{})
	Register("client-clock", clientClock{})
	Register("clock", nodeClock{})
}

// nodeClock jumps the wall clock of a majority of the nodes ahead by the clock bump (through the clockshift
// library each node was started with) and resets it when the fault ends. Redis expires keys by wall clock,
// so leases on those nodes end early.
type nodeClock struct{}

func (nodeClock) Targets(rng *rand.Rand, env *Env) []string { return pickNodes(rng, env, "majority") }

func (nodeClock) Start(_ context.Context, env *Env, targets []string) (string, error) {
	d := env.Params.ClockBump
	return "clock offset +" + d.String(), eachNode(env, targets, func(p Process) error { return p.SetClockOffset(d) })
}

func (nodeClock) Stop(_ context.Context, env *Env, targets []string) error {
	return eachNode(env, targets, func(p Process) error { return p.SetClockOffset(0) })
}

// linkFault applies a toxic to chosen client-to-node links and heals them.
type linkFault struct {
	pick  func(rng *rand.Rand, env *Env) []string
	apply func(Link, Params) error
	what  func(Params) string
}

func (f linkFault) Targets(rng *rand.Rand, env *Env) []string { return f.pick(rng, env) }

func (f linkFault) Start(_ context.Context, env *Env, targets []string) (string, error) {
	return f.what(env.Params), eachLink(env, targets, func(l Link) error { return f.apply(l, env.Params) })
}

func (f linkFault) Stop(_ context.Context, env *Env, targets []string) error {
	return eachLink(env, targets, Link.Heal)
}

func eachLink(env *Env, targets []string, f func(Link) error) error {
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
func minorityLinks(rng *rand.Rand, env *Env) []string {
	return clientLinks(pickClients(rng, env, "minority"), linkNodes(env))
}

// oneClientLinks: the links of one random client to every node.
func oneClientLinks(rng *rand.Rand, env *Env) []string {
	return clientLinks(pickClients(rng, env, "one"), linkNodes(env))
}

func clientLinks(clients, nodes []string) []string {
	var out []string
	for _, c := range clients {
		for _, n := range nodes {
			out = append(out, c+"->"+n)
		}
	}
	return out
}

// pause stops one node with SIGSTOP (it keeps its sockets and answers nothing) and continues it.
type pause struct{}

func (pause) Targets(rng *rand.Rand, env *Env) []string { return pickNodes(rng, env, "one") }

func (pause) Start(_ context.Context, env *Env, targets []string) (string, error) {
	return how(env, targets, "pause"), eachNode(env, targets, Process.Pause)
}

func (pause) Stop(_ context.Context, env *Env, targets []string) error {
	return eachNode(env, targets, Process.Resume)
}

func eachNode(env *Env, targets []string, f func(Process) error) error {
	var errs []error
	for _, t := range targets {
		p := env.Node(t)
		if p == nil {
			errs = append(errs, fmt.Errorf("no node %q", t))
			continue
		}
		errs = append(errs, f(p))
	}
	return errors.Join(errs...)
}

// clientPause freezes one client entirely (commands, watchdog, its critical section) right after its next
// grant, as a long GC pause after acquire would; at the end of the fault it resumes where it stopped, still
// believing it holds what it held. A client granted nothing during the fault is never frozen.
type clientPause struct{}

func (clientPause) Targets(rng *rand.Rand, env *Env) []string { return pickClients(rng, env, "one") }

func (clientPause) Applies(env *Env) error { return needClients(env) }

func (clientPause) Start(_ context.Context, env *Env, targets []string) (string, error) {
	return "armed: the client freezes at its next grant, inside its critical section",
		eachClient(env, targets, func(c Client, _ string) { c.Arm() })
}

func (clientPause) Stop(_ context.Context, env *Env, targets []string) error {
	return eachClient(env, targets, func(c Client, _ string) { c.Resume() })
}

func needClients(env *Env) error {
	if env.Client == nil {
		return fmt.Errorf("no client controls in this environment")
	}
	return nil
}

// eachClient applies f to each target "client" or "client@offset".
func eachClient(env *Env, targets []string, f func(c Client, arg string)) error {
	var errs []error
	for _, t := range targets {
		name, arg, _ := strings.Cut(t, "@")
		c := clientOf(env, name)
		if c == nil {
			errs = append(errs, fmt.Errorf("no client %q", name))
			continue
		}
		f(c, arg)
	}
	return errors.Join(errs...)
}

// clientClock moves one client's wall clock ahead or behind by the clock bump: it feeds the scripts that take
// client time (fair lock deadlines, expirable-semaphore leases).
type clientClock struct{}

func (clientClock) Targets(rng *rand.Rand, env *Env) []string {
	sign := "+"
	if rng.IntN(2) == 0 {
		sign = "-"
	}
	var out []string
	for _, c := range pickClients(rng, env, "one") {
		out = append(out, c+"@"+sign+env.Params.ClockBump.String())
	}
	return out
}

func (clientClock) Applies(env *Env) error { return needClients(env) }

func (clientClock) Start(_ context.Context, env *Env, targets []string) (string, error) {
	var detail []string
	err := eachClient(env, targets, func(c Client, arg string) {
		d, _ := time.ParseDuration(strings.TrimPrefix(arg, "+"))
		c.SetClockOffset(d)
		detail = append(detail, "offset "+arg)
	})
	return strings.Join(detail, ", "), err
}

func (clientClock) Stop(_ context.Context, env *Env, targets []string) error {
	return eachClient(env, targets, func(c Client, _ string) { c.SetClockOffset(0) })
}
