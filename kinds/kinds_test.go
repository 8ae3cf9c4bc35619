package kinds_test

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/workloads"
)

func names(f *kinds.Family, c kinds.Checks) []string {
	_, cs := f.Checkers(c, time.Second)
	var out []string
	for _, x := range cs {
		out = append(out, x.Name())
	}
	return out
}

// Each family composes the checkers its promise needs from the recorded checks, and no others.
func TestFamilyCheckers(t *testing.T) {
	for _, tc := range []struct {
		family *kinds.Family
		checks kinds.Checks
		want   []string
	}{
		{kinds.Mutex, kinds.Checks{}, []string{"porcupine", "mutual-exclusion", "told-of-loss", "lost-lock", "stats"}},
		{kinds.Mutex, kinds.Checks{Fenced: true}, []string{"porcupine", "mutual-exclusion", "told-of-loss", "lost-lock", "fencing-tokens", "stats"}},
		{kinds.Mutex, kinds.Checks{Fair: true}, []string{"porcupine", "mutual-exclusion", "fifo", "stats"}},
		{kinds.Mutex, kinds.Checks{Group: true}, []string{"porcupine", "mutual-exclusion", "told-of-loss", "lost-lock", "all-or-nothing", "stats"}},
		{kinds.Mutex, kinds.Checks{Members: true}, []string{"porcupine", "mutual-exclusion", "told-of-loss", "stats"}},
		{kinds.RW, kinds.Checks{}, []string{"porcupine", "mutual-exclusion", "stats"}},
		{kinds.Semaphore, kinds.Checks{Permits: 2}, []string{"porcupine", "mutual-exclusion", "permits-at-rest", "stats"}},
		{kinds.Expirable, kinds.Checks{Permits: 2}, []string{"porcupine", "mutual-exclusion", "permits-at-rest", "stats"}},
		{kinds.Latch, kinds.Checks{}, []string{"porcupine", "latch", "stats"}},
	} {
		if got := names(tc.family, tc.checks); !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.family.Name, tc.checks, got, tc.want)
		}
	}
}

// A history names its family by string; every family is found by its name, and an unknown one is an error.
func TestFamilyNames(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range kinds.Families() {
		if seen[f.Name] {
			t.Errorf("family %s registered twice", f.Name)
		}
		seen[f.Name] = true
		if got, err := kinds.FamilyNamed(f.Name); err != nil || got != f {
			t.Errorf("FamilyNamed(%q) = %v, %v", f.Name, got, err)
		}
	}
	if len(seen) != 5 {
		t.Errorf("%d families, want 5: %v", len(seen), seen)
	}
	if _, err := kinds.FamilyNamed("queue"); err == nil {
		t.Error("an unknown family was found")
	}
}

// A kind's checks carry what its checkers need: permits for counted families, members for RedLock.
func TestKindChecks(t *testing.T) {
	p := kinds.Params{Permits: 3}
	for name, want := range map[string]kinds.Checks{
		"reentrant":   {Family: "mutex"},
		"fenced":      {Family: "mutex", Fenced: true},
		"fair-broken": {Family: "mutex", Fair: true},
		"multi":       {Family: "mutex", Group: true},
		"redlock":     {Family: "mutex", Members: true},
		"rwlock":      {Family: "rwlock"},
		"semaphore":   {Family: "semaphore", Permits: 3},
		"latch":       {Family: "latch"},
	} {
		k, err := kinds.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Checks(p); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if _, err := kinds.Lookup("nope"); err == nil {
		t.Error("an unknown kind was found")
	}
}

// Workload options are checked by the family's constructor: a usage error, before anything starts.
func TestFamilyWorkloadsValidate(t *testing.T) {
	ok := kinds.Params{Clients: 8, Group: 2, Permits: 2, Count: 3, Wait: time.Second, Hold: workloads.Range{Max: time.Millisecond},
		Readers: "3:1", Watchdog: time.Second}
	for _, name := range kinds.KindNames() {
		k, _ := kinds.Lookup(name)
		if w, err := k.Family.Workload(k, ok); err != nil || w == nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, bad := range map[string]func(*kinds.Params){
		"reentrant": func(p *kinds.Params) { p.Readers = "lots" }, // checked for every mutex-like lock
		"multi":     func(p *kinds.Params) { p.Keys, p.Group = 2, 3 },
		"semaphore": func(p *kinds.Params) { p.Permits = 0 },
		"latch":     func(p *kinds.Params) { p.Count = 8 },
	} {
		p := ok
		bad(&p)
		k, _ := kinds.Lookup(name)
		if _, err := k.Family.Workload(k, p); err == nil {
			t.Errorf("%s accepted %+v", name, p)
		}
	}
}

// Every kind's client factory, against a real node, makes clients that implement the kind's family.
func TestEveryKindsClientsImplementItsFamily(t *testing.T) {
	n := redistest.Start(t, node.PersistNone)
	scripts, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(io.Discard, history.NewClock())
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = time.Second
	for _, name := range kinds.KindNames() {
		k, _ := kinds.Lookup(name)
		if k.WorkerOnly {
			if _, err := k.New(locks.Env{Client: "c1"}); err == nil {
				t.Errorf("%s: a worker-only kind made a Go client", name)
			}
			continue
		}
		c, err := k.New(locks.Env{Client: "c1", Addrs: []string{n.Addr(), n.Addr(), n.Addr()}, Password: n.Password(),
			Scripts: scripts, Redisson: cfg, Rec: rec, Gate: locks.NewGate()})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !k.Family.Accepts(c) {
			t.Errorf("%s: a %T is not a %s", name, c, k.Family.Client)
		}
		if name == "naive" && (kinds.RW.Accepts(c) || kinds.Latch.Accepts(c)) { // Accepts can say no
			t.Errorf("naive's %T passes as a read-write lock or a latch", c)
		}
		c.Close()
	}
}

// A kind whose family is not a registered one is refused at registration: its histories could not be judged.
func TestRegisterRefusesAnUnregisteredFamily(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registered a kind of an unregistered family")
		}
		if _, err := kinds.Lookup("orphan"); err == nil {
			t.Fatal("the refused kind is listed")
		}
	}()
	copied := *kinds.Mutex // same name, another value: not the registered family
	kinds.Register(kinds.Kind{Name: "orphan", Family: &copied, New: locks.NaiveClients})
}
