// Package kinds holds lockcheck's lock families and kinds. A family (mutex, read-write lock, semaphore,
// expirable semaphore, latch) is the interface its clients implement together with the workload that drives
// them and the checkers that judge their histories. A kind is one lock of a family: how to make its clients
// (a locks.ClientFactory), what it supports, and the topology it runs on. A new kind is one Kind value; a new
// family is one Family value; neither touches the runner, the CLI or the checkers' composition.
package kinds

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workloads"
)

// Workload is a family's generator, ready to run: it drives the clients until stop closes or ctx ends.
type Workload func(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder)

// Params is what a family's workload takes from the run's options.
type Params struct {
	Clients  int
	Threads  int // application threads per client, each its own owner; 0 counts as 1
	Keys     int // 0: the kind's default (KeyCount)
	Group    int // multi lock: keys per acquisition
	Permits  int64
	Count    int64 // latch: countDowns per round
	Wait     time.Duration
	WaitTo   time.Duration // with Wait: a range drawn per acquire; 0: Wait alone
	Lease    time.Duration
	LeaseTo  time.Duration // with Lease: a range drawn per acquire and re-entry; 0: Lease alone
	Watchdog time.Duration
	Hold     workloads.Range
	Reentry  float64
	Readers  string           // read-write lock: READERS:WRITERS
	OnLost   workloads.OnLost // mutex: whether a critical section ends at the library's loss signal
	Seed     int64
	// CrossThread and ForceUnlock are the mutex workload's chances of cross-thread operations (stray
	// releases and state reads) and of a forceUnlock per critical section.
	CrossThread, ForceUnlock float64
	// NoExtend: the application never extends, even where the kind's applications do (AppExtends).
	NoExtend bool
}

// Checks is what the checkers need to know about a run; it travels in the history's meta record, so a
// history is judged without the kind that made it (a worker's or a spec's kind need not be registered).
type Checks history.Checks

// Family is one interface of lock clients with the workload that drives it and the checkers that judge it.
type Family struct {
	Name   string       // its name on the wire (the meta record's checks.family) and in listings
	Client reflect.Type // the interface its clients implement, e.g. locks.MutexClient
	// Counted families record --permits in their checks (the capacity the checkers hold them to).
	Counted bool
	// Workload builds the family's generator for a kind, or a usage error.
	Workload func(k *Kind, p Params) (Workload, error)
	// Model is the porcupine model of the family's lock commands, and Commands reads them from a history.
	Model    porcupine.NondeterministicModel
	Commands func(*history.History) []porcupine.Operation
	// Promises are the checkers of what the family promises the application, given the recorded checks.
	Promises func(Checks) []checker.Checker
	// Liveness is set where --check liveness applies (a lock one holder at a time: kinds/extra.go).
	Liveness bool
	// Leases is how a re-entry's lease bears on the hold it joins, for the story's "past the first owner's
	// lease" (report.TellStory); the family's Model judges the commands by the same rule.
	Leases Leases
}

// Leases is a family's rule for the lease of a hold that was re-entered.
type Leases int

const (
	// ReentrySetsLease: a re-entry's lease replaces the hold's (Redisson's RLock answers a re-entry with
	// PEXPIRE lease), even a watchdog's.
	ReentrySetsLease Leases = iota
	// LeasePerHold: each hold keeps its own lease and a re-entry never shortens the lock (Redisson's
	// RReadWriteLock: a read hold has its own timeout key and the hash lives as long as the longest; a write
	// re-entry adds its lease to what was left), but a write re-entry's unlock sets the lock's TTL to the
	// lease of its handle's last acquire, and every unlock takes one count off the thread's watchdog, which
	// only an acquire on the watchdog adds: the unlock of a re-entry with a lease of its own stops the
	// renewal of the watchdog hold it joined.
	LeasePerHold
)

// Accepts reports whether c implements the family's interface.
func (f *Family) Accepts(c locks.Client) bool {
	return c != nil && reflect.TypeOf(c).Implements(f.Client)
}

// Checkers composes the family's checkers for a run: porcupine on its commands, its promises, statistics.
func (f *Family) Checkers(c Checks, timeout time.Duration) (*checker.Linearizable, []checker.Checker) {
	lin := &checker.Linearizable{Label: "porcupine", Timeout: timeout, Model: f.Model,
		Convert: func(h *history.History) []porcupine.Operation { return f.Commands(Judged(h)) },
		Level:   RecordLevel}
	out := []checker.Checker{lin}
	for _, p := range append(f.Promises(c), checker.Stats{}) {
		out = append(out, clientRecords{p})
	}
	if f.Liveness {
		out = append(out, liveness(c)...) // whole history: a worker's renewals are wire records
	}
	return lin, out
}

// RecordLevel is the level of records porcupine judges: "wire", the lock commands decoded from the links,
// when the run recorded them completely (history.WireComplete); else "client", the records the clients
// wrote (the Go emulation's lock commands, or a worker's API calls). Never a mix for one client: a wire
// history missing a command (a release) could make a legal run look illegal, and one that is complete
// holds every command. A mixed run (--client W,go) taps only its workers' links: "wire+client" is their
// wire records with the Go clients' own command records.
func RecordLevel(h *history.History) string {
	switch {
	case !h.WireComplete():
		return "client"
	case h.WireClients() != nil:
		return history.WireSrc + "+client"
	}
	return history.WireSrc
}

// Judged is the history porcupine judges: its wire records (Src "wire") or the clients' own (Src ""),
// per client in a mixed run.
func Judged(h *history.History) *history.History {
	switch {
	case !h.WireComplete(): // keys a worker changed unseen are left out (history.WithoutUnseenKeys)
		return h.OnlySrc("").WithoutUnseenKeys()
	case h.WireClients() != nil:
		return h.CommandRecords(h.WireClients())
	}
	return h.OnlySrc(history.WireSrc)
}

// clientRecords runs a checker on the clients' own records: the promises and statistics are about what
// the application saw, and the wire records would count each command twice.
type clientRecords struct{ checker.Checker }

func (c clientRecords) Check(ctx context.Context, h *history.History) checker.Result {
	if _, whole := c.Checker.(checker.WholeHistory); whole {
		return c.Checker.Check(ctx, h) // it tells the two kinds of records apart itself
	}
	return c.Checker.Check(ctx, h.OnlySrc(""))
}

// Cite forwards to the checker's citation (checker.Citer), which reads the whole history (the proof's
// indices are h's) and picks the clients' own records itself.
func (c clientRecords) Cite(h *history.History, r checker.Result) (checker.Proof, bool) {
	if ci, ok := c.Checker.(checker.Citer); ok {
		return ci.Cite(h, r)
	}
	return checker.Proof{}, false
}

var families []*Family

// family registers a family; every family is one such value below. Names are unique: a history names its family.
func family(f *Family) *Family {
	for _, g := range families {
		if g.Name == f.Name {
			panic("kinds: family " + f.Name + " registered twice")
		}
	}
	families = append(families, f)
	return f
}

// The families. Their names are recorded in histories: never rename one.
var (
	Mutex = family(&Family{Name: "mutex", Client: reflect.TypeFor[locks.MutexClient](), Liveness: true,
		Workload: mutexWorkload(false), Model: checker.MutexModel, Commands: checker.MutexOps,
		Promises: func(c Checks) []checker.Checker {
			out := []checker.Checker{checker.Exclusion{Fenced: c.Fenced}}
			if !c.Fair { // a fair unlock answers 1 for a lock that is gone: no loss signal to judge there
				out = append(out, checker.ToldOfLoss{})
			}
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
			return out
		}})
	RW = family(&Family{Name: "rwlock", Client: reflect.TypeFor[locks.RWClient](), Leases: LeasePerHold,
		Workload: mutexWorkload(true), Model: checker.RWModel, Commands: commands("acquire", "release", "renew"),
		Promises: func(Checks) []checker.Checker { return []checker.Checker{checker.Exclusion{}} }})
	Semaphore = family(&Family{Name: "semaphore", Client: reflect.TypeFor[locks.SemaphoreClient](), Counted: true,
		Workload: semaphoreWorkload(false), Model: checker.SemaphoreModel,
		Commands: commands("setPermits", "acquire", "release", "available"), Promises: permitPromises})
	Expirable = family(&Family{Name: "expirable-semaphore", Client: reflect.TypeFor[locks.ExpirableClient](), Counted: true,
		Workload: semaphoreWorkload(true), Model: checker.PESModel,
		Commands: commands("setPermits", "acquire", "release", "available"), Promises: permitPromises})
	Latch = family(&Family{Name: "latch", Client: reflect.TypeFor[locks.LatchClient](),
		Workload: latchWorkload, Model: checker.LatchModel, Commands: commands("setCount", "countDown", "getCount"),
		Promises: func(Checks) []checker.Checker { return []checker.Checker{checker.LatchAwaits{}} }})
)

// Families lists the families in registration order.
func Families() []*Family { return append([]*Family(nil), families...) }

// FamilyNamed finds a family by its recorded name.
func FamilyNamed(name string) (*Family, error) {
	var names []string
	for _, f := range families {
		if f.Name == name {
			return f, nil
		}
		names = append(names, f.Name)
	}
	return nil, fmt.Errorf("unknown lock family %q (have: %s)", name, strings.Join(names, ", "))
}

func commands(fs ...string) func(*history.History) []porcupine.Operation {
	return func(h *history.History) []porcupine.Operation { return checker.Commands(h, fs...) }
}

func permitPromises(c Checks) []checker.Checker {
	return []checker.Checker{checker.Exclusion{Capacity: int(c.Permits)}, checker.Quiescence{Permits: c.Permits}}
}

// mutexWorkload drives mutexes and multi locks (a group of keys), or with rw read-write locks.
func mutexWorkload(rw bool) func(k *Kind, p Params) (Workload, error) {
	return func(k *Kind, p Params) (Workload, error) {
		read, err := readShare(p.Readers) // checked for every mutex-like lock, as before families were values
		if err != nil {
			return nil, err
		}
		group := 1
		if k.Group {
			group = p.Group
		}
		w := workloads.Mutex{Keys: k.KeyCount(p), Group: group, Wait: p.Wait, WaitTo: p.WaitTo, Lease: p.Lease,
			LeaseTo: p.LeaseTo, Threads: p.Threads, Hold: p.Hold, Reentry: p.Reentry, Reentrant: k.Reentrant, RW: rw,
			ReadRatio: read, Seed: p.Seed, Extend: k.AppExtends && !p.NoExtend, OnLost: p.OnLost, CrossThread: p.CrossThread,
			ForceUnlock: p.ForceUnlock}
		if err := w.Validate(); err != nil {
			return nil, err
		}
		return func(ctx context.Context, stop <-chan struct{}, cs []locks.Client, rec *history.Recorder) {
			w.Run(ctx, stop, cs, rec, workloads.NewResource(rec))
		}, nil
	}
}

func semaphoreWorkload(expirable bool) func(k *Kind, p Params) (Workload, error) {
	return func(k *Kind, p Params) (Workload, error) {
		lease, leaseTo := p.Lease, p.LeaseTo
		if expirable && lease <= 0 && leaseTo <= 0 {
			lease = p.Watchdog // permits get a lease unless told otherwise
		}
		w := workloads.Semaphore{Keys: k.KeyCount(p), Permits: p.Permits, Wait: p.Wait, WaitTo: p.WaitTo, Lease: lease,
			LeaseTo: leaseTo, Threads: p.Threads, Hold: p.Hold, Expirable: expirable, Seed: p.Seed}
		if err := w.Validate(); err != nil {
			return nil, err
		}
		return func(ctx context.Context, stop <-chan struct{}, cs []locks.Client, rec *history.Recorder) {
			w.Run(ctx, stop, cs, rec, workloads.NewResource(rec))
		}, nil
	}
}

func latchWorkload(_ *Kind, p Params) (Workload, error) {
	w := workloads.Latch{Count: p.Count, Wait: p.Wait, Hold: p.Hold, Seed: p.Seed, Threads: p.Threads}
	if err := w.Validate(p.Clients); err != nil {
		return nil, err
	}
	return func(ctx context.Context, stop <-chan struct{}, cs []locks.Client, rec *history.Recorder) {
		w.Run(ctx, stop, cs, rec)
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
