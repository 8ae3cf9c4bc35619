package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/lockcheck/lockcheck/workloads"
)

// Checks is what the checkers need to know about a run; it travels in the history's meta record.
type Checks struct {
	Family  string `json:"family"`
	Fenced  bool   `json:"fenced,omitempty"`
	Fair    bool   `json:"fair,omitempty"`
	Group   bool   `json:"group,omitempty"`
	Permits int64  `json:"permits,omitempty"`
	// Members is set where a lock spans independent masters (RedLock): losing it on one is tolerated.
	Members bool `json:"members,omitempty"`
}

func checksFor(k locks.Kind, o Options) Checks {
	c := Checks{Family: k.Family, Fenced: k.Fenced, Fair: k.Fair, Group: k.Group, Members: k.Topology == topology.Redlock}
	if k.Family == locks.FamilySemaphore || k.Family == locks.FamilyExpirable {
		c.Permits = o.Permits
	}
	return c
}

// checkers composes the checkers of a family: the porcupine model of its commands, the promise it makes
// the application, and statistics.
func checkers(c Checks, timeout time.Duration) (*checker.Linearizable, []checker.Checker) {
	lin := &checker.Linearizable{Label: "porcupine", Timeout: timeout}
	var out []checker.Checker
	switch c.Family {
	case locks.FamilyRW:
		lin.Model, lin.Convert = checker.RWModel, commands("acquire", "release", "renew")
		out = append(out, checker.Exclusion{})
	case locks.FamilySemaphore, locks.FamilyExpirable:
		lin.Model, lin.Convert = checker.SemaphoreModel, commands("setPermits", "acquire", "release", "available")
		if c.Family == locks.FamilyExpirable {
			lin.Model = checker.PESModel
		}
		out = append(out, checker.Exclusion{Capacity: int(c.Permits)}, checker.Quiescence{Permits: c.Permits})
	case locks.FamilyLatch:
		lin.Model, lin.Convert = checker.LatchModel, commands("setCount", "countDown", "getCount")
		out = append(out, checker.LatchAwaits{})
	default:
		lin.Model, lin.Convert = checker.MutexModel, checker.MutexOps
		out = append(out, checker.Exclusion{Fenced: c.Fenced})
		if !c.Members && !c.Fair {
			out = append(out, checker.LostLock{})
		}
		if c.Fenced {
			out = append(out, checker.Tokens{})
		}
		if c.Fair {
			out = append(out, checker.Fairness{})
		}
		if c.Group {
			out = append(out, checker.Group{})
		}
	}
	return lin, append([]checker.Checker{lin}, append(out, checker.Stats{})...)
}

func commands(fs ...string) func(*history.History) []porcupine.Operation {
	return func(h *history.History) []porcupine.Operation { return checker.Commands(h, fs...) }
}

// keyCount is --keys, or the lock's default: one key, or one more than a group so that groups differ.
func keyCount(k locks.Kind, o Options) int {
	switch {
	case o.Keys > 0:
		return o.Keys
	case k.Group:
		return o.Group + 1
	}
	return 1
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

// workload is one family's generator, ready to run.
type workload func(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder)

// workloadFor builds the generator of a kind's family from the options, or a usage error.
func workloadFor(k locks.Kind, o Options, hold workloads.Range) (workload, error) {
	o.Keys = keyCount(k, o)
	switch k.Family {
	case locks.FamilySemaphore, locks.FamilyExpirable:
		lease := o.Lease
		if k.Family == locks.FamilyExpirable && lease <= 0 {
			lease = o.Watchdog // permits get a lease unless told otherwise
		}
		w := workloads.Semaphore{Keys: o.Keys, Permits: o.Permits, Wait: o.Wait, Lease: lease, Hold: hold,
			Expirable: k.Family == locks.FamilyExpirable, Seed: o.Seed}
		if err := w.Validate(); err != nil {
			return nil, err
		}
		return func(ctx context.Context, stop <-chan struct{}, cs []locks.Client, rec *history.Recorder) {
			w.Run(ctx, stop, cs, rec, workloads.NewResource(rec))
		}, nil
	case locks.FamilyLatch:
		w := workloads.Latch{Count: o.Count, Wait: o.Wait, Hold: hold, Seed: o.Seed}
		if err := w.Validate(o.Clients); err != nil {
			return nil, err
		}
		return func(ctx context.Context, stop <-chan struct{}, cs []locks.Client, rec *history.Recorder) {
			w.Run(ctx, stop, cs, rec)
		}, nil
	}
	read, err := readShare(o.Readers)
	if err != nil {
		return nil, err
	}
	group := 1
	if k.Group {
		group = o.Group
	}
	w := workloads.Mutex{Keys: o.Keys, Group: group, Wait: o.Wait, Lease: o.Lease, Hold: hold, Reentry: o.Reentry,
		Reentrant: k.Reentrant, RW: k.Family == locks.FamilyRW, ReadRatio: read, Seed: o.Seed}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, stop <-chan struct{}, cs []locks.Client, rec *history.Recorder) {
		w.Run(ctx, stop, cs, rec, workloads.NewResource(rec))
	}, nil
}

// readShare reads --readers R:W as the share of acquisitions that read.
func readShare(s string) (float64, error) {
	r, w, ok := strings.Cut(s, ":")
	rn, err1 := strconv.Atoi(strings.TrimSpace(r))
	wn, err2 := strconv.Atoi(strings.TrimSpace(w))
	if !ok || err1 != nil || err2 != nil || rn < 0 || wn < 0 || rn+wn == 0 {
		return 0, fmt.Errorf("--readers %q: want READERS:WRITERS, e.g. 3:1", s)
	}
	return float64(rn) / float64(rn+wn), nil
}
