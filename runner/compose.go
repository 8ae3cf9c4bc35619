package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/runflag"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
	"github.com/lockcheck/lockcheck/workloads/schedule"
	"github.com/spf13/pflag"
)

// This file is the one place where a run's options become its Test: the flags as bound (Options), a
// negative control's or a worker's own run flags, and a schedule's lock, clients, threads and keys are
// applied, every value is checked once, and each part of the test is made from the checked values. Each
// stage is a small function over one composer; Prepare runs them in order, and the first error (always
// bad input) ends it. A value's form and a duration's range are runflag's, shared with a spec's control
// flags and shrink.

// composer is one test being composed: the options as they become the test's, and what each stage made.
type composer struct {
	o       Options
	notes   []string
	sched   *schedule.Schedule
	kind    *kinds.Kind
	src     ClientSource
	kerr    error // a lock that does not resolve: said once the flags are checked
	hold    workloads.Range
	params  kinds.Params
	ext     *topology.External
	srv     server.Choice
	spec    topology.Spec
	names   *nemesis.Env // the plan's view of the deployment: names only, nothing started
	faults  []string
	plan    nemesis.Plan
	scripts *locks.Scripts
	load    kinds.Workload
	checks  kinds.Checks
	clients ClientProvider
}

// stages are Prepare's, in order: each reads what the ones before it settled.
var stages = []struct {
	name string
	run  func(*composer) error
}{
	{"given values", (*composer).givenValues},
	{"worker control flags", (*composer).workerControl},
	{"schedule", (*composer).loadSchedule},
	{"lock kind", (*composer).lockKind},
	{"control run", (*composer).controlRun},
	{"bounds", (*composer).validate},
	{"deployment", (*composer).deployment},
	{"server", (*composer).server},
	{"plan", (*composer).faultPlan},
	{"scripts", (*composer).lockScripts},
	{"workload", (*composer).workload},
	{"checks", (*composer).askChecks},
	{"clients", (*composer).clientProvider},
}

// Prepare composes the test the options describe, starting nothing and writing nothing: it resolves the
// lock (a registered kind, or a spec file's), its clients (the kind's Go clients, the spec's, or a worker's),
// a negative control's run flags, the deployment, the fault plan and the checks. Every error is a usage
// error.
func Prepare(o Options) (*Test, error) {
	c := &composer{o: o}
	for _, s := range stages {
		if err := s.run(c); err != nil {
			return nil, err
		}
	}
	return &Test{Options: c.o, Kind: c.kind, Spec: c.spec, External: c.ext, Clients: c.clients, Scripts: c.scripts,
		Workload: c.load, Params: c.params, Schedule: c.sched, Faults: c.faults, Plan: c.plan, Targets: c.names.Targets,
		FaultParams: c.names.Params,
		Checks:      c.checks, Notes: c.notes, Server: c.srv}, nil
}

func (c *composer) note(n string) {
	if n != "" {
		c.notes = append(c.notes, n)
	}
}

func (c *composer) given(name string) bool { return c.o.Given != nil && c.o.Given[name] }

// faultFree is a run with no --nemesis: a control's flags apply only to one.
func (c *composer) faultFree() bool { return c.o.Nemesis == "none" || c.o.Nemesis == "" }

// givenValues refuses a value given on the command line that the options cannot tell from their unset
// default: --keys 0 and --nodes 0 mean "the lock's own" when not given.
func (c *composer) givenValues() error {
	if c.given("keys") && c.o.Keys < 1 {
		return usagef("--keys must be at least 1, got %d", c.o.Keys)
	}
	if c.given("nodes") && c.o.Nodes < 1 {
		return usagef("--nodes must be at least 1, got %d", c.o.Nodes)
	}
	return nil
}

// workerControl gives a registered worker's run its lock when the command line names none and, for a
// fault-free run, the worker's own control flags (Spec.Flags: trusted code, so a control may also set the
// nemesis flags that show its flaw) wherever the command line gave none.
func (c *composer) workerControl() error {
	o := &c.o
	if o.Given == nil || o.Worker.Client == "" {
		return nil
	}
	name, _, err := SplitClient(o.Worker.Client) // NAME[@VERSION],go: the worker's defaults too
	if err != nil {
		return err
	}
	s, _, err := worker.Lookup(name)
	if err != nil {
		return UsageError{err}
	}
	if !c.given("lock") && !c.given("lock-spec") && s.Lock != "" {
		o.Lock = s.Lock
	}
	if !c.faultFree() || o.Schedule != "" { // a schedule states its own steps
		return nil
	}
	applied, err := c.applyControl(s.Flags)
	if err != nil {
		return fmt.Errorf("worker %s: %v", s.Name, err)
	}
	if s.Broken != "" {
		c.note(fmt.Sprintf("worker %s is a negative control: it %s; it must be flagged%s", s.Name, s.Broken, applied))
	}
	return nil
}

// loadSchedule reads --schedule before the lock is resolved: the file's lock, and the clients, threads and
// keys its steps name, stand wherever the command line gave none (a worker's --client brings its own lock).
// Faults go in the file: a --nemesis beside it is refused.
func (c *composer) loadSchedule() error {
	o := &c.o
	if o.Schedule == "" {
		return nil
	}
	s, err := schedule.Load(o.Schedule)
	if err != nil {
		return UsageError{err}
	}
	if !c.faultFree() || o.NemesisTrigger || o.NemesisTargets != "" {
		return usagef("--schedule %s: its faults are steps of the file (fault: NAME, targets, for), not --nemesis flags", o.Schedule)
	}
	if s.Lock != "" && o.Given != nil && !c.given("lock") && !c.given("lock-spec") && !o.Worker.active() {
		o.Lock = s.Lock
	}
	for _, f := range []struct {
		name string
		v    *int
		need int
	}{{"clients", &o.Clients, s.Clients()}, {"threads", &o.Threads, s.Threads()}, {"keys", &o.Keys, s.Keys()}} {
		switch {
		case !c.given(f.name):
			*f.v = f.need
		case *f.v < f.need:
			return usagef("--schedule %s names %d %s: --%s %d is too few", o.Schedule, f.need, f.name, f.name, *f.v)
		}
	}
	c.sched = s
	return nil
}

// lockKind resolves the lock under test: the spec file's own kind (not registered: it is this test's), or a
// registered one; and where its clients come from when no worker drives it. A spec that does not load is the
// first thing said; an unknown --lock waits until the flags are checked.
func (c *composer) lockKind() error {
	if c.o.LockSpec == "" {
		c.src = GoClients
		c.kind, c.kerr = kinds.Lookup(c.o.Lock)
		return nil
	}
	c.src = SpecClients
	s, err := lockspec.Load(c.o.LockSpec)
	if err != nil {
		return UsageError{err}
	}
	k := s.Kind()
	c.kind, c.o.Lock = &k, k.Name
	// A watchdog that renews less often than its lease lasts lets every hold run out between renewals: no
	// lock to test (explore's watchdog mutator drew 600 ms against a spec renewing every second).
	if s.WatchdogEvery > 0 && c.o.Watchdog > 0 && c.o.Watchdog <= s.WatchdogEvery {
		return UsageError{fmt.Errorf("--watchdog %s: the lock spec %s renews every %s, so a hold's lease runs out between renewals; give --watchdog longer than %s",
			c.o.Watchdog, s.Name, s.WatchdogEvery, s.WatchdogEvery)}
	}
	return nil
}

// controlRun fills in a negative control's own run flags (Kind.Flags) where the user gave none, and says
// so: these are the fault-free runs on which the control must be flagged. It does so only for options from
// a command line (Given), a fault-free run, and the lock's own clients (a worker's control brings its own
// flags). Only the workload flags of lockspec.ControlFlags are applied: a spec's control comes from a file,
// and is checked against the same list and ranges when it is read; the built-in controls are held to it here.
func (c *composer) controlRun() error {
	o, k := &c.o, c.kind
	if c.kerr != nil || o.Given == nil || o.Worker.active() || !c.faultFree() || k.Broken == "" || o.Schedule != "" {
		return nil
	}
	if err := lockspec.CheckControlFlags(k.Flags); err != nil {
		return usagef("negative control %s: %v", k.Name, err)
	}
	applied, err := c.applyControl(k.Flags)
	if err != nil {
		return usagef("negative control %s: %v", k.Name, err)
	}
	c.note(fmt.Sprintf("%s is a negative control: it %s; it must be flagged%s", k.Name, k.Broken, applied))
	return nil
}

// applyControl sets a control's flags ("--flag value" pairs) the command line did not give, and says
// which it set, " (run with ...)", or "" when the command line gave them all: a hint to run with flags
// already given reads as if they had been ignored.
func (c *composer) applyControl(flags []string) (string, error) {
	var applied []string
	for i := 0; i+1 < len(flags); i += 2 {
		name := strings.TrimPrefix(flags[i], "--")
		if c.given(name) {
			continue
		}
		if err := c.o.setFlag(name, flags[i+1]); err != nil {
			return "", err
		}
		applied = append(applied, flags[i], flags[i+1])
	}
	if len(applied) == 0 {
		return "", nil
	}
	return " (run with " + strings.Join(applied, " ") + ")", nil
}

// maxCommand bounds the recorded command line, so that the meta record stays far below a history
// line's 1 MiB (a long --client-cmd could otherwise make a run refuse its own history).
const maxCommand = 64 << 10

// validate checks every value that can be checked before starting a process, once every flag is applied;
// then an unknown lock is said.
func (c *composer) validate() error {
	o := c.o
	hold, err := workloads.ParseRange(o.Hold)
	if err != nil {
		return usagef("--hold: %v", err)
	}
	if err := o.checkBounds(); err != nil {
		return err
	}
	if o.Clients < 1 {
		return usagef("--clients must be at least 1, got %d", o.Clients)
	}
	for _, ch := range o.chances() {
		if err := workloads.CheckChance(ch.flag, ch.p); err != nil {
			return UsageError{err}
		}
	}
	if o.Threads < 1 || o.Threads > MaxThreads {
		return usagef("--threads must be in [1, %d], got %d", MaxThreads, o.Threads)
	}
	if n := o.Clients * o.Threads; n > MaxOwners {
		return usagef("--clients %d × --threads %d is %d owners, more than the %d a run drives", o.Clients, o.Threads, n, MaxOwners)
	}
	if n := len(strings.Join(o.Command, " ")); n > maxCommand {
		return usagef("the command line is %d bytes, more than the %d a run records", n, maxCommand)
	}
	switch o.Backend {
	case BackendProcess, BackendDocker:
		if o.External != "" || o.ExternalFlags.Addrs != "" {
			return usagef("--external and --external-addrs describe a deployment: they need --backend external")
		}
	case BackendExternal:
		if (o.External == "") == (o.ExternalFlags.Addrs == "") {
			return usagef("--backend external needs its deployment: --external FILE or --external-addrs (one of the two; see the README)")
		}
	default:
		return usagef("--backend %q: want process, docker or external", o.Backend)
	}
	switch o.Persistence {
	case node.PersistNone, node.PersistEverySec, node.PersistAlways:
	default:
		return usagef("--persistence %q: want none, everysec or always", o.Persistence)
	}
	if c.kerr != nil { // an unknown lock, once the flags are checked
		return UsageError{c.kerr}
	}
	if c.kind.WorkerOnly && !o.Worker.active() {
		return usagef("--lock %s is a library's own lock: drive it through that library's worker, --client NAME (lockcheck locks lists them)", o.Lock)
	}
	c.hold, c.params = hold, o.params(hold)
	return nil
}

// params is what the family's workload takes from the options.
func (o Options) params(hold workloads.Range) kinds.Params {
	return kinds.Params{Clients: o.Clients, Threads: o.Threads, Keys: o.Keys, Group: o.Group, Permits: o.Permits,
		Count: o.Count, Wait: o.Wait, WaitTo: o.WaitTo, Lease: o.Lease, LeaseTo: o.LeaseTo, Watchdog: o.Watchdog,
		Hold: hold, Reentry: o.Reentry, Readers: o.Readers, Seed: o.Seed, OnLost: o.OnLost, CrossThread: o.CrossThread,
		ForceUnlock: o.ForceUnlock, NoExtend: o.NoExtend}
}

// faultParams tunes the faults from the options.
func (o Options) faultParams() nemesis.Params {
	return nemesis.Params{Latency: o.Latency, Jitter: o.Jitter, ClockBump: o.ClockBump, Duration: o.NemesisDuration}
}

// chance is a probability flag's value.
type chance struct {
	flag string
	p    float64
}

// chances are every probability flag, checked in one place before anything starts (a spec's or a control's
// control flags included: they are applied to these options first). A new one belongs here.
func (o Options) chances() []chance {
	return []chance{{"--reentry", o.Reentry}, {"--cross-thread", o.CrossThread}, {"--force-unlock", o.ForceUnlock}}
}

// checkBounds refuses a duration flag outside its range (runflag's table, one row per flag), with one line
// naming the flag and the range; each value is read through the flag's own binding (Options.Flags).
func (o Options) checkBounds() error {
	f := pflag.NewFlagSet("bounds", pflag.ContinueOnError)
	o.Flags(f) // o is a copy: the binding reads its values, and nothing is written back
	for _, row := range runflag.Flags {
		if !row.Bounded() {
			continue
		}
		lo, hi, err := durationOf(f, row.Name)
		if err != nil {
			return err
		}
		if err := row.Bound(lo, hi); err != nil {
			return UsageError{err}
		}
	}
	if o.Quiet < 0 || o.Quiet >= o.Time {
		if o.Given != nil && !o.Given["quiet"] && o.Quiet == Defaults().Quiet { // the user never wrote --quiet
			return usagef("--time %s is not longer than --quiet's default %s (the fault-free end of the run): "+
				"give a longer --time, or --quiet below %s (0 for none)", o.Time, o.Quiet, o.Quiet)
		}
		return usagef("--quiet must be in [0, --time), got %s", o.Quiet)
	}
	if faults, _ := nemesis.Parse(o.Nemesis, nil); slices.Contains(faults, "latency") && o.Latency == 0 && o.Jitter == 0 {
		return usagef("--nemesis latency with --latency 0 and --jitter 0 delays nothing")
	}
	return nil
}

// durationOf is a duration flag's value as bound: a range's two ends (hi 0 for a single value), or one.
func durationOf(f *pflag.FlagSet, name string) (lo, hi time.Duration, err error) {
	fl := f.Lookup(strings.TrimPrefix(name, "--"))
	if fl == nil {
		return 0, 0, fmt.Errorf("%s: no such run flag", name)
	}
	if r, ok := fl.Value.(DurationRange); ok {
		return *r.Lo, *r.Hi, nil
	}
	d, err := f.GetDuration(fl.Name)
	return d, 0, err
}

// CheckCheckTimeout bounds `lockcheck check --check-timeout` as `run` bounds its own.
func CheckCheckTimeout(d time.Duration) error {
	row, _ := runflag.Lookup("--check-timeout")
	if err := row.Bound(d, 0); err != nil {
		return UsageError{err}
	}
	return nil
}

// deployment resolves the topology: an external deployment's own (from its file or flags), else the
// lock's default; and the node count to start.
func (c *composer) deployment() error {
	o := &c.o
	if o.Backend == BackendExternal {
		var e topology.External
		var err error
		if o.External != "" {
			e, err = topology.LoadExternal(o.External)
		} else {
			f := o.ExternalFlags
			f.Topology = o.Topology
			e, err = topology.ExternalFromFlags(f)
		}
		if err != nil {
			return UsageError{err}
		}
		if o.Topology != "" && o.Topology != e.Topology {
			return usagef("--topology %s, but the deployment in %s is %s", o.Topology, o.External, e.Topology)
		}
		o.Topology, c.ext = e.Topology, &e
	}
	if o.Topology == "" {
		o.Topology = c.kind.Topology
	}
	var err error
	o.Nodes, err = nodesFor(o.Topology, o.Nodes, c.ext)
	return err
}

// nodesFor is the node count to start: --nodes (given: 0 when unset) only means something for redlock; an
// external deployment names its own nodes. A --nodes that would be ignored is refused.
func nodesFor(topo string, given int, ext *topology.External) (int, error) {
	k := topology.KindNamed(topo)
	switch {
	case given < 0:
		return 0, usagef("--nodes must be at least 1, got %d", given)
	case ext != nil && given != 0:
		return 0, usagef("--nodes %d: --backend external uses the deployment's own %d node(s)", given, len(ext.Nodes))
	case ext != nil:
		return len(ext.Nodes), nil
	case k.Masters && given == 0:
		return k.DefaultMasters, nil
	case k.Masters || !k.Known():
		return given, nil // an unknown topology is reported by its own check
	case given != 0:
		return 0, usagef("--nodes %d: only --topology redlock takes it (%s has %d node(s))", given, topo,
			topology.NodeCount(topo, 0))
	}
	return 0, nil
}

// server is the binary the nodes run (--server, --server-bin), refused where another names the server.
func (c *composer) server() error {
	o := c.o
	srv, err := server.Parse(o.Server, o.ServerBin)
	if err != nil {
		return UsageError{err}
	}
	flag := srv.String() // as given: --server-bin PATH, or the release --server named
	if !strings.HasPrefix(flag, "--") {
		flag = "--server " + flag
	}
	switch {
	case srv.Default():
	case o.Backend == BackendExternal:
		return usagef("%s: --backend external runs the deployment's own servers, not this binary: use --backend process or docker", flag)
	case o.Backend == BackendDocker && o.DockerImage != docker.DefaultImage:
		// Each names what the containers run; neither is taken over the other silently.
		return usagef("%s and --docker-image %s both name the server the containers run: give one (%s builds an image of its own from the binary)",
			flag, o.DockerImage, flag)
	}
	c.srv = srv
	return nil
}

// faultPlan makes the deployment's spec and the fault plan, which needs only names, so that every usage
// error is found before anything starts; a schedule's faults are its steps', and the plan has none.
func (c *composer) faultPlan() error {
	o, kind := c.o, c.kind
	clients := clientNames(o.Clients)
	c.spec = topology.Spec{Kind: o.Topology, Nodes: o.Nodes, Clients: clients, Persistence: o.Persistence}
	if err := c.spec.Validate(); err != nil {
		return UsageError{err}
	}
	names := &nemesis.Env{Topology: o.Topology, Clients: clients, Params: o.faultParams(),
		Client: func(string) nemesis.Client { return nil }}
	c.names = names
	if shards, modes := topology.Shape(o.Topology); shards > 0 {
		names.Replication = planned{shards: shards, modes: modes}
		names.KeyShards = keyShards(o.Topology, kind.KeyCount(c.params))
	}
	if topology.KindNamed(kind.Topology).Masters && !topology.KindNamed(o.Topology).Masters {
		return usagef("--lock %s needs independent masters: --topology redlock", o.Lock)
	}
	for i := 1; i <= topology.NodeCount(o.Topology, o.Nodes); i++ {
		names.Nodes = append(names.Nodes, fmt.Sprintf("n%d", i))
	}
	if c.ext != nil {
		names.Nodes = nil
		for _, n := range c.ext.Nodes {
			names.Nodes = append(names.Nodes, n.Name)
		}
	}
	faults, err := nemesis.Parse(o.Nemesis, names)
	if err != nil {
		return UsageError{err}
	}
	var schedFaults []string
	if c.sched != nil {
		if schedFaults, err = c.checkSchedule(); err != nil {
			return err
		}
	}
	for _, f := range append(slices.Clone(faults), schedFaults...) {
		if c.ext == nil {
			break
		}
		if why := c.ext.Refusal(f); why != "" {
			return usagef("--nemesis %s on --backend external: %s", f, why)
		}
	}
	c.notes = append(c.notes, nemesis.ShortWindows(faults, o.NemesisDuration)...)
	if names.Targets, err = nemesis.ParseSelector(o.NemesisTargets, names); err != nil {
		return UsageError{err}
	}
	if c.plan, err = nemesis.NewPlan(o.Seed, nemesis.Schedule{Faults: faults, Total: o.Time, Interval: o.NemesisInterval,
		Duration: o.NemesisDuration, Quiet: o.Quiet, Trigger: o.NemesisTrigger}, names); err != nil {
		return UsageError{err}
	}
	c.faults = faults
	if c.sched != nil {
		c.faults = schedFaults
		if c.sched.Paced() {
			c.note(fmt.Sprintf("--schedule %s: a cycle of the loop can play in %s, under the floor of %s: each cycle starts at least %s after the last",
				o.Schedule, c.sched.Shortest(), schedule.CycleFloor, schedule.CycleFloor))
		}
	}
	return nil
}

// checkSchedule refuses a schedule the lock cannot play and draws its faults' targets; it returns the
// faults the steps use.
func (c *composer) checkSchedule() ([]string, error) {
	s, k, o := c.sched, c.kind, c.o
	if err := s.Check(schedule.Caps{Lock: o.Lock, Family: k.Family.Name, Reentrant: k.Reentrant, Group: k.Group,
		Time: o.Time}); err != nil {
		return nil, UsageError{err}
	}
	if err := s.Aim(o.Seed, c.names); err != nil {
		return nil, UsageError{err}
	}
	return s.Faults(), nil
}

// lockScripts is the kind's script set, with --scripts applied.
func (c *composer) lockScripts() error {
	if c.kind.Scripts == "" {
		if c.o.Scripts != "" {
			return usagef("--scripts: lock %s runs no scripts", c.o.Lock)
		}
		return nil
	}
	var err error
	if c.scripts, err = locks.LoadScripts(c.kind.Scripts, c.o.Scripts); err != nil {
		return UsageError{err}
	}
	return nil
}

// workload is the family's random workload (a schedule is played instead when there is one).
func (c *composer) workload() error {
	var err error
	if c.load, err = c.kind.Family.Workload(c.kind, c.params); err != nil {
		return UsageError{err}
	}
	return nil
}

// askChecks are the kind's checkers and the --check groups asked for.
func (c *composer) askChecks() error {
	c.checks = c.kind.Checks(c.params)
	if err := c.checks.Ask(c.o.Check); err != nil {
		return UsageError{err}
	}
	return nil
}

// clientProvider is where the lock clients come from: the kind's (Go or spec), or a worker's.
func (c *composer) clientProvider() error {
	c.clients = ClientProvider{Source: c.src, Name: c.kind.Name, New: c.kind.New}
	w, err := c.o.planWorker(c.kind, c.faults)
	if err != nil {
		return err
	}
	if w != nil {
		c.clients = *w
	}
	return nil
}
