package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newRunCmd() *cobra.Command {
	o := runner.Defaults()
	var lockSpec string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Start Redis, drive a lock under faults, record the history and judge it",
		Args:  cobra.NoArgs,
		Example: `  lockcheck run --lock reentrant --nemesis partition --time 30s
  lockcheck run --lock naive --lease 300ms --hold 100ms-1s --time 15s
  lockcheck run --topology sentinel --nemesis lagging-failover --nemesis-duration 9s --keys 4 --hold 2s-5s --time 60s
  lockcheck run --backend docker --lock reentrant --nemesis kill,pause --time 25s
  lockcheck run --backend external --external docker/compose/run/lockcheck.yml --nemesis partition,failover`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			if !cmd.Flags().Changed("seed") {
				o.Seed = time.Now().UnixNano() % 1_000_000
			}
			o.Command = commandLine(cmd, o.Seed)
			if !cmd.Flags().Changed("external-password") { // kept out of argv, which every local user can read
				o.ExternalFlags.Password = os.Getenv(redact.Flags["external-password"])
			}
			if err := useLockSpec(cmd, lockSpec, &o); err != nil {
				return err
			}
			if err := probeWorkerKind(cmd, &o); err != nil {
				return err
			}
			// The flags given: runner.Prepare fills the others in with a negative control's own run flags.
			o.Given = givenFlags(cmd)
			if cmd.Flags().Changed("keys") && o.Keys < 1 { // 0 is only the unset default
				return runner.UsageError{Err: fmt.Errorf("--keys must be at least 1, got %d", o.Keys)}
			}
			if cmd.Flags().Changed("nodes") && o.Nodes < 1 { // likewise
				return runner.UsageError{Err: fmt.Errorf("--nodes must be at least 1, got %d", o.Nodes)}
			}
			t, err := runner.Prepare(o) // every check that needs no process
			if err != nil {
				return err
			}
			t.WriteNotes(os.Stderr)
			if dryRun { // what a suite does to each of its entries first
				return nil
			}
			res, err := t.Execute(cmd.Context(), os.Stderr)
			if res != nil {
				res.Table(os.Stdout)
			}
			if err != nil {
				return err
			}
			return exitError{res.Valid.ExitCode()}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Lock, "lock", o.Lock, "lock to test: "+join(kinds.KindNames()))
	f.StringVar(&lockSpec, "lock-spec", "", "YAML file describing your own Lua lock (see examples/locks/), instead of --lock")
	f.StringVar(&o.Backend, "backend", o.Backend, "where the nodes run: process (child processes), docker (containers, testcontainers-go) or external (a deployment you started: --external)")
	f.StringVar(&o.DockerImage, "docker-image", o.DockerImage, "the Redis image of --backend docker (lockcheck images builds the default)")
	f.StringVar(&o.Server, "server", "", "the server the nodes run: redis (the host's redis-server, the default) or NAME@VERSION fetched into the cache: "+join(server.Names()))
	f.StringVar(&o.ServerBin, "server-bin", "", "the nodes run this Redis-compatible server binary (its own Sentinel and cluster mode)")
	f.StringVar(&o.External, "external", "", "YAML file describing the deployment of --backend external")
	f.StringVar(&o.ExternalFlags.Addrs, "external-addrs", "", "--backend external without a file: the nodes' addresses, comma-separated (with --topology, --external-password, ...)")
	f.StringVar(&o.ExternalFlags.Containers, "external-containers", "", "the nodes' Docker containers, in --external-addrs order (enables kill and pause)")
	f.StringVar(&o.ExternalFlags.Password, "external-password", "", "the deployment's password (or $LOCKCHECK_EXTERNAL_PASSWORD; recorded as REDACTED)")
	for name := range redact.Flags {
		markSecret(f, name)
	}
	f.StringVar(&o.ExternalFlags.Toxiproxy, "external-toxiproxy", "", "a running toxiproxy server's API (http://127.0.0.1:8474), for link faults")
	f.StringVar(&o.ExternalFlags.Sentinels, "external-sentinels", "", "the Sentinels' addresses, comma-separated (--topology sentinel)")
	f.StringVar(&o.ExternalFlags.MasterName, "external-master", "", "the name the Sentinels monitor (--topology sentinel)")
	f.StringVar(&o.Topology, "topology", o.Topology, "deployment: single, redlock, sentinel or cluster (default: the lock's own)")
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "masters for --topology redlock (default 5)")
	f.StringVar(&o.Nemesis, "nemesis", o.Nemesis, "faults: none or a comma list of "+join(nemesis.Names()))
	f.DurationVar(&o.NemesisInterval, "nemesis-interval", o.NemesisInterval, "healthy time between faults (jittered ±25%)")
	f.DurationVar(&o.NemesisDuration, "nemesis-duration", o.NemesisDuration, "how long each fault lasts")
	f.StringVar(&o.NemesisTargets, "nemesis-targets", "", "what faults hit: one, minority, majority, all or primary, and/or named nodes and clients (n2,c1); default: each fault's own choice")
	f.BoolVar(&o.NemesisTrigger, "nemesis-trigger", false, "fire faults by the lock's own events (grant: a caller was just granted; unlock: an unlock or countDown begins; release: an unlock was acknowledged), aimed at the caller, its nodes or links: "+strings.Join(nemesis.TriggerNames(), ", "))
	f.DurationVar(&o.Quiet, "quiet", o.Quiet, "fault-free time at the end, after the final heal")
	f.DurationVar(&o.Time, "time", o.Time, "how long the workload runs")
	f.IntVar(&o.Clients, "clients", o.Clients, "concurrent clients, each its own Redisson instance (or worker process)")
	f.IntVar(&o.Threads, "threads", o.Threads, "application threads per client, each its own owner (c3/2), sharing the client instance (1-64)")
	f.IntVar(&o.Keys, "keys", o.Keys, "lock keys the clients spread over (default 1; for multi, --group + 1)")
	f.Var(durationRange{&o.Lease, &o.LeaseTo}, "lease", "lease time, or a range drawn per acquire (1s-10s); 0 lets the watchdog keep the lock")
	f.DurationVar(&o.Watchdog, "watchdog", o.Watchdog, "Redisson lockWatchdogTimeout (renewal every third of it)")
	f.Var(durationRange{&o.Wait, &o.WaitTo}, "wait", "tryLock wait time, or a range drawn per acquire (0-2s)")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "per-command timeout (Redisson's timeout)")
	f.StringVar(&o.Hold, "hold", o.Hold, "time inside the critical section, a range like 10ms-200ms")
	f.Float64Var(&o.Reentry, "reentry", o.Reentry, "chance of a nested re-entrant acquire inside a critical section")
	f.Int64Var(&o.Seed, "seed", o.Seed, "seed for the workload and the fault plan (default: random, printed)")
	f.StringVar(&o.Results, "results", o.Results, "directory of runs")
	f.StringVar(&o.Persistence, "persistence", o.Persistence, "node persistence: none, everysec or always (AOF)")
	f.StringVar(&o.Scripts, "scripts", o.Scripts, "directory of .lua files replacing the lock's scripts by name")
	f.DurationVar(&o.CheckTimeout, "check-timeout", o.CheckTimeout, "bound on the porcupine search (then: unknown)")
	f.StringVar(&o.Check, "check", o.Check, "extra checkers: liveness (slow wake-ups, starvation after the last heal)")
	f.Int64Var(&o.Permits, "permits", o.Permits, "semaphores: permits per key")
	f.Int64Var(&o.Count, "count", o.Count, "latch: countDowns per round (needs count+1 clients)")
	f.StringVar(&o.Readers, "readers", o.Readers, "rwlock: readers:writers share of acquisitions")
	f.Var(&o.OnLost, "on-lost", "what the application does when its library says a held lock is lost: continue, or stop (its critical section ends at the signal)")
	f.IntVar(&o.Group, "group", o.Group, "multi: keys per acquisition")
	f.Float64Var(&o.CrossThread, "cross-thread", o.CrossThread, "mutex: chance per acquisition of a stray release by a thread holding nothing or a read of the lock's state (held, isLocked), and per critical section of both reads of the held lock, where the library has them")
	f.Float64Var(&o.ForceUnlock, "force-unlock", o.ForceUnlock, "mutex: chance per critical section that a thread force-unlocks a random key (Redisson's forceUnlock: whoever holds it loses it, untold)")
	f.DurationVar(&o.Latency, "latency", o.Latency, "latency fault: delay each way")
	f.DurationVar(&o.Jitter, "jitter", o.Jitter, "latency fault: jitter")
	addWorkerFlags(f, &o)
	f.BoolVar(&dryRun, "dry-run", false, "check the flags and make the fault plan, start nothing")
	f.DurationVar(&o.ClockBump, "clock-bump", o.ClockBump, "client-clock fault: how far a clock jumps (ahead or behind)")
	return cmd
}

func join(s []string) string { return strings.Join(s, ", ") }

// givenFlags names the flags set on the command line.
func givenFlags(cmd *cobra.Command) map[string]bool {
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { given[f.Name] = true })
	return given
}
