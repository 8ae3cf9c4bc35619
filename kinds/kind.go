package kinds

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
)

// Kind is a lock by its --lock name: a family, a way to make clients, and what it supports.
type Kind struct {
	Name   string
	About  string
	Family *Family
	// New makes one client per lockcheck client; it must implement Family.Client.
	New       locks.ClientFactory
	Reentrant bool   // the mutex workload may nest acquisitions
	Group     bool   // takes a group of keys (multi lock)
	Fenced    bool   // grants carry tokens the resource checks
	Fair      bool   // grants must follow the queue
	Watchdog  bool   // a hold without a lease is renewed for as long as the client lives
	Scripts   string // embedded script set, "" for none
	Topology  string // the topology it runs on by default: single or redlock (one lock over independent masters)
	// Broken is set on negative controls: what is wrong, and Flags are the fault-free run that shows it.
	Broken string
	Flags  []string
	// Prepare, when set, runs once on the first node right after start-up, before anything is recorded or
	// any client made (a spec lock's SCRIPT LOAD); its error is bad input and stops the run.
	Prepare func(ctx context.Context, addr, password string) error
	// WorkerOnly marks a kind that only a worker's library implements (a third-party lock): it has no Go
	// client, and a run of it needs --client.
	WorkerOnly bool
	// AppExtends marks a kind whose libraries leave renewal to the application: the workload extends long
	// holds itself (the negative controls keep outliving their lease).
	AppExtends bool
	// Source names the spec file a user-defined kind came from; its histories record it, so that
	// `lockcheck check` judges them by their family without the kind being registered.
	Source string
}

// Checks are what the kind's checkers need, recorded in the history so that it can be judged alone.
func (k *Kind) Checks(p Params) Checks {
	c := Checks{Family: k.Family.Name, Fenced: k.Fenced, Fair: k.Fair, Group: k.Group,
		Members: topology.KindNamed(k.Topology).Masters}
	if k.Family.Counted {
		c.Permits = p.Permits
	}
	return c
}

// KeyCount is --keys, or the kind's default: one key, or one more than a group so that groups differ.
func (k *Kind) KeyCount(p Params) int {
	switch {
	case p.Keys > 0:
		return p.Keys
	case k.Group:
		return p.Group + 1
	}
	return 1
}

// kindsMu guards kinds and providers: a spec lock or a worker's kind is registered at start-up, and tests
// start several runs in one process at once.
var (
	kindsMu sync.RWMutex
	kinds   = map[string]*Kind{}
)

// Register adds a lock kind: a built-in one at init, or one made at start-up (a spec-defined lock, a
// worker's). A kind without a name, a client factory or a registered family is a programming error: its
// histories could not be judged, since they name their family.
func Register(k Kind) {
	if k.Name == "" || k.New == nil || k.Family == nil {
		panic(fmt.Sprintf("kinds.Register: kind %q needs a name, a family and a client factory", k.Name))
	}
	if f, err := FamilyNamed(k.Family.Name); err != nil || f != k.Family {
		panic(fmt.Sprintf("kinds.Register: kind %q: family %q is not a registered family", k.Name, k.Family.Name))
	}
	kindsMu.Lock()
	kinds[k.Name] = &k
	kindsMu.Unlock()
}

// Lookup finds a lock kind by name.
func Lookup(name string) (*Kind, error) {
	kindsMu.RLock()
	k, ok := kinds[name]
	kindsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown lock %q (have: %v)", name, KindNames())
	}
	return k, nil
}

// KindNames lists the registered kinds.
func KindNames() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	var out []string
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Provider is a source of lock clients other than the built-in Go ones, such as an out-of-process worker
// (clients/worker) for a real library; it registers itself here so that `lockcheck locks` lists it. How a
// run selects one (--client) and turns it into a Kind's client factory is the provider's own business: the
// runner only ever sees a locks.ClientFactory.
type Provider struct {
	Name  string // as the user names it, e.g. "redisson"
	About string // library and language, e.g. "Redisson (Java), real library through the worker protocol"
	// Locks are the kinds it can drive (their families, workloads and checkers are the built-in kinds').
	Locks []string
	// Broken is set on a negative control: what is wrong with it.
	Broken string
}

var providers = map[string]Provider{}

// RegisterProvider adds a client provider to the listing.
func RegisterProvider(p Provider) {
	kindsMu.Lock()
	providers[p.Name] = p
	kindsMu.Unlock()
}

// Providers lists the registered client providers by name.
func Providers() []Provider {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	var out []Provider
	for _, p := range providers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
