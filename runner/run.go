package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockcheck/lockcheck/workers/sdk"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Meta is the first record of every history (history.RunMeta).
type Meta = history.RunMeta

func clientNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%d", i+1)
	}
	return out
}

// planned stands in for a replicated topology while the plan is made: planning needs only its shape.
type planned struct {
	shards int
	modes  []string
}

var errPlanning = errors.New("not started")

func (p planned) Shards() int            { return p.shards }
func (p planned) PromoteModes() []string { return p.modes }
func (planned) Primary(context.Context, int) (string, error) {
	return "", errPlanning
}
func (planned) Replicas(context.Context, int) ([]string, error)       { return nil, errPlanning }
func (planned) Promote(context.Context, int, string) (string, error)  { return "", errPlanning }
func (planned) StallReplication(string, bool) error                   { return errPlanning }
func (planned) IsolatePeers(context.Context, string, bool) error      { return errPlanning }
func (planned) Restore(context.Context) error                         { return errPlanning }
func (planned) SetReplicaPriority(context.Context, string, int) error { return errPlanning }

// Run prepares one test, performs it and judges it. The returned results are nil only when the run could
// not start.
func Run(ctx context.Context, o Options, stderr io.Writer) (*report.Results, error) {
	t, err := Prepare(o)
	if err != nil {
		return nil, err
	}
	t.WriteNotes(stderr)
	return t.Execute(ctx, stderr)
}

// Execute performs the prepared test and judges it: it builds its worker if need be, starts the deployment
// and the clients, runs the workload and the nemesis, heals, and checks the history. The returned results
// are nil only when the run could not start.
func (t *Test) Execute(ctx context.Context, stderr io.Writer) (*report.Results, error) {
	var wk *workerRun
	if t.Clients.Source == WorkerClients {
		var err error
		if wk, err = t.Clients.startWorker(ctx, stderr); err != nil {
			return nil, err // a worker that cannot be had, before anything starts
		}
		wk.sched = t.Schedule
	}
	o := t.Options
	srv, err := t.Server.Get(ctx, worker.Cache, stderr)
	if err == nil {
		err = server.Probe(ctx, srv, server.Needs{Sentinel: topology.KindNamed(o.Topology).Sentinels > 0,
			Cluster: topology.KindNamed(o.Topology).Slots, Clock: nemesis.NeedsNodeClock(t.Faults)})
	}
	if err != nil {
		return nil, serverError(err) // a server that cannot be had or cannot do the run's faults, before anything starts
	}
	t.Spec.Server = srv
	if o.Backend == BackendDocker && !srv.Host() { // the containers run the chosen binary, in an image of its own
		cache, err := worker.Cache()
		if err == nil {
			o.DockerImage, err = docker.EnsureServerImage(ctx, srv.Path, srv.Name, srv.Version, filepath.Join(cache, "images"), stderr)
		}
		if err != nil {
			return nil, serverError(err)
		}
		t.Options.DockerImage = o.DockerImage
	}
	fds, err := checkDescriptors(o, t.External)
	if err != nil {
		return nil, err
	}
	t.fds = fds
	nem := o.Nemesis
	if t.Schedule != nil { // its faults are its steps: the directory says where they came from
		nem = "schedule"
	}
	dir, err := newRunDir(o.Results, o.Lock, nem)
	if err != nil {
		return nil, err
	}
	clock := history.NewClock()
	rec, err := history.Create(filepath.Join(dir, "history.jsonl"), clock)
	if err != nil {
		return nil, failedStart(dir, err)
	}
	if t.Schedule != nil && t.Schedule.Text != nil { // the file played, beside its history: a report carries it, its hash checks it
		if err := os.WriteFile(filepath.Join(dir, "schedule.yaml"), t.Schedule.Text, 0o644); err != nil {
			return nil, failedStart(dir, err)
		}
	}
	plan, err := json.Marshal(t.Plan)
	if err != nil {
		return nil, failedStart(dir, err)
	}
	meta := Meta{Lock: o.Lock, Topology: o.Topology, Nemesis: t.Faults, Seed: o.Seed, Options: t.describe(),
		Plan: plan, Versions: Versions(), Checks: history.Checks(t.Checks), Command: o.Command}
	if t.Scripts != nil {
		meta.ScriptSet = t.Scripts.Set
	}
	meta.Spec = t.Kind.Source
	if o.Backend == BackendProcess || !srv.Host() { // else a container runs its image's server, a deployment its own
		serverVersions(meta.Versions, srv)
	}

	active.Store(rec)
	runErr := execute(ctx, t, wk, dir, rec, &meta, stderr)
	runErr = rec.Redactor().Err(runErr) // set in execute once the password is known: a worker's text may echo it
	if meta.StartupMs != 0 {
		writeEnd(ctx, rec, runErr)
	}
	active.Store(nil)
	if cerr := rec.Close(); cerr != nil && runErr == nil {
		runErr = fmt.Errorf("history: %w", cerr)
	}
	if runErr != nil && meta.StartupMs == 0 { // nothing ran: there is nothing to judge
		if ctx.Err() != nil { // whatever the start-up said, it was stopped
			_ = os.RemoveAll(dir)
			return nil, Interrupted{runErr}
		}
		return nil, failedStart(dir, runErr)
	}
	// A stopped run's verdict is at best unknown, and a Ctrl-C must end it at once: its porcupine search is
	// bounded (64 clients cut mid-wait left 64 open calls, which kept it searching for the full minute);
	// `lockcheck check` of the run searches as long as it is told.
	timeout := o.CheckTimeout
	if ctx.Err() != nil && timeout > interruptedCheck {
		timeout = interruptedCheck
	}
	res, aerr := analyzeUnlessStopped(ctx, func() (*report.Results, error) {
		return analyze(context.Background(), filepath.Join(dir, "history.jsonl"), timeout, t.Kind,
			"results.json", "history.html", filepath.Join(dir, "proof.jsonl"))
	})
	if errors.Is(aerr, ErrCheckInterrupted) { // a signal during the check: the history is whole, checkable later
		return nil, fmt.Errorf("%w; the run's history is kept (lockcheck check %s judges it)", aerr, dir)
	}
	aerr = ownHistory(aerr)
	if runErr != nil { // the run's own error comes first (a full disk), whatever became of its results
		if aerr != nil {
			runErr = fmt.Errorf("%w; and then: %v", runErr, aerr)
		}
		return res, runErr
	}
	if aerr != nil {
		return nil, aerr
	}
	return res, noteRanOut(rec, res, dir) // runErr is nil here: a run's own error returned above
}

// analyzeUnlessStopped runs check, and returns ErrCheckInterrupted as soon as a signal comes during it (a
// checker's cost on a huge history must not hold Ctrl-C or SIGTERM; the process is about to exit, so the
// check is left). A run already stopped before its check gets its bounded check (interruptedCheck): a second
// signal exits at once.
func analyzeUnlessStopped(ctx context.Context, check func() (*report.Results, error)) (*report.Results, error) {
	if ctx.Err() != nil {
		return check()
	}
	type outcome struct {
		res *report.Results
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := check()
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return nil, ErrCheckInterrupted
	}
}

// ownHistory is analyze's error on the history the run wrote itself: a refusal of it is lockcheck's fault
// (exit 255), never the user's input (254).
func ownHistory(err error) error {
	if !IsUsage(err) {
		return err
	}
	return fmt.Errorf("lockcheck refused the history it wrote itself (a lockcheck bug, not bad input): %v", err)
}

// interruptedCheck bounds the porcupine search of a run stopped by a signal.
const interruptedCheck = 5 * time.Second

// execute brings the topology up, runs the workload and the nemesis, heals, and tears everything down. wk
// is the test's worker, ready to start (nil: the clients are in-process).
func execute(ctx context.Context, t *Test, wk *workerRun, dir string, rec *history.Recorder, meta *Meta, stderr io.Writer) error {
	o, plan, spec, ext := t.Options, t.Plan, t.Spec, t.External
	spec.Dir = dir
	clock := nemesis.NeedsNodeClock(t.Faults)
	if clock && o.Backend == BackendProcess {
		lib, err := clockshift.Library(filepath.Join(dir, "clockshift"))
		if err != nil {
			return err
		}
		spec.ClockLib = lib
	}
	if o.Backend == BackendDocker {
		if clock {
			spec.ClockLib = docker.ClockLib // the image's own copy
		}
		rt, err := docker.Connect(ctx, o.DockerImage, runID())
		if err != nil {
			return err
		}
		defer closeRuntime(rt, stderr)
		spec.Runtime = rt
	}
	var topo *topology.Topology
	var err error
	var wr *wireRecording
	if wk != nil && ext == nil { // a worker's lock commands, from its links (runner/wire.go)
		if wr, err = newWireRecording(wk.ClientProvider, rec, spec.Kind); err != nil {
			return err
		}
		spec.Front = wr.front
		defer wr.finish(rec, stderr) // after the clients and the topology stopped
	}
	if ext != nil {
		topo, err = topology.Attach(ctx, *ext, spec.Clients, runID())
	} else {
		topo, err = topology.Start(ctx, spec)
	}
	if err != nil {
		return err
	}
	defer stopTopology(topo, stderr)
	// Before any client or worker can write a record or a line: a worker's texts may echo the password.
	red := redact.New(topo.Password)
	rec.Redact(red)
	stderr = red.Writer(stderr)
	if ext != nil {
		patterns := workloadPatterns(t.Kind.KeyCount(t.Params), t.Kind.Family == kinds.Latch)
		if err := checkLeftovers(ctx, topo, patterns); err != nil {
			return err
		}
		defer clearLeftovers(topo, patterns, stderr) // after the clients closed, before the topology is let go
	}
	if err := compileScripts(ctx, topo, t.Scripts); err != nil {
		return err // before the meta record: nothing ran
	}
	if t.Kind.Prepare != nil { // before the meta record: a failure leaves nothing to judge
		if err := t.Kind.Prepare(ctx, topo.Addrs(spec.Clients[0])[0], topo.Password); err != nil {
			return UsageError{err}
		}
	}
	fmt.Fprintf(stderr, "lockcheck: %s on %s (%s backend, %s, %d node(s), %d clients, started in %s, %s), nemesis %s, seed %d, %s\n",
		o.Lock, o.Topology, o.Backend, serverText(spec.Server, o), len(topo.Nodes), o.Clients, topo.Startup.Round(time.Millisecond), t.fds,
		nemesisText(t), o.Seed, dir)

	gates := map[string]*locks.Gate{}
	for _, c := range spec.Clients {
		gates[c] = locks.NewGate()
	}
	env := FaultEnv(topo, spec.Clients, t.FaultParams)
	env.Targets = t.Targets
	observeTriggers(plan, env, rec)
	faulty := map[string]nemesis.Client{} // clients that pause and shift themselves (workers)
	env.Client = func(c string) nemesis.Client {
		if f := faulty[c]; f != nil {
			return f
		}
		if g := gates[c]; g != nil {
			return g
		}
		return nil
	}

	newClient := t.Clients.New
	failed := make(chan error, 1) // the first worker that died or misbehaved ends the run
	if wk != nil {
		lib := spec.ClockLib
		if slices.Contains(t.Faults, "client-clock") && lib == "" {
			if lib, err = clockshift.Library(filepath.Join(dir, "clockshift")); err != nil {
				return err
			}
		}
		newClient = wk.factory(o, t.Kind, topo, dir, lib, rec, gates, func(err error) {
			select {
			case failed <- err:
			default:
			}
		})
	}
	var mcs []locks.Client
	defer func() {
		closeClients(mcs, stderr)
		if wk != nil && wk.abandon != nil { // workers started for clients the run never made
			wk.abandon()
		}
	}()
	rcfg := locks.DefaultRedissonConfig()
	rcfg.WatchdogTimeout, rcfg.Timeout = o.Watchdog, o.Timeout
	for _, c := range spec.Clients {
		var sentinel *locks.SentinelConn
		var cluster *locks.ClusterConn
		switch k := topology.KindNamed(o.Topology); {
		case k.Sentinels > 0:
			sentinel = &locks.SentinelConn{Addrs: topo.SentinelAddrs(), MasterName: topo.MasterName(), Dialer: topo.Dialer(c)}
		case k.Slots:
			cluster = &locks.ClusterConn{Addrs: topo.ClusterAddrs(), Dialer: topo.Dialer(c)}
		}
		mc, err := newClient(locks.Env{Client: c, Addrs: topo.Addrs(c), Password: topo.Password, Scripts: t.Scripts,
			Redisson: rcfg, Lease: o.Lease, Rec: rec, Gate: gates[c], Sentinel: sentinel, Cluster: cluster})
		if err != nil {
			return err // nothing ran yet: the meta record is not written
		}
		mcs = append(mcs, mc)
		if err := threadsFit(o, mc); err != nil {
			return err
		}
		if f := t.Kind.Family; !f.Accepts(mc) { // a worker or spec of the wrong family: refuse, never panic
			return fmt.Errorf("lock %s: client %s (%T) does not implement the %s family's %s", o.Lock, c, mc, f.Name, f.Client)
		}
		if f, ok := mc.(nemesis.Client); ok {
			faulty[c] = f
		}
	}
	// The meta record comes once the clients are up: a worker's library and version are known from its
	// init_ok, and a client that cannot start leaves nothing to judge.
	wk.describe(meta, stderr)
	meta.StartupMs = max(topo.Startup.Milliseconds(), 1)
	meta.ReadyMs = max(rec.Clock.Since().Milliseconds(), 1)
	data, _ := json.Marshal(meta)
	rec.Clock.Restart() // the run's clock starts with the workload: nothing is recorded before the meta record
	rec.Write(history.Record{Type: history.Meta, Time: rec.Clock.Now(), Data: data})
	if err := rec.Err(); err != nil { // a history without its meta record is nothing to judge
		meta.StartupMs = 0
		return fmt.Errorf("history: %w", err)
	}
	if wr != nil {
		wr.open()
	}
	wk.begun()
	pointLatest(dir)
	defer watchNodes(topo, rec, stderr)()

	status := report.StartStatus(stderr, rec)
	defer status.Stop()
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	nctx, ncancel := context.WithDeadline(ctx, start.Add(plan.HealAt))
	defer ncancel()
	played := make(chan struct{})  // a schedule played once has ended (and its quiet period)
	stepped := make(chan struct{}) // its steps have
	if s := t.Schedule; s != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Play(ctx, stop, mcs, rec, env, schedule.Defaults{Lease: o.Lease, Wait: o.Wait, Permits: o.Permits,
				Expirable: t.Kind.Family == kinds.Expirable})
			close(stepped)
			finalHeal(env, rec)
			if !s.Loop {
				quiet, cancel := workloads.UntilStop(ctx, stop)
				workloads.Sleep(quiet, o.Quiet)
				cancel()
				close(played)
			}
		}()
	} else {
		wg.Add(2)
		go func() { defer wg.Done(); t.Workload(ctx, stop, mcs, rec) }()
		go func() {
			defer wg.Done()
			plan.Run(nctx, env, rec, start)
			finalHeal(env, rec)
		}()
	}
	timer := time.NewTimer(o.Time)
	var stopped error
	select {
	case <-played:
	case <-timer.C:
		select {
		case <-stepped:
		default:
			if t.Schedule == nil || t.Schedule.Loop {
				break
			}
			fmt.Fprintf(stderr, "lockcheck: --time %s ended the schedule before its last step: raise --time\n", o.Time)
		}
	case <-ctx.Done():
	case stopped = <-failed:
	case <-rec.Failed(): // nothing more can be recorded: stop now rather than run on blind
		stopped = fmt.Errorf("history: %w (the run stopped there; the history on disk is a checkable prefix)", rec.Err())
		fmt.Fprintln(stderr, "lockcheck:", stopped)
	}
	timer.Stop()
	close(stop)
	ncancel()
	wg.Wait()
	if stopped == nil && ctx.Err() == nil {
		select { // a worker that hung (or died) while the workload waited for its last calls
		case stopped = <-failed:
		default:
		}
	}
	return stopped
}

// FaultEnv is what the nemesis acts on in a running topology: its links, nodes and replication.
func FaultEnv(topo *topology.Topology, clients []string, params nemesis.Params) *nemesis.Env {
	env := &nemesis.Env{Topology: topo.Kind, Nodes: topo.NodeNames(), Clients: clients, Params: params,
		Link: func(c, n string) nemesis.Link {
			if l := topo.Fault(c, n); l != nil {
				return l
			}
			return nil
		},
		Node: func(n string) nemesis.Process {
			if nd := topo.Node(n); nd != nil {
				return nd
			}
			return nil
		}}
	if topo.Shards() > 0 {
		env.Replication = topo
	}
	return env
}

// finalHeal undoes every fault, records it, and starts the quiet period.
func finalHeal(env *nemesis.Env, rec *history.Recorder) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fixed, err := nemesis.HealAll(ctx, env)
	detail := "all links healed, all nodes running"
	if len(fixed) > 0 {
		detail += "; " + strings.Join(fixed, ", ")
	}
	if err != nil {
		detail += "; heal failed: " + err.Error()
	}
	rec.Fault("heal", "final", nil, detail)
}

// runID names one run's containers: short, unique, valid in a container name.
func runID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRunDir makes results/<time>-<lock>-<nemesis>/; results/latest points at it once the run starts.
func newRunDir(root, lock, nem string) (string, error) {
	name := fmt.Sprintf("%s-%s-%s", time.Now().Format("20060102T150405.000"), lock, strings.ReplaceAll(nem, ",", "+"))
	return makeRunDir(root, name)
}

// stamp is the program's version and commit (Stamp): package main has them from the build's -ldflags,
// which cannot reach this package.
var stamp struct{ version, commit string }

// Stamp records the version and commit `lockcheck version` prints, for every run's meta record and
// results.json to say.
func Stamp(version, commit string) { stamp.version, stamp.commit = version, commit }

// Versions names what produced a run.
func Versions() map[string]string {
	v := map[string]string{"go": runtime.Version(), "lockcheck": "dev"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v["lockcheck"] = s.Value
			}
		}

		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/anishathalye/porcupine", "github.com/redis/go-redis/v9", "github.com/Shopify/toxiproxy/v2":
				v[filepath.Base(strings.TrimSuffix(strings.TrimSuffix(d.Path, "/v9"), "/v2"))] = d.Version
			}
		}
	}
	if stamp.version != "" { // what `lockcheck version` says: the build's stamp, its commit beside it
		v["lockcheck"] = stamp.version
		if stamp.commit != "" && stamp.commit != "unknown" {
			v["lockcheck-commit"] = stamp.commit
		}
	}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		v["redis-server"] = strings.TrimSpace(string(out))
	}
	return v
}

// serverVersions names the server the nodes ran in a run's versions: the host's redis-server line stays
// only when it is the one that ran.
func serverVersions(v map[string]string, srv node.Server) {
	if !srv.Host() {
		delete(v, "redis-server")
	}
	v["server"] = fmt.Sprintf("%s %s (%s)", srv.Name, srv.Version, srv.From)
}

// serverText names the server on the start line.
func serverText(srv node.Server, o Options) string {
	switch o.Backend {
	case BackendExternal:
		return "the deployment's server"
	case BackendDocker:
		if !srv.Host() {
			return fmt.Sprintf("server %s %s in image %s", srv.Name, srv.Version, o.DockerImage)
		}
		return "image " + o.DockerImage
	}
	return fmt.Sprintf("server %s %s", srv.Name, srv.Version)
}

// serverError is Get's or Probe's error: a server the user chose that will not do is bad input (254).
func serverError(err error) error {
	if errors.As(err, new(server.Error)) || errors.As(err, new(worker.CacheError)) {
		return UsageError{err}
	}
	return err
}

// threadsFit refuses --threads above 1 for a worker that said in init_ok it runs one thread per client
// instance (caps single-thread): its library cannot have two threads share one instance.
func threadsFit(o Options, c locks.Client) error {
	w, ok := c.(interface{ Caps(name string) bool })
	if o.Threads > 1 && ok && w.Caps(sdk.CapSingleThread) {
		return usagef("--threads %d: the worker runs one thread per client instance (it announces %s): use --threads 1",
			o.Threads, sdk.CapSingleThread)
	}
	return nil
}

// clipAbout is a schedule's about line as a run's notes say it: one line, at most 200 characters.
func clipAbout(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// nemesisText is the start line's nemesis: the flag's, or for a schedule run the faults its steps start
// (its --nemesis is refused, so the flag always read "none" there).
func nemesisText(t *Test) string {
	if t.Schedule == nil {
		return t.Options.Nemesis
	}
	if len(t.Faults) > 0 { // Prepare's: the faults the steps use
		return strings.Join(t.Faults, ",") + " (the schedule's steps)"
	}
	return "none (the schedule has no fault step)"
}
