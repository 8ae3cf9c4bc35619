package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
)

// Faults on the nodes' processes.
func init() {
	Register("kill", kill{})
	Register("pause", pause{})
}

// kill sends SIGKILL to one node and restarts it (same port) when the fault ends; whether it comes back
// with its data depends on --persistence.
type kill struct{}

func (kill) Needs() Needs { return NeedsProcess }

func (kill) Targets(rng *rand.Rand, env *Env) []Target { return named(pickNodes(rng, env, "one")) }

func (kill) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	heal := func(ctx context.Context) error { return restart(ctx, env, targets) }
	for _, t := range targets {
		p := env.Node(t.Name)
		if p == nil {
			return "", heal, fmt.Errorf("no node %q", t)
		}
		if err := p.Kill(); err != nil {
			return "", heal, err
		}
	}
	return how(env, targets, "kill"), heal, nil
}

// restart starts the targets' stopped nodes again.
func restart(ctx context.Context, env *Env, targets []Target) error {
	var errs []error
	for _, t := range targets {
		if p := env.Node(t.Name); p != nil && !p.Running() {
			// A step per node marks where its restart begins, and another where the server answers again
			// (its data loaded): a command to it whose client gave up before that, sent after the start
			// (the server had exited), surely never ran (checker.downNodes).
			if env.Note != nil {
				env.Note("kill", []Target{t}, "restarting "+t.Name)
			}
			err := p.Restart(ctx)
			if err == nil && env.Note != nil {
				env.Note("kill", []Target{t}, t.Name+" answering again")
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// how names what action does to the targets' nodes (a signal, or a container operation).
func how(env *Env, targets []Target, action string) string {
	for _, t := range targets {
		if p, ok := env.Node(t.Name).(interface{ How(string) string }); ok {
			return p.How(action)
		}
	}
	return action
}

// pause stops one node with SIGSTOP (it keeps its sockets and answers nothing) and continues it.
type pause struct{}

func (pause) Needs() Needs { return NeedsProcess }

func (pause) Targets(rng *rand.Rand, env *Env) []Target { return named(pickNodes(rng, env, "one")) }

func (pause) Start(_ context.Context, env *Env, targets []Target) (string, Heal, error) {
	return how(env, targets, "pause"), func(context.Context) error { return eachNode(env, targets, Process.Resume) },
		eachNode(env, targets, Process.Pause)
}

func eachNode(env *Env, targets []Target, f func(Process) error) error {
	var errs []error
	for _, t := range targets {
		p := env.Node(t.Name)
		if p == nil {
			errs = append(errs, fmt.Errorf("no node %q", t))
			continue
		}
		errs = append(errs, f(p))
	}
	return errors.Join(errs...)
}
