package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/runflag"
	"github.com/lockcheck/lockcheck/workloads"
	"github.com/spf13/pflag"
)

// Flags defines the run's flags on f, bound to o with o's values as defaults: the one place that knows
// each flag's name and how its value is read (lockcheck run's command line, and a control's own flags).
func (o *Options) Flags(f *pflag.FlagSet) {
	f.StringVar(&o.Lock, "lock", o.Lock, "lock to test: "+strings.Join(kinds.KindNames(), ", "))
	f.StringVar(&o.Backend, "backend", o.Backend, "where the nodes run: process (child processes), docker (containers, testcontainers-go) or external (a deployment you started: --external)")
	f.StringVar(&o.DockerImage, "docker-image", o.DockerImage, "the Redis image of --backend docker (lockcheck images builds the default; with --server or --server-bin an image of that binary is built instead)")
	f.StringVar(&o.Server, "server", o.Server, "the server the nodes run: redis (the host's redis-server, the default) or NAME@VERSION fetched into the cache: "+strings.Join(server.Names(), ", "))
	f.StringVar(&o.ServerBin, "server-bin", o.ServerBin, "the nodes run this Redis-compatible server binary (its own Sentinel and cluster mode)")
	f.StringVar(&o.External, "external", o.External, "YAML file describing the deployment of --backend external")
	f.StringVar(&o.ExternalFlags.Addrs, "external-addrs", o.ExternalFlags.Addrs, "--backend external without a file: the nodes' addresses, comma-separated (with --topology, --external-password, ...)")
	f.StringVar(&o.ExternalFlags.Containers, "external-containers", o.ExternalFlags.Containers, "the nodes' Docker containers, in --external-addrs order (enables kill and pause)")
	f.StringVar(&o.ExternalFlags.Password, "external-password", o.ExternalFlags.Password, "the deployment's password (or $LOCKCHECK_EXTERNAL_PASSWORD; recorded as REDACTED)")
	f.StringVar(&o.ExternalFlags.Toxiproxy, "external-toxiproxy", o.ExternalFlags.Toxiproxy, "a running toxiproxy server's API (http://127.0.0.1:8474), for link faults")
	f.StringVar(&o.ExternalFlags.Sentinels, "external-sentinels", o.ExternalFlags.Sentinels, "the Sentinels' addresses, comma-separated (--topology sentinel)")
	f.StringVar(&o.ExternalFlags.MasterName, "external-master", o.ExternalFlags.MasterName, "the name the Sentinels monitor (--topology sentinel)")
	f.StringVar(&o.Topology, "topology", o.Topology, "deployment: single, redlock, sentinel or cluster (default: the lock's own)")
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "masters for --topology redlock (default 5)")
	f.StringVar(&o.Nemesis, "nemesis", o.Nemesis, "faults: none or a comma list of "+strings.Join(nemesis.Names(), ", "))
	f.DurationVar(&o.NemesisInterval, "nemesis-interval", o.NemesisInterval, "healthy time between faults (jittered ±25%)")
	f.DurationVar(&o.NemesisDuration, "nemesis-duration", o.NemesisDuration, "how long each fault lasts")
	f.StringVar(&o.NemesisTargets, "nemesis-targets", o.NemesisTargets, "what faults hit: one, minority, majority, all or primary, and/or named nodes and clients (n2,c1); default: each fault's own choice")
	f.BoolVar(&o.NemesisTrigger, "nemesis-trigger", o.NemesisTrigger, "fire faults by the lock's own events (grant: a caller was just granted; unlock: an unlock or countDown begins; release: an unlock was acknowledged), aimed at the caller, its nodes or links: "+strings.Join(nemesis.TriggerNames(), ", "))
	f.DurationVar(&o.Quiet, "quiet", o.Quiet, "fault-free time at the end, after the final heal")
	f.DurationVar(&o.Time, "time", o.Time, "how long the workload runs")
	f.IntVar(&o.Clients, "clients", o.Clients, "concurrent clients, each its own Redisson instance (or worker process)")
	f.IntVar(&o.Threads, "threads", o.Threads, "application threads per client, each its own owner (c3/2), sharing the client instance (1-64)")
	f.IntVar(&o.Keys, "keys", o.Keys, "lock keys the clients spread over (default 1; for multi, --group + 1)")
	f.Var(DurationRange{&o.Lease, &o.LeaseTo}, "lease", "lease time, or a range drawn per acquire (1s-10s); 0 lets the watchdog keep the lock")
	f.DurationVar(&o.Watchdog, "watchdog", o.Watchdog, "Redisson lockWatchdogTimeout (renewal every third of it)")
	f.Var(DurationRange{&o.Wait, &o.WaitTo}, "wait", "tryLock wait time, or a range drawn per acquire (0-2s)")
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
	f.StringVar(&o.Schedule, "schedule", o.Schedule, "play this file's steps (clients, leases, holds, faults by time or event; docs/schedules.md) instead of the random workload")
	f.DurationVar(&o.Latency, "latency", o.Latency, "latency fault: delay each way")
	f.DurationVar(&o.Jitter, "jitter", o.Jitter, "latency fault: jitter")
	f.DurationVar(&o.ClockBump, "clock-bump", o.ClockBump, "client-clock fault: how far a clock jumps (ahead or behind)")
}

// setFlag sets one run flag (name without "--") as the command line would read it.
func (o *Options) setFlag(name, value string) error {
	f := pflag.NewFlagSet("control", pflag.ContinueOnError)
	o.Flags(f) // binding writes o's own values back: only the flag set below changes
	if f.Lookup(name) == nil {
		return fmt.Errorf("--%s is not a run flag", name)
	}
	if err := f.Set(name, value); err != nil {
		return fmt.Errorf("invalid argument %q for \"--%s\" flag: %v", value, name, err)
	}
	return nil
}

// DurationRange is a duration flag that also takes a range, "1s-10s", drawn per acquire: it sets the
// range's ends, lo and hi (hi 0 for a single value, so options that take one value read lo as before).
type DurationRange struct{ Lo, Hi *time.Duration }

func (r DurationRange) String() string { return workloads.Span(*r.Lo, *r.Hi).Text() }

func (r DurationRange) Set(s string) (err error) {
	*r.Lo, *r.Hi, err = runflag.ParseDurationRange(s)
	return err
}

func (r DurationRange) Type() string { return "duration" }
