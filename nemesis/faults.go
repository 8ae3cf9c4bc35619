package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

func init() {
	// partition black-holes the links between a random minority of clients (at least one) and every node:
	// the cut-off clients time out while the others carry on.
	Register("partition", linkFault{pick: minorityLinks, apply: func(l Link, _ Params) error { return l.Cut() },
		what: func(Params) string { return "black-hole: bytes dropped both ways, connections kept open" }})
	Register("kill", kill{})
}

func link(env *Env, target string) (Link, error) {
	c, n, ok := strings.Cut(target, "->")
	var l Link
	if ok {
		l = env.Link(c, n)
	}
	if l == nil {
		return nil, fmt.Errorf("no link %q", target)
	}
	return l, nil
}

// kill sends SIGKILL to one node and restarts it (same port) when the fault ends; whether it comes back
// with its data depends on --persistence.
type kill struct{}

func (kill) Targets(rng *rand.Rand, env *Env) []string { return pickNodes(rng, env, "one") }

func (kill) Start(_ context.Context, env *Env, targets []string) (string, error) {
	for _, t := range targets {
		p := env.Node(t)
		if p == nil {
			return "", fmt.Errorf("no node %q", t)
		}
		if err := p.Kill(); err != nil {
			return "", err
		}
	}
	return how(env, targets, "kill"), nil
}

// how names what action does to the targets' nodes (a signal, or a container operation).
func how(env *Env, targets []string, action string) string {
	for _, t := range targets {
		if p, ok := env.Node(t).(interface{ How(string) string }); ok {
			return p.How(action)
		}
	}
	return action
}

func (kill) Stop(ctx context.Context, env *Env, targets []string) error {
	var errs []error
	for _, t := range targets {
		if p := env.Node(t); p != nil && !p.Running() {
			// A step per node marks where its restart begins, and another where the server answers again
			// (its data loaded): a command to it whose client gave up before that, sent after the start
			// (the server had exited), surely never ran (checker.downNodes).
			if env.Note != nil {
				env.Note("kill", []string{t}, "restarting "+t)
			}
			err := p.Restart(ctx)
			if err == nil && env.Note != nil {
				env.Note("kill", []string{t}, t+" answering again")
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
