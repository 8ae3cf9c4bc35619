package runner

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Test is one run composed, as Jepsen's test map is: the topology to start (or attach to), how to make the
// lock clients, the workload that drives them, the nemesis plan, and the checks its history is judged by.
// Prepare builds it from the options, finding every usage error before anything starts; Execute consumes it.
type Test struct {
	// Options are the options with every default applied: the lock's (topology, nodes of an external
	// deployment), a negative control's run flags, a spec lock's name.
	Options  Options
	Kind     *kinds.Kind // a spec lock's is its own, not registered
	Spec     topology.Spec
	External *topology.External // set on --backend external: Spec's topology is attached to, not started
	// Clients makes one lock client per name in Spec.Clients: the kind's Go clients, the spec lock's, or a
	// worker's (their clients must implement Kind.Family).
	Clients  ClientProvider
	Scripts  *locks.Scripts // the kind's script set, with --scripts applied; nil for none
	Workload kinds.Workload
	// Schedule, when set (--schedule), is played instead of Workload, and its fault steps instead of Plan.
	Schedule *schedule.Schedule
	Faults   []string // the nemesis, parsed (a schedule's: the faults its steps use)
	Plan     nemesis.Plan
	Targets  nemesis.Selector
	// Checks are recorded in the history's meta record; the checkers are Kind.Family.Checkers(Checks), so a
	// history is judged the same way during the run and later by `lockcheck check`.
	Checks kinds.Checks
	// Server is the server binary the nodes run (--server, --server-bin), fetched and probed by Execute.
	Server server.Choice
	// Notes are what Prepare decided that the user should hear before the run (a negative control's flags).
	Notes []string

	fds string // the descriptors it needs and has, for the start line
}

// params is what the family's workload takes from the options.
func (o Options) params(hold workloads.Range) kinds.Params {
	return kinds.Params{Clients: o.Clients, Threads: o.Threads, Keys: o.Keys, Group: o.Group, Permits: o.Permits,
		Count: o.Count, Wait: o.Wait, WaitTo: o.WaitTo, Lease: o.Lease, LeaseTo: o.LeaseTo, Watchdog: o.Watchdog,
		Hold: hold, Reentry: o.Reentry, Readers: o.Readers, Seed: o.Seed, OnLost: o.OnLost, CrossThread: o.CrossThread,
		ForceUnlock: o.ForceUnlock, NoExtend: o.NoExtend}
}

// Prepare composes the test the options describe, starting nothing and writing nothing: it resolves the
// lock (a registered kind, or a spec file's), its clients (the kind's Go clients, the spec's, or a worker's),
// a negative control's run flags, the deployment, the fault plan and the checks. Every error is a usage
// error.
func Prepare(o Options) (*Test, error) {
	var notes []string
	note, err := o.workerControl()
	if err != nil {
		return nil, err
	}
	sched, err := o.loadSchedule()
	if err != nil {
		return nil, err
	}
	kind, src, kerr := o.lockKind()
	if kerr != nil && src == SpecClients { // a spec that does not load: the first thing said, as ever
		return nil, UsageError{kerr}
	}
	if note != "" {
		notes = append(notes, note)
	}
	if kerr == nil {
		if o.LockSpec != "" {
			o.Lock = kind.Name
		}
		note, err := o.controlRun(kind)
		if err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	hold, err := o.validate()
	if err != nil {
		return nil, err
	}
	if kerr != nil { // an unknown lock, once the flags are checked
		return nil, UsageError{kerr}
	}
	if kind.WorkerOnly && !o.Worker.active() {
		return nil, usagef("--lock %s is a library's own lock: drive it through that library's worker, --client NAME (lockcheck locks lists them)", o.Lock)
	}
	var ext *topology.External
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
			return nil, UsageError{err}
		}
		if o.Topology != "" && o.Topology != e.Topology {
			return nil, usagef("--topology %s, but the deployment in %s is %s", o.Topology, o.External, e.Topology)
		}
		o.Topology, ext = e.Topology, &e
	}
	if o.Topology == "" {
		o.Topology = kind.Topology
	}
	if o.Nodes, err = nodesFor(o.Topology, o.Nodes, ext); err != nil {
		return nil, err
	}
	srv, err := server.Parse(o.Server, o.ServerBin)
	if err != nil {
		return nil, UsageError{err}
	}
	flag := srv.String() // as given: --server-bin PATH, or the release --server named
	if !strings.HasPrefix(flag, "--") {
		flag = "--server " + flag
	}
	switch {
	case srv.Default():
	case o.Backend == BackendExternal:
		return nil, usagef("%s: --backend external runs the deployment's own servers, not this binary: use --backend process or docker", flag)
	case o.Backend == BackendDocker && o.DockerImage != docker.DefaultImage:
		// Each names what the containers run; neither is taken over the other silently.
		return nil, usagef("%s and --docker-image %s both name the server the containers run: give one (%s builds an image of its own from the binary)",
			flag, o.DockerImage, flag)
	}
	params := o.params(hold)
	clients := clientNames(o.Clients)
	spec := topology.Spec{Kind: o.Topology, Nodes: o.Nodes, Clients: clients, Persistence: o.Persistence}
	if err := spec.Validate(); err != nil {
		return nil, UsageError{err}
	}
	// The plan needs only names, so it is made (and every usage error found) before anything starts.
	names := &nemesis.Env{Topology: o.Topology, Clients: clients, Params: o.faultParams(),
		Client: func(string) nemesis.Client { return nil }}
	if shards, modes := topology.Shape(o.Topology); shards > 0 {
		names.Replication = planned{shards: shards, modes: modes}
		names.KeyShards = keyShards(o.Topology, kind.KeyCount(params))
	}
	if topology.KindNamed(kind.Topology).Masters && !topology.KindNamed(o.Topology).Masters {
		return nil, usagef("--lock %s needs independent masters: --topology redlock", o.Lock)
	}
	for i := 1; i <= topology.NodeCount(o.Topology, o.Nodes); i++ {
		names.Nodes = append(names.Nodes, fmt.Sprintf("n%d", i))
	}
	if ext != nil {
		names.Nodes = nil
		for _, n := range ext.Nodes {
			names.Nodes = append(names.Nodes, n.Name)
		}
	}
	faults, err := nemesis.Parse(o.Nemesis, names)
	if err != nil {
		return nil, UsageError{err}
	}
	var schedFaults []string // a schedule's faults are its steps': the plan has none
	if sched != nil {
		if schedFaults, err = o.checkSchedule(sched, kind, names); err != nil {
			return nil, err
		}
	}
	for _, f := range append(slices.Clone(faults), schedFaults...) {
		if ext == nil {
			break
		}
		if why := ext.Refusal(f); why != "" {
			return nil, usagef("--nemesis %s on --backend external: %s", f, why)
		}
	}
	notes = append(notes, nemesis.ShortWindows(faults, o.NemesisDuration)...)
	if names.Targets, err = nemesis.ParseSelector(o.NemesisTargets, names); err != nil {
		return nil, UsageError{err}
	}
	plan, err := nemesis.NewPlan(o.Seed, nemesis.Schedule{Faults: faults, Total: o.Time, Interval: o.NemesisInterval,
		Duration: o.NemesisDuration, Quiet: o.Quiet, Trigger: o.NemesisTrigger}, names)
	if err != nil {
		return nil, UsageError{err}
	}
	if sched != nil {
		faults = schedFaults
		if sched.Paced() {
			notes = append(notes, fmt.Sprintf("--schedule %s: a cycle of the loop can play in %s, under the floor of %s: each cycle starts at least %s after the last",
				o.Schedule, sched.Shortest(), schedule.CycleFloor, schedule.CycleFloor))
		}
	}
	var scripts *locks.Scripts
	if kind.Scripts != "" {
		if scripts, err = locks.LoadScripts(kind.Scripts, o.Scripts); err != nil {
			return nil, UsageError{err}
		}
	} else if o.Scripts != "" {
		return nil, usagef("--scripts: lock %s runs no scripts", o.Lock)
	}
	workload, err := kind.Family.Workload(kind, params)
	if err != nil {
		return nil, UsageError{err}
	}
	checks := kind.Checks(params)
	if err := checks.Ask(o.Check); err != nil {
		return nil, UsageError{err}
	}
	provider := ClientProvider{Source: src, Name: kind.Name, New: kind.New}
	if w, err := o.planWorker(kind, faults); err != nil {
		return nil, err
	} else if w != nil {
		provider = *w
	}
	return &Test{Options: o, Kind: kind, Spec: spec, External: ext, Clients: provider, Scripts: scripts,
		Workload: workload, Schedule: sched, Faults: faults, Plan: plan, Targets: names.Targets, Checks: checks, Notes: notes,
		Server: srv}, nil
}

// lockKind is the lock under test: the spec file's own kind (not registered: it is this test's), or a
// registered one; and where its clients come from when no worker drives it.
func (o Options) lockKind() (*kinds.Kind, ClientSource, error) {
	if o.LockSpec == "" {
		k, err := kinds.Lookup(o.Lock)
		return k, GoClients, err
	}
	s, err := lockspec.Load(o.LockSpec)
	if err != nil {
		return nil, SpecClients, err
	}
	k := s.Kind()
	return &k, SpecClients, nil
}

// WriteNotes says what Prepare decided that the user should hear, one line each.
func (t *Test) WriteNotes(w io.Writer) {
	for _, n := range t.Notes {
		fmt.Fprintln(w, "lockcheck:", n)
	}
}

// keyShards lists the shards (of a kind of topology) that hold the workload's keys, for faults to aim at.
func keyShards(topo string, keys int) []int {
	var out []int
	for i := range keys {
		if s := topology.ShardOfSlot(topo, locks.Slot(workloads.KeyName(i))); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
