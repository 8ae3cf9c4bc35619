package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
)

// A differential run (--client W[@V],go) alternates lockcheck's clients between a worker and the Go
// emulation of the same library on the same locks: c1, c3, ... run the worker, c2, c4, ... the Go
// clients. They share keys, channels and pub/sub, so a difference between the two shows as a waiter
// never woken or a verdict the pure runs do not give.

// GoClient is the name that puts lockcheck's Go clients beside a worker in --client.
const GoClient = "go"

// SplitClient splits --client into the worker (NAME[@VERSION]) and whether the Go clients run beside it.
func SplitClient(arg string) (name string, mixed bool, err error) {
	name, rest, found := strings.Cut(arg, ",")
	if !found {
		return arg, false, nil
	}
	if rest != GoClient || name == "" || name == GoClient {
		return "", false, usagef("--client %q: want NAME[@VERSION] or NAME[@VERSION],go (a worker beside lockcheck's Go clients)", arg)
	}
	return name, true, nil
}

// planMixed checks that the Go clients can run beside the worker: the worker emulated in Go, a lock with
// Go clients, and at least one client of each kind.
func (o Options) planMixed(spec worker.Spec, k *kinds.Kind) error {
	if spec.Emulated == "" {
		var can []string
		for _, n := range worker.Names() {
			if s, _ := worker.Get(n); s.Emulated != "" {
				can = append(can, n)
			}
		}
		return usagef("--client %s,go: lockcheck's Go clients emulate %s, not %s", spec.Name, strings.Join(can, ", "), spec.Name)
	}
	if k == nil || k.WorkerOnly || k.Broken != "" {
		return usagef("--client %s,go: lock %s has no Go client of that library to mix with", spec.Name, o.Lock)
	}
	if o.Clients < 2 {
		return usagef("--client %s,go alternates the clients between the two: give --clients 2 or more", spec.Name)
	}
	return nil
}

// runsWorker reports whether client runs the worker: all of them, or in a mixed run the odd ones.
func (p *ClientProvider) runsWorker(client string) bool {
	if !p.Mixed {
		return true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(client, "c"))
	return err != nil || n%2 == 1
}

// sides lists the clients of each side of a mixed run.
func (p *ClientProvider) sides(clients []string) (workers, gos []string) {
	for _, c := range clients {
		if p.runsWorker(c) {
			workers = append(workers, c)
		} else {
			gos = append(gos, c)
		}
	}
	return workers, gos
}

// GoSide names the Go clients of a mixed run in its meta record.
type GoSide = history.GoSide

// describeMixed adds the Go side of a mixed run to its meta record: both clients are named, each with
// its library and version.
func (p *workerRun) describeMixed(m *Meta, clients []string) {
	if p == nil || !p.Mixed || m.Client == nil {
		return
	}
	workers, gos := p.sides(clients)
	m.Client.Clients = workers
	m.Client.Go = &GoSide{Clients: gos, Library: "lockcheck-go",
		Version: fmt.Sprintf("%s (emulates %s)", m.Versions["lockcheck"], p.spec.Emulated)}
	m.Versions["client-go"] = fmt.Sprintf("%s %s", m.Client.Go.Library, m.Client.Go.Version)
}

// mixedNote says who ran what in a mixed run, and which records porcupine judged of each side.
func mixedNote(c *ClientMeta, h *history.History) string {
	who := fmt.Sprintf("differential run: %s ran %s %s, %s ran %s %s; ", strings.Join(c.Clients, ", "), c.Library,
		c.Version, strings.Join(c.Go.Clients, ", "), c.Go.Library, c.Go.Version)
	if kinds.RecordLevel(h) == "wire+client" {
		return who + "porcupine judged the workers' wire records with the Go clients' own command records"
	}
	what := who + "the wire history is incomplete, so porcupine judged the workers' API records with the Go clients' command records"
	all, seen := keys(h.OnlySrc("")), keys(h.OnlySrc("").WithoutUnseenKeys())
	if n := len(all) - len(seen); n > 0 {
		what += fmt.Sprintf(", leaving out the %d key(s) the workers changed through calls no model reads (as a pure worker run: those are judged by the other checkers)", n)
	}
	return what
}

func keys(h *history.History) map[string]bool {
	out := map[string]bool{}
	for _, o := range h.Ops {
		out[o.Invoke.Key] = true
	}
	return out
}
