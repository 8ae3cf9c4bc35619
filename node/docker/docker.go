// Package docker runs lockcheck's nodes as containers through testcontainers-go: host networking (every
// node still listens on its own loopback port, behind the same proxies), the node's directory bind-mounted
// at the same path (config, log, AOF, clock offset), and the container faults: kill is docker kill, pause is
// docker pause (the cgroup freezer, not SIGSTOP), a restart starts the same container again. Everything it
// creates carries the label lockcheck=1 (and lockcheck.run=<id>), so Clean can remove what a crashed run
// left behind.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels on everything lockcheck creates.
const (
	Label    = "lockcheck"
	RunLabel = "lockcheck.run"
)

// DefaultImage is the offline image `lockcheck images` builds.
const DefaultImage = "lockcheck/redis:offline"

// ClockLib is where the images keep the clockshift library.
const ClockLib = "/usr/lib/lockcheck/libclockshift.so"

// Runtime starts one run's containers.
type Runtime struct {
	Image string
	RunID string

	cli     *testcontainers.DockerClient
	mu      sync.Mutex
	ctrs    map[string]*testcontainers.DockerContainer
	adopted map[string]string // node -> id of a container lockcheck did not create (external backend)
	network string            // id of the fallback network this run created, if any
	private *private          // keeps the node directories' files private; nil until the first container
}

// Connect reaches the Docker engine and checks that image is there (no registry is assumed: a missing
// image is an error that says how to build it).
func Connect(ctx context.Context, image, runID string) (*Runtime, error) {
	r, err := ConnectEngine(ctx)
	if err != nil {
		return nil, err
	}
	img, err := r.cli.ImageInspect(ctx, image)
	if err != nil {
		r.cli.Close()
		return nil, fmt.Errorf("docker image %s is missing: build it with `lockcheck images` (or make images)", image)
	}
	ours := image == DefaultImage || (img.Config != nil && img.Config.Labels[ServerLabel] != "") // lockcheck built it
	if ours && (img.Config == nil || img.Config.Labels[ClockLabel] != clockshift.Version()) {
		r.cli.Close()
		return nil, fmt.Errorf("docker image %s was built with another clockshift library: rebuild it with `lockcheck images`", image)
	}
	r.Image, r.RunID = image, runID
	if err := r.ensureNetwork(ctx); err != nil {
		r.cli.Close()
		return nil, err
	}
	return r, nil
}

// ConnectEngine reaches the Docker engine only, to control containers lockcheck did not create.
func ConnectEngine(ctx context.Context) (*Runtime, error) {
	setup()
	const hint = "start one, e.g. make docker-engine, or dockerd --storage-driver=vfs --iptables=false --bridge=none"
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("no Docker engine found (%v): %s", err, hint)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("no Docker engine answers (%v): %s", err, hint)
	}
	return &Runtime{cli: cli, ctrs: map[string]*testcontainers.DockerContainer{}, adopted: map[string]string{}}, nil
}

// Adopt puts the running container called container under node's name: kill, pause and restart then act
// on it, and Stop leaves it as it found it (it is not lockcheck's to remove).
func (r *Runtime) Adopt(ctx context.Context, nodeName, container string) (node.Proc, error) {
	res, err := r.cli.ContainerInspect(ctx, container, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("container %s (node %s): %w", container, nodeName, err)
	}
	r.mu.Lock()
	r.adopted[nodeName] = res.Container.ID
	r.mu.Unlock()
	return r.watch(res.Container.ID, nil, ""), nil
}

// EngineUp reports whether a Docker engine answers.
func EngineUp(ctx context.Context) bool {
	r, err := ConnectEngine(ctx)
	if err != nil {
		return false
	}
	r.cli.Close()
	return true
}

// setup turns off testcontainers' Ryuk reaper container (its image comes from a registry, and lockcheck
// removes its own containers, and `lockcheck clean` what a crash left) and its chatter on stderr (the
// history records what happened to each container).
func setup() {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	tclog.SetDefault(tclog.NewNoopLogger())
}

// fallbackNetwork is the network testcontainers attaches containers to when the engine has no "bridge"
// (dockerd --bridge=none); it would create one per container started in parallel. Host-networked
// containers never use it, so one labelled network is created here when needed and removed at Close.
const fallbackNetwork = testcontainers.ReaperDefault

// ensureNetwork creates the fallback network when neither "bridge" nor it exists.
func (r *Runtime) ensureNetwork(ctx context.Context) error {
	nets, err := r.cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	for _, n := range nets.Items {
		if n.Name == "bridge" || n.Name == fallbackNetwork {
			return nil
		}
	}
	res, err := r.cli.NetworkCreate(ctx, fallbackNetwork, client.NetworkCreateOptions{Driver: "bridge",
		Labels: r.labels(nil)})
	if err != nil {
		return fmt.Errorf("docker: network %s: %w", fallbackNetwork, err)
	}
	r.network = res.ID
	return nil
}

// Close removes the fallback network if this run made it, makes the node directories' files private a last
// time, and releases the engine connection.
func (r *Runtime) Close() error {
	r.mu.Lock()
	priv := r.private
	r.private = nil
	r.mu.Unlock()
	if priv != nil {
		_ = priv.Close()
	}
	if r.network != "" {
		_, _ = r.cli.NetworkRemove(context.Background(), r.network, client.NetworkRemoveOptions{})
	}
	return r.cli.Close()
}

// How names the container operation behind an action.
func (r *Runtime) How(action string) string {
	switch action {
	case "kill":
		return "docker kill (SIGKILL to the container), restarted with docker start"
	case "pause":
		return "docker pause (cgroup freezer)"
	}
	return action
}

// Run creates and starts the node's container, or starts it again after a kill.
func (r *Runtime) Run(ctx context.Context, name, dir string, argv, env []string) (node.Proc, error) {
	r.mu.Lock()
	c, adopted := r.ctrs[name], r.adopted[name]
	r.mu.Unlock()
	switch {
	case adopted != "":
		if _, err := r.cli.ContainerStart(ctx, adopted, client.ContainerStartOptions{}); err != nil {
			return nil, fmt.Errorf("docker start %s: %w", name, err)
		}
		return r.watch(adopted, nil, ""), nil
	case c != nil:
		if err := c.Start(ctx); err != nil {
			return nil, fmt.Errorf("docker start %s: %w", name, err)
		}
		return r.watch(c.GetContainerID(), c, dir), nil
	}
	r.keepPrivate(dir)
	vars := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		if k == "LD_PRELOAD" {
			v = ClockLib // the image's own copy of the library
		}
		vars[k] = v
	}
	req := testcontainers.ContainerRequest{
		Image: r.Image, Cmd: argv[1:], Env: vars, Name: "lockcheck-" + r.RunID + "-" + name,
		Labels: r.labels(map[string]string{"lockcheck.node": name}),
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			hc.Binds = append(hc.Binds, dir+":"+dir)
		},
		// Host networking only: no endpoint on testcontainers' default network.
		EndpointSettingsModifier: func(m map[string]*network.EndpointSettings) {
			for k := range m {
				delete(m, k)
			}
		},
	}
	gc, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	dc, _ := gc.(*testcontainers.DockerContainer)
	if err != nil {
		if dc != nil {
			_ = dc.Terminate(context.Background())
		}
		return nil, fmt.Errorf("docker run %s: %w", name, err)
	}
	r.mu.Lock()
	r.ctrs[name] = dc
	r.mu.Unlock()
	return r.watch(dc.GetContainerID(), dc, dir), nil
}

// keepPrivate watches a node's directory so that what its server writes there stays its owner's (see
// private). Without inotify (a limit reached) the files are made private when the container is removed,
// and until then the directory's mode 0700 keeps them so.
func (r *Runtime) keepPrivate(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.private == nil {
		p, err := newPrivate()
		if err != nil {
			return
		}
		r.private = p
	}
	_ = r.private.watch(dir)
}

// watch returns the running container id as a Proc whose Exited closes when it stops; c is nil for an
// adopted container. dir is the node's directory, "" for an adopted container.
func (r *Runtime) watch(id string, c *testcontainers.DockerContainer, dir string) node.Proc {
	p := &proc{r: r, c: c, cid: id, dir: dir, exited: make(chan struct{})}
	wait := r.cli.ContainerWait(context.Background(), id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	go func() {
		select {
		case w := <-wait.Result:
			p.reason = fmt.Sprintf("container exited with status %d", w.StatusCode)
		case <-wait.Error:
			// The engine connection broke: poll until the container is no longer running.
			p.reason = "container stopped"
			for {
				res, err := r.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
				if err != nil || res.Container.State == nil || !res.Container.State.Running {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		if _, err := r.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); err != nil {
			p.reason = "container " + id[:min(12, len(id))] + " is gone (" + p.reason + ")"
		}
		close(p.exited)
	}()
	return p
}

type proc struct {
	r      *Runtime
	c      *testcontainers.DockerContainer // nil: adopted, not lockcheck's
	cid    string
	dir    string // the node's directory (bind-mounted); "" for an adopted container
	exited chan struct{}
	reason string // how it ended, set before exited closes
}

// ExitReason says how the container ended; call it once Exited is closed.
func (p *proc) ExitReason() string { return p.reason }

func (p *proc) id() string { return p.cid }

// Kill is docker kill: SIGKILL to the container's process; the container stays, to be started again.
func (p *proc) Kill() error {
	_, err := p.r.cli.ContainerKill(context.Background(), p.id(), client.ContainerKillOptions{Signal: "KILL"})
	return err
}

// Pause is docker pause: the cgroup freezer stops every process of the container.
func (p *proc) Pause() error {
	_, err := p.r.cli.ContainerPause(context.Background(), p.id(), client.ContainerPauseOptions{})
	return err
}

func (p *proc) Resume() error {
	_, err := p.r.cli.ContainerUnpause(context.Background(), p.id(), client.ContainerUnpauseOptions{})
	return err
}

// Terminate is docker stop (SIGTERM, then SIGKILL after 3 s); an adopted container is left running.
func (p *proc) Terminate() error {
	if p.c == nil {
		return nil
	}
	d := 3 * time.Second
	return p.c.Stop(context.Background(), &d)
}

func (p *proc) Exited() <-chan struct{} { return p.exited }

// Remove deletes the container and its anonymous volumes (never an adopted one), then makes what it left in
// the node's directory private (a last rewrite of Sentinel's config, at shutdown, included).
func (p *proc) Remove() error {
	if p.c == nil {
		return nil
	}
	p.r.mu.Lock()
	for name, c := range p.r.ctrs {
		if c == p.c {
			delete(p.r.ctrs, name)
		}
	}
	priv := p.r.private
	p.r.mu.Unlock()
	err := p.c.Terminate(context.Background(), testcontainers.RemoveVolumes())
	if priv != nil {
		_ = priv.forget(p.dir)
	} else {
		_ = sweep(p.dir)
	}
	return err
}

// labels are what everything of this run carries: lockcheck's, the run's and its owner's, and extra.
func (r *Runtime) labels(extra map[string]string) map[string]string {
	l := map[string]string{Label: "1", RunLabel: r.RunID}
	for k, v := range ownerLabels() {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// Clean removes every container, volume and network labelled lockcheck=1 (all runs, or one run), as left
// by a run that was killed before it could tear down, except a live run's. It returns what it removed.
func Clean(ctx context.Context, runID string) ([]string, error) {
	removed, _, err := CleanRuns(ctx, runID, false)
	return removed, err
}

// CleanRuns is Clean that says what it kept: the things of runs whose owning process is alive (or on
// another host, where it cannot look), which it removes only when forced.
func CleanRuns(ctx context.Context, runID string, force bool) (removed, kept []string, err error) {
	r, err := ConnectEngine(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer r.cli.Close()
	cli := r.cli
	items, err := labelled(ctx, cli, runID)
	if err != nil {
		return nil, nil, err
	}
	live := map[string]string{} // run id -> its owner, while alive
	for _, it := range items {
		if alive, who := liveOwner(it.labels); alive && it.labels[RunLabel] != "" {
			live[it.labels[RunLabel]] = who
		}
	}
	var errs []error
	for _, it := range items {
		if who, ok := live[it.labels[RunLabel]]; ok && !force {
			kept = append(kept, fmt.Sprintf("%s: its run %s is alive (%s)", it, it.labels[RunLabel], who))
			continue
		}
		switch it.kind {
		case "container":
			_, err = cli.ContainerRemove(ctx, it.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		case "volume":
			_, err = cli.VolumeRemove(ctx, it.id, client.VolumeRemoveOptions{Force: true})
		case "network":
			_, err = cli.NetworkRemove(ctx, it.id, client.NetworkRemoveOptions{})
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, it.String())
	}
	// Unlabelled fallback networks that testcontainers made for earlier versions or other users, when
	// nothing uses them (removal fails harmlessly otherwise).
	if runID == "" {
		all, err := cli.NetworkList(ctx, client.NetworkListOptions{})
		if err == nil {
			for _, n := range all.Items {
				if n.Name == fallbackNetwork && n.Labels[Label] != "1" {
					if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err == nil {
						removed = append(removed, "network "+fallbackNetwork)
					}
				}
			}
		}
	}
	return removed, kept, errors.Join(errs...)
}

// Leftovers names every container, volume and network labelled as lockcheck's (of one run, or of all
// with runID "").
func Leftovers(ctx context.Context, runID string) ([]string, error) {
	r, err := ConnectEngine(ctx)
	if err != nil {
		return nil, err
	}
	defer r.cli.Close()
	cli := r.cli
	items, err := labelled(ctx, cli, runID)
	var out []string
	for _, it := range items {
		out = append(out, it.String())
	}
	return out, err
}

// item is one thing lockcheck created: containers first, so their volumes and networks are free when
// their turn comes.
type item struct {
	kind, id, name string
	labels         map[string]string
}

func (it item) String() string { return it.kind + " " + it.name }

// labelled lists what carries lockcheck's label (and runID's, if given).
func labelled(ctx context.Context, cli *testcontainers.DockerClient, runID string) ([]item, error) {
	f := make(client.Filters).Add("label", Label+"=1")
	if runID != "" {
		f.Add("label", RunLabel+"="+runID)
	}
	ctrs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	var out []item
	for _, c := range ctrs.Items {
		out = append(out, item{"container", c.ID, strings.TrimPrefix(firstName(c.Names), "/"), c.Labels})
	}
	if vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f}); err == nil {
		for _, v := range vols.Items {
			out = append(out, item{"volume", v.Name, v.Name, v.Labels})
		}
	}
	if nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
		for _, n := range nets.Items {
			out = append(out, item{"network", n.ID, n.Name, n.Labels})
		}
	}
	return out, nil
}

// EnsureImage makes sure the offline image is there and current, building it if not; it fails when no
// engine answers.
func EnsureImage(ctx context.Context) error {
	probe, err := Connect(ctx, DefaultImage, "probe")
	if err == nil {
		return probe.Close()
	}
	if !EngineUp(ctx) {
		return err
	}
	if err := BuildOffline(ctx, io.Discard); err != nil {
		return fmt.Errorf("cannot build %s: %w", DefaultImage, err)
	}
	return nil
}

func firstName(names []string) string {
	if len(names) == 0 {
		return "?"
	}
	return names[0]
}
