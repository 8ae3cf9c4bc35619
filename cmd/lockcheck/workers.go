package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addWorkerFlags adds the flags that pick an out-of-process client (docs/protocol.md).
func addWorkerFlags(f *pflag.FlagSet, o *runner.Options) {
	f.StringVar(&o.Worker.Client, "client", "", "drive a real library through its worker: NAME[@VERSION], one of "+
		join(worker.Names())+" (built on first use, cached); NAME,go alternates the clients between it and lockcheck's Go emulation")
	f.StringVar(&o.Worker.Cmd, "client-cmd", "", `run your own worker: "CMD ARGS" (speaks docs/protocol.md)`)
	f.StringArrayVar(&o.Worker.Options, "client-option", nil, "a setting passed to the worker's library, KEY=VALUE (repeatable)")
}

// probeWorkerKind gives a user's worker (--client-cmd) run its lock when --lock is not set, by asking the
// worker which kinds it drives (a process: before runner.Prepare, which starts none). A registered
// worker's lock and control flags are Prepare's (runner/control.go).
func probeWorkerKind(cmd *cobra.Command, o *runner.Options) error {
	if o.Worker.Cmd == "" {
		return nil
	}
	// A dry run starts nothing: it checks the flags on the default kind.
	if dry, _ := cmd.Flags().GetBool("dry-run"); dry || cmd.Flags().Changed("lock") || cmd.Flags().Changed("lock-spec") {
		return nil
	}
	p, err := runner.ProbeKinds(cmd.Context(), *o, os.Stderr)
	if err != nil {
		return err
	}
	o.Lock = p.Lock
	fmt.Fprintf(os.Stderr, "lockcheck: no --lock: %s\n", p.Text())
	return nil
}

func newWorkerCheckCmd() *cobra.Command {
	o := runner.Defaults()
	o.Time, o.Quiet, o.Clients = 5*time.Second, time.Second, 3
	cmd := &cobra.Command{
		Use:   "worker-check [--client NAME | CMD ARGS...]",
		Short: "Try a worker: handshake, a short fault-free run on one Redis (or --topology), and a client pause",
		Example: `  lockcheck worker-check --client naive-safe
  lockcheck worker-check --time 2s ./my-worker   # lockcheck's flags before the command; arguments after it are the worker's`,
		RunE: func(cmd *cobra.Command, args []string) error {
			markRan(cmd)
			if len(args) > 0 {
				if o.Worker.Client != "" {
					return runner.UsageError{Err: fmt.Errorf("give --client or a command, not both")}
				}
				o.Worker.Cmd, o.Worker.Argv = strings.Join(quoteAll(args), " "), args
			}
			if o.Worker.Client == "" && o.Worker.Cmd == "" {
				return runner.UsageError{Err: fmt.Errorf("name the worker: --client NAME or a command")}
			}
			lockKnown := cmd.Flags().Changed("lock") // else the worker is asked for its kinds
			if o.Worker.Client != "" {
				s, _, err := worker.Lookup(o.Worker.Client)
				if err != nil {
					return runner.UsageError{Err: err}
				}
				if !lockKnown && s.Lock != "" {
					o.Lock, lockKnown = s.Lock, true
				}
			}
			if !cmd.Flags().Changed("seed") {
				o.Seed = time.Now().UnixNano() % 1_000_000
			}
			items := runner.WorkerCheck(cmd.Context(), o, lockKnown, os.Stderr)
			code := 0
			for _, it := range items {
				mark := "✓"
				if !it.OK {
					mark, code = "✗", 1
				}
				fmt.Printf("%s %s: %s\n", mark, it.Name, it.Why)
			}
			return exitError{code}
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after the command are the worker's
	// No default value: without --lock the worker's own kind is used (RunE), so Defaults' "reentrant" would be
	// a second, wrong default in --help.
	f.StringVar(&o.Lock, "lock", "", "the lock kind to drive (default: a registered worker's own, else the first kind the worker names that lockcheck knows)")
	f.StringVar(&o.Worker.Client, "client", "", "a registered worker, NAME[@VERSION]")
	f.StringVar(&o.Topology, "topology", "", "the deployment of the runs: single (default), redlock, sentinel or cluster, one the worker serves")
	f.StringArrayVar(&o.Worker.Options, "client-option", nil, "a setting passed to the worker's library, KEY=VALUE")
	f.DurationVar(&o.Time, "time", o.Time, "how long each of the two runs lasts (the client pause is fitted into it)")
	f.DurationVar(&o.Lease, "lease", o.Lease, "lease time; 0 lets the watchdog (or the worker's default) keep the lock")
	f.Int64Var(&o.Seed, "seed", o.Seed, "seed (default: random)")
	f.StringVar(&o.Results, "results", o.Results, "directory of runs")
	return cmd
}

// quoteAll keeps each argument whole through the worker command line's split, for its display (the
// worker is started from the arguments themselves; a single quote inside one is dropped here).
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = "'" + strings.ReplaceAll(a, "'", "") + "'"
		}
		out[i] = a
	}
	return out
}
