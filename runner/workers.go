package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// WorkerOptions pick an out-of-process lock client (docs/protocol.md) instead of the Go one.
type WorkerOptions struct {
	Client  string   // --client NAME[@VERSION]: a registered worker, built on first use; NAME[@VERSION],go: beside the Go clients
	Cmd     string   // --client-cmd "CMD ARGS": any worker command
	Argv    []string // worker-check CMD ARGS...: the command as given, used instead of splitting Cmd (then its display)
	Options []string // --client-option k=v: the library's own settings
}

// ClientMeta names the worker of a run in its meta record, from its init_ok.
type ClientMeta = history.Client

func (w WorkerOptions) active() bool { return w.Client != "" || w.Cmd != "" }

// workerRun is a worker provider started for one run (Execute): its command, once built, and what its
// workers said.
type workerRun struct {
	*ClientProvider
	argv    []string
	mu      sync.Mutex
	info    *sdk.Message // the first init_ok
	began   time.Time    // when the workers were started
	ready   time.Duration
	clients []string           // every lockcheck client of the run, in order
	sched   *schedule.Schedule // a schedule run's: its fault steps bound how long a call may block
	// ctx is the run's: a signal during start-up ends the wait for the workers' init_ok.
	ctx context.Context
	// events holds the workers' events until the meta record is written (begun).
	events *worker.Events
	// abandon stops the workers started but not handed out to a client (idempotent).
	abandon func()
	// say hears a worker start that failed and is tried once more.
	say io.Writer
}

// planWorker checks the worker flags against the faults and resolves the worker, starting nothing: a
// registered worker by name and version, --client-cmd by its command, found on PATH. kind is the lock
// under test (nil: not known, as for the kind probe). It returns nil when the run uses no worker.
func (o Options) planWorker(kind *kinds.Kind, faults []string) (*ClientProvider, error) {
	w := o.Worker
	if !w.active() {
		if len(w.Options) > 0 {
			return nil, usagef("--client-option is for a worker: give --client or --client-cmd")
		}
		return nil, nil
	}
	if w.Client != "" && w.Cmd != "" {
		return nil, usagef("--client and --client-cmd both name a worker: give one")
	}
	if o.Backend == BackendDocker {
		return nil, usagef("--client runs workers as local processes: not with --backend docker")
	}
	if o.Scripts != "" {
		return nil, usagef("--scripts replaces the Go locks' scripts; a worker runs its library's own")
	}
	p := &ClientProvider{Source: WorkerClients, Name: "cmd", libOpts: map[string]string{}}
	if kind != nil {
		p.New = kind.New // a mixed run's Go side
	}
	for _, kv := range w.Options {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--client-option %q: want KEY=VALUE", kv)
		}
		p.libOpts[k] = v
	}
	clock := slices.Contains(faults, "client-clock")
	if w.Cmd != "" {
		argv, err := SplitCommand(w.Cmd)
		if len(w.Argv) > 0 {
			argv, err = w.Argv, nil
		}
		if err != nil || len(argv) == 0 {
			return nil, usagef("--client-cmd %q: want a command line", w.Cmd)
		}
		if _, err := exec.LookPath(argv[0]); err != nil { // before anything starts: the user's typo
			var ee *exec.Error
			if errors.As(err, &ee) {
				err = ee.Err
			}
			return nil, usagef("--client-cmd %q: %v", w.Cmd, err)
		}
		if ok, why := worker.Shiftable(argv); clock && !ok {
			return nil, usagef("--nemesis client-clock cannot shift this worker's clock: %s", why)
		}
		p.Command = argv
		return p, nil
	}
	name, mixed, err := SplitClient(w.Client)
	if err != nil {
		return nil, err
	}
	spec, version, err := worker.Lookup(name)
	if err != nil {
		return nil, UsageError{err}
	}
	if mixed {
		if err := o.planMixed(spec, kind); err != nil {
			return nil, err
		}
	}
	if clock && !spec.ClientClock {
		return nil, usagef("--nemesis client-clock cannot shift the clock of worker %s (%s: its runtime does not read time through libc)",
			spec.Name, spec.Language)
	}
	p.Name, p.Version, p.spec, p.Mixed = spec.Name, version, spec, mixed
	return p, nil
}

// startWorker builds a registered worker if it is not cached (writing the build's progress to stderr)
// and readies p for one run; ctx is the run's. A worker run by its command needs no build.
func (p *ClientProvider) startWorker(ctx context.Context, stderr io.Writer) (*workerRun, error) {
	r := &workerRun{ClientProvider: p, argv: p.Command, ctx: ctx, say: stderr}
	if p.Command != nil {
		return r, nil
	}
	var err error
	if r.argv, err = worker.Build(ctx, p.spec, p.Version, stderr); err != nil {
		if errors.As(err, new(worker.UnknownError)) || errors.As(err, new(worker.CacheError)) {
			return nil, UsageError{err}
		}
		return nil, err // a failed build is the harness's (255)
	}
	return r, nil
}

// factory starts one worker per lockcheck client, with init built from the topology: the client's own
// proxies, the map from announced addresses to them, and the run's options. fail hears of a worker that
// died or misbehaved. All the workers start at once on the first call (a JVM takes seconds to start);
// each call returns its client's. After a failure the workers not yet handed out are closed.
func (p *workerRun) factory(o Options, kind *kinds.Kind, topo *topology.Topology, dir, clockLib string,
	rec *history.Recorder, gates map[string]*locks.Gate, fail func(error)) func(locks.Env) (locks.Client, error) {
	type started struct {
		c   *worker.Client
		err error
	}
	workerGates := map[string]*locks.Gate{} // a mixed run starts workers for its worker clients only
	for c, g := range gates {
		p.clients = append(p.clients, c)
		if p.runsWorker(c) {
			workerGates[c] = g
		}
	}
	slices.SortFunc(p.clients, func(a, b string) int { return cmp.Compare(len(a), len(b))*2 + cmp.Compare(a, b) })
	var once sync.Once
	var mu sync.Mutex
	results := map[string]chan started{}
	readers := worker.NewReaders()
	p.events = worker.NewEvents(rec)
	try := func(client string) (*worker.Client, error) {
		// A failure before Start returns is Start's error (and may be tried again); only a started worker's
		// failure is the run's. One lock makes the hand-over race-free.
		var fmu sync.Mutex
		up, early := false, error(nil)
		onFail := func(err error) {
			fmu.Lock()
			defer fmu.Unlock()
			if !up {
				early = err
				return
			}
			fail(err)
		}
		c, err := worker.Start(worker.Config{Client: client, Argv: p.argv, Dir: dir, ClockLib: clockLib,
			Init: p.initFor(o, kind, topo, client), Rec: rec, Gate: gates[client], OnFail: onFail, Readers: readers, Ctx: p.ctx,
			Events: p.events, Slack: hungSlack(o, p.sched)})
		if err == nil {
			fmu.Lock()
			up = true
			if early != nil {
				fail(early)
			}
			fmu.Unlock()
		}
		return c, err
	}
	start := func(client string) (*worker.Client, error) {
		c, err := try(client)
		if err == nil || errors.As(err, new(worker.RefusedError)) || p.ctx.Err() != nil {
			return c, err // a refusal is the user's settings: the same again would be refused too
		}
		// Several runtimes starting at once (three JVMs) can miss one init: one more try, said in one line.
		if p.say != nil {
			fmt.Fprintf(p.say, "lockcheck: client %s: its worker failed to start (%v); starting it once more\n", client, err)
		}
		c, again := try(client)
		if again != nil {
			return nil, fmt.Errorf("%w (a second start failed too: %v; its stderr: %s)", err, again, filepath.Join(dir, "clients", client, "stderr.log"))
		}
		return c, nil
	}
	abandon := func() { // the run ends here: nobody will close the workers not handed out
		mu.Lock()
		rest := results
		results = nil
		mu.Unlock()
		for _, ch := range rest {
			if o := <-ch; o.c != nil {
				o.c.Close()
			}
		}
	}
	p.abandon = abandon // the run calls it too: a run that ends after its first client was made (a refusal, an error) stops the rest
	return func(e locks.Env) (locks.Client, error) {
		if !p.runsWorker(e.Client) {
			c, err := p.New(e)
			if err != nil {
				abandon()
			}
			return c, err
		}
		once.Do(func() {
			p.began = time.Now()
			mu.Lock()
			defer mu.Unlock()
			for c := range workerGates {
				ch := make(chan started, 1)
				results[c] = ch
				go func() {
					cl, err := start(c)
					ch <- started{cl, err}
				}()
			}
		})
		mu.Lock()
		ch := results[e.Client]
		delete(results, e.Client)
		mu.Unlock()
		if ch == nil {
			return nil, fmt.Errorf("client %s: no worker was started for it", e.Client)
		}
		r := <-ch
		if r.err != nil {
			abandon()
			var refused worker.RefusedError
			if errors.As(r.err, &refused) {
				return nil, UsageError{r.err}
			}
			return nil, r.err
		}
		p.mu.Lock()
		if p.info == nil {
			p.info = &r.c.Info
		}
		p.ready = time.Since(p.began)
		p.mu.Unlock()
		return r.c, nil
	}
}

// hungSlack is the fixed part of a worker's hung bound: worker.Slack, and with planned faults their
// duration too, since a library may block a call for as long as a partition or failover lasts (Redisson's
// resends under a failover) before its own timeouts count.
func hungSlack(o Options, sched *schedule.Schedule) time.Duration {
	if sched != nil { // its faults are its steps', each as long as its for:
		return worker.Slack + sched.LongestFault()
	}
	if o.Nemesis == "" || o.Nemesis == "none" {
		return worker.Slack
	}
	return worker.Slack + o.NemesisDuration
}

// initFor is client's init request: its own proxies, the map from announced addresses to them, and the
// run's options. A nil kind leaves lock out: the kind probe (ProbeKinds).
func (p *ClientProvider) initFor(o Options, kind *kinds.Kind, topo *topology.Topology, client string) sdk.Message {
	addrs := topo.Addrs(client)
	t := &sdk.Topology{Kind: o.Topology, NAT: topo.NAT(client)}
	for i, n := range topo.NodeNames() {
		if i < len(addrs) {
			t.Nodes = append(t.Nodes, sdk.Node{Name: n, Addr: addrs[i]})
		}
	}
	if topology.KindNamed(o.Topology).Sentinels > 0 {
		t.Sentinels, t.MasterName = topo.SentinelAddrs(), topo.MasterName()
	}
	init := sdk.Message{Client: client, Seed: o.Seed, Topology: t, Password: topo.Password,
		Options: &sdk.Options{LeaseMs: o.Lease.Milliseconds(), WatchdogMs: o.Watchdog.Milliseconds(),
			WaitMs: o.Wait.Milliseconds(), TimeoutMs: o.Timeout.Milliseconds()},
		LibraryOptions: p.libOpts}
	if kind != nil {
		init.Lock = &sdk.Lock{Kind: kind.Name, Family: kind.Family.Name}
		if kind.Family.Counted {
			init.Options.Permits = o.Permits
		}
	}
	return init
}

// Probed is what a worker said to the kind probe.
type Probed struct {
	Library, Version string
	Kinds            []string // as the worker listed them
	Lock             string   // the kind picked: the first of Kinds that lockcheck knows ("" for none)
}

// Text says which kind was picked and why, for the output.
func (p Probed) Text() string {
	return fmt.Sprintf("the worker (%s %s) drives %s: lock %s, the first kind it names that lockcheck knows (--lock picks another)",
		p.Library, p.Version, strings.Join(p.Kinds, ", "), p.Lock)
}

// ProbeKinds asks the worker o names which lock kinds it drives, for a run not given --lock: it starts one
// worker against a throwaway single Redis of its own, sends an init without lock (docs/protocol.md, "Kind
// probe") and reads init_ok's kinds, then stops both. A worker that answers the probe with an error, or
// names no kind lockcheck knows, is an error saying so (bad input).
func ProbeKinds(ctx context.Context, o Options, stderr io.Writer) (Probed, error) {
	kind, _ := kinds.Lookup(o.Lock) // nil for none: a mixed worker is refused then
	plan, err := o.planWorker(kind, nil)
	if err != nil || plan == nil {
		return Probed{}, err
	}
	p, err := plan.startWorker(ctx, stderr)
	if err != nil {
		return Probed{}, err
	}
	dir, err := os.MkdirTemp("", "lockcheck-probe-")
	if err != nil {
		return Probed{}, err
	}
	keep := false // a failed probe keeps the worker's stderr.log for the user
	defer func() {
		if !keep {
			_ = os.RemoveAll(dir) // made here, just above: nothing else is in it
		}
	}()
	topo, err := topology.Start(ctx, topology.Spec{Kind: topology.Single, Clients: []string{"c1"}, Dir: dir})
	if err != nil {
		if ctx.Err() != nil {
			return Probed{}, Interrupted{err}
		}
		return Probed{}, err
	}
	defer stopTopology(topo, stderr)
	o.Topology = topology.Single
	c, err := worker.Start(worker.Config{Client: "c1", Argv: p.argv, Dir: dir, Init: p.initFor(o, nil, topo, "c1"),
		Rec: history.NewRecorder(io.Discard, history.NewClock()), OnFail: func(error) {}, Readers: worker.NewReaders(), Ctx: ctx})
	if err != nil {
		if ctx.Err() != nil {
			return Probed{}, Interrupted{err}
		}
		keep = true
		return Probed{}, usagef("asked for its lock kinds (an init without lock): %v (its stderr: %s); name the kind with --lock",
			err, filepath.Join(dir, "clients", "c1", "stderr.log"))
	}
	info := c.Info
	c.Close()
	got := Probed{Library: info.Library, Version: info.Version, Kinds: info.Kinds}
	for _, k := range info.Kinds {
		if _, err := kinds.Lookup(k); err == nil {
			got.Lock = k
			break
		}
	}
	if got.Lock == "" {
		return got, usagef("the worker (%s %s) drives %s: none is a lock kind lockcheck knows (lockcheck locks lists them; "+
			"a library's own lock is kind mutex)", info.Library, info.Version, orNone(info.Kinds))
	}
	return got, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no kind"
	}
	return strings.Join(s, ", ")
}

// begun lets the workers' events into the history: its meta record is written.
func (p *workerRun) begun() {
	if p != nil && p.events != nil {
		p.events.Open()
	}
}

// describe names the worker in the meta record and its versions, and says how long the workers took.
func (p *workerRun) describe(m *Meta, stderr io.Writer) {
	if p == nil || p.info == nil {
		return
	}
	m.Client = &ClientMeta{Name: p.Name, Command: strings.Join(p.argv, " "), Library: p.info.Library,
		Version: p.info.Version, Runtime: p.info.Runtime, Kinds: p.info.Kinds, Caps: p.info.Caps, Broken: p.spec.Broken,
		StartupMs: max(p.ready.Milliseconds(), 1), LeaseGranularityMs: p.info.LeaseGranularityMs}
	m.Versions["client"] = fmt.Sprintf("%s %s", p.info.Library, p.info.Version)
	what := p.info.Library + " " + p.info.Version
	if p.info.Runtime != "" {
		what += ", " + p.info.Runtime
	}
	p.describeMixed(m, p.clients)
	if p.Mixed {
		what += "; " + strings.Join(m.Client.Go.Clients, ", ") + " are lockcheck's Go clients"
	}
	fmt.Fprintf(stderr, "lockcheck: workers (%s) answered init in %s\n", what, p.ready.Round(time.Millisecond))
	if g := time.Duration(p.info.LeaseGranularityMs) * time.Millisecond; g > 0 {
		fmt.Fprintf(stderr, "lockcheck: the worker's leases are multiples of %s (its init_ok's lease_granularity_ms): "+
			"every lease sent (acquire, extend) is the drawn one rounded to the nearest multiple, at least %s\n", g, g)
	}
}

// SplitCommand splits a command line on spaces, keeping quoted ('...' or "...") parts whole, as
// --client-cmd is split (no shell).
func SplitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
