package wire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	porc "github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/network"
	"github.com/lockcheck/lockcheck/network/wire"
	"github.com/lockcheck/lockcheck/node"
	"github.com/redis/go-redis/v9"
)

// rig is one redis-server, and per client a toxiproxy link whose upstream is a wire tap: client -> proxy
// -> tap -> node, as a runner would wire a worker's links. The emulation's own records (api) and the
// wire's (wire) go to separate histories on one clock.
type rig struct {
	node      *node.Node
	proxies   *network.Proxies
	links     map[string]*network.Link
	sess      *wire.Session
	apiBuf    bytes.Buffer
	wireBuf   bytes.Buffer
	api, wrec *history.Recorder
	scripts   *locks.Scripts
}

func newRig(t testing.TB, scriptDir string, clients ...string) *rig {
	return newRigOn(t, redistest.Start(t, node.PersistNone), scriptDir, false, clients...)
}

// newRigOn is newRig in front of a node the test started; setNX maps plain SET NX PX (Table.SetNX).
func newRigOn(t testing.TB, n *node.Node, scriptDir string, setNX bool, clients ...string) *rig {
	r := &rig{node: n, proxies: network.New(), links: map[string]*network.Link{}}
	t.Cleanup(r.proxies.Close)
	clock := history.NewClock()
	r.api = history.NewRecorder(&r.apiBuf, clock)
	r.wrec = history.NewRecorder(&r.wireBuf, clock)
	table, err := wire.NewTable()
	if err != nil {
		t.Fatal(err)
	}
	if r.scripts, err = locks.LoadScripts("redisson", scriptDir); err != nil {
		t.Fatal(err)
	}
	locks.MapScripts(table, r.scripts)
	table.SetNX = setNX
	r.sess = wire.NewSession(r.wrec, clock, table)
	t.Cleanup(r.sess.Close)
	for _, c := range clients {
		front, err := r.sess.Front(r.node.Addr(), c, "n1")
		if err != nil {
			t.Fatal(err)
		}
		if r.links[c], err = r.proxies.Add(c+"->n1", front); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *rig) client(t *testing.T, name string, cfg locks.RedissonConfig) *locks.Redisson {
	c := locks.NewRedisson(name, locks.ClientConfig{Addr: r.links[name].Addr(), Password: r.node.Password()}, cfg, r.scripts, r.api)
	t.Cleanup(func() { c.Close() })
	return c
}

func read(t *testing.T, b *bytes.Buffer) *history.History {
	t.Helper()
	h, err := history.Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// key of a lock command for comparison: what it was and what came of it.
func key(o history.Operation) string {
	lease := o.Invoke.Args["lease_ms"]
	if o.Invoke.F == "release" && o.Invoke.Args["read"] == 1 {
		lease = -1 // a read unlock does not send its lease; the emulation records the one it keeps
	}
	s := fmt.Sprintf("%s %s %s %s t%d lease_ms=%d attempt=%d read=%d -> %s", o.Invoke.Client, o.Invoke.F, o.Invoke.Key,
		o.Invoke.Owner, o.Invoke.Thread, lease, o.Invoke.Args["attempt"], o.Invoke.Args["read"], o.Outcome())
	if o.Complete != nil && o.Complete.Value != nil {
		s += fmt.Sprint(" ", *o.Complete.Value)
	}
	if o.Complete != nil && o.Complete.Args["nosync"] == 1 {
		s += " nosync"
	}
	return s
}

func porcupine(t *testing.T, h *history.History) checker.Result {
	l := &checker.Linearizable{Label: "porcupine", Model: checker.MutexModel, Convert: checker.MutexOps, Timeout: 30 * time.Second}
	return l.Check(context.Background(), h)
}

// The emulation's RLock, driven by three clients of two threads each with re-entry, leases, the watchdog
// and unlocks by non-owners, records its lock commands itself; the wire tap on its links must record the
// same commands (client, F, key, owner, thread, lease, attempt, outcome, value), each inside the interval of
// its API record, and porcupine and the lost-lock checker must judge the wire history valid.
func TestWireMatchesEmulation(t *testing.T) {
	clients := []string{"c1", "c2", "c3"}
	r := newRig(t, "", clients...)
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = 2 * time.Second
	cfg.WatchdogTimeout = 600 * time.Millisecond // renewals every 200 ms
	keys := []string{"k1", "k2"}
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	stop := time.Now().Add(2 * time.Second)
	var cs []*locks.Redisson
	for i, name := range clients {
		c := r.client(t, name, cfg)
		cs = append(cs, c)
		for th := int64(1); th <= 2; th++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(th)))
				for time.Now().Before(stop) {
					l := c.Lock(keys[rng.IntN(len(keys))], th)
					lease := time.Duration(0)
					if rng.IntN(2) == 0 {
						lease = 2 * time.Second
					}
					if rng.IntN(8) == 0 { // unlock what it does not hold: "not held"
						_ = l.Unlock(ctx)
						continue
					}
					ok, err := l.TryLock(ctx, 300*time.Millisecond, lease)
					if err != nil || !ok {
						continue
					}
					holds := 1
					if rng.IntN(3) == 0 {
						if ok, _ := l.TryLock(ctx, 0, lease); ok {
							holds++
						}
					}
					time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
					for range holds {
						if err := l.Unlock(ctx); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		// A descheduled client can let a lease lapse (not held) or time out: both sides record that
		// alike, and the comparison below is the test.
		t.Logf("%d unlocks failed, e.g. %v", len(errs), errs[0])
	}
	for _, c := range cs { // stop the watchdogs: no command in flight, nothing more recorded
		c.Close()
	}
	r.sess.Close() // waits for every forwarded connection to end

	api, wh := read(t, &r.apiBuf), read(t, &r.wireBuf)
	if len(api.Ops) < 30 {
		t.Fatalf("only %d lock commands: the workload did not run", len(api.Ops))
	}

	fs, noscript := sameCommands(t, api, wh)
	for _, f := range []string{"acquire/ok", "acquire/fail", "release/ok", "release/fail", "renew/ok"} {
		if fs[f] == 0 {
			t.Fatalf("the workload recorded no %s on the wire (%v): the comparison proves less than it claims", f, fs)
		}
	}
	if st := r.sess.Stats(); len(st.Unmapped) > 0 || len(st.GaveUp) > 0 {
		t.Fatalf("the session missed commands: %+v", st)
	}
	if res := porcupine(t, wh); res.Valid != checker.Valid {
		t.Fatalf("porcupine on the wire history: %v %s %s", res.Valid, res.Summary, res.Violation)
	}
	if res := (checker.LostLock{}).Check(ctx, wh); res.Valid == checker.Invalid {
		t.Fatalf("lost-lock on the wire history: %s", res.Violation)
	}
	t.Logf("%d lock commands recorded on the wire: %v (%d NOSCRIPT)", len(wh.Ops), fs, noscript)
}

// sameCommands checks that the wire recorded the same lock commands as the API (key), each inside the
// interval of its API record; it returns the wire's counts by f/outcome and how many NOSCRIPT refusals it
// left out.
func sameCommands(t *testing.T, api, wh *history.History) (map[string]int, int) {
	t.Helper()
	// Pair every wire record with an API record of the same command whose interval contains it.
	byKey := map[string][]history.Operation{}
	for _, o := range api.Ops {
		byKey[key(o)] = append(byKey[key(o)], o)
	}
	var unmatched []string
	fs := map[string]int{}
	noscript := 0
	for _, w := range wh.Ops {
		if w.Invoke.Src != wire.Src {
			t.Fatalf("a wire record without src: %+v", w.Invoke)
		}
		if w.Complete != nil && w.Complete.Type == history.Fail && w.Complete.Value == nil {
			// go-redis tries EVALSHA first: NOSCRIPT never ran, and the EVAL that follows is the command
			if !strings.HasPrefix(w.Complete.Error, "NOSCRIPT") {
				t.Fatalf("a command refused with %q on a fault-free run", w.Complete.Error)
			}
			noscript++
			continue
		}
		fs[w.Invoke.F+"/"+string(w.Outcome())]++
		cands := byKey[key(w)]
		found := -1
		for i, a := range cands {
			if a.Invoke.Time <= w.Invoke.Time && w.Complete != nil && a.Complete != nil && w.Complete.Time <= a.Complete.Time {
				found = i
				break
			}
		}
		if found < 0 {
			unmatched = append(unmatched, key(w))
			continue
		}
		byKey[key(w)] = append(cands[:found], cands[found+1:]...)
	}
	var left []string
	for _, l := range byKey {
		for _, o := range l {
			left = append(left, key(o))
		}
	}
	sort.Strings(left)
	if len(unmatched) > 0 || len(left) > 0 {
		t.Fatalf("%d wire records match no API record (first %v); %d API records have no wire record (first %v)",
			len(unmatched), first(unmatched), len(left), first(left))
	}
	return fs, noscript
}

func first(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// A broken release (unconditional, as the naive lock's DEL) lets a client that does not hold the lock free
// it. From the wire records alone, porcupine finds no legal order.
func TestWireCatchesUnconditionalRelease(t *testing.T) {
	dir := t.TempDir()
	broken := "redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); return 1\n"
	if err := os.WriteFile(filepath.Join(dir, "release.lua"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, dir, "c1", "c2")
	ctx := context.Background()
	a := r.client(t, "c1", locks.DefaultRedissonConfig()).Lock("k", 1)
	b := r.client(t, "c2", locks.DefaultRedissonConfig()).Lock("k", 1)
	if ok, err := a.TryLock(ctx, 0, 10*time.Second); !ok || err != nil {
		t.Fatalf("c1 acquire: %v %v", ok, err)
	}
	if err := b.Unlock(ctx); err != nil { // the defect: c2 frees c1's lock
		t.Fatalf("the broken unlock refused: %v", err)
	}
	if ok, err := b.TryLock(ctx, 0, 10*time.Second); !ok || err != nil {
		t.Fatalf("c2 acquire after its stray unlock: %v %v", ok, err)
	}
	r.sess.Close()
	wh := read(t, &r.wireBuf)
	if len(wh.Ops) != 5 { // each script's first call is an EVALSHA answered NOSCRIPT (go-redis), then its EVAL
		t.Fatalf("%d wire records, want 5", len(wh.Ops))
	}
	if res := porcupine(t, wh); res.Valid != checker.Invalid {
		t.Fatalf("porcupine judged the broken release %v: %s", res.Valid, res.Summary)
	}
	// The same script with the shipped release is judged valid: the verdict comes from the defect.
	r2 := newRig(t, "", "c1", "c2")
	a2 := r2.client(t, "c1", locks.DefaultRedissonConfig()).Lock("k", 1)
	b2 := r2.client(t, "c2", locks.DefaultRedissonConfig()).Lock("k", 1)
	if ok, _ := a2.TryLock(ctx, 0, 10*time.Second); !ok {
		t.Fatal("c1 acquire")
	}
	if err := b2.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("a correct unlock by a non-owner: %v", err)
	}
	if ok, _ := b2.TryLock(ctx, 0, 10*time.Second); ok {
		t.Fatal("c2 got a held lock")
	}
	r2.sess.Close()
	if res := porcupine(t, read(t, &r2.wireBuf)); res.Valid != checker.Valid {
		t.Fatalf("porcupine on the correct lock: %v %s", res.Valid, res.Violation)
	}
}

// Behind drop-replies the client never learns that its acquire ran (the API records unknown); the tap sits
// behind the toxic, sees the reply and records the grant.
func TestWireSeesRepliesTheClientLost(t *testing.T) {
	r := newRig(t, "", "c1")
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = 2 * time.Second
	c := r.client(t, "c1", cfg)
	l := c.Lock("k", 1)
	// Open the connection and load the script first: behind drop-replies a new connection's AUTH would
	// fail. (No unlock: its asynchronous latch DEL could take the pool's connection.)
	if ok, err := c.Lock("warm-up", 1).TryLock(context.Background(), 0, 10*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := r.links["c1"].DropReplies(); err != nil {
		t.Fatal(err)
	}
	ok, err := l.TryLock(context.Background(), 0, 10*time.Second)
	if ok || err == nil {
		t.Fatalf("acquire behind drop-replies: %v %v", ok, err)
	}
	if err := r.links["c1"].Heal(); err != nil {
		t.Fatal(err)
	}
	r.sess.Close()
	api, wh := read(t, &r.apiBuf), read(t, &r.wireBuf)
	if n := len(api.Ops); n != 2 || api.Ops[n-1].Outcome() != history.Unknown {
		t.Fatalf("api: %+v", api.Ops)
	}
	if n := len(wh.Ops); n < 2 || wh.Ops[n-1].Outcome() != history.Ok || wh.Ops[n-1].Invoke.Key != "k" {
		t.Fatalf("wire: %d ops, last %v", n, key(wh.Ops[n-1]))
	}
}

// A script sent inside MULTI/EXEC by go-redis is recorded with EXEC's result.
func TestWireTransaction(t *testing.T) {
	r := newRig(t, "", "c1")
	c := redis.NewClient(&redis.Options{Addr: r.links["c1"].Addr(), Password: r.node.Password(), MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Eval(ctx, r.scripts.Source("acquire"), []string{"k"}, 5000, "u:3")
		p.Eval(ctx, r.scripts.Source("acquire"), []string{"k"}, 5000, "v:4")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	c.Close()
	r.sess.Close()
	wh := read(t, &r.wireBuf)
	var got []string
	for _, o := range wh.Ops {
		got = append(got, fmt.Sprintf("%s %s %s", o.Invoke.Owner, o.Invoke.F, o.Outcome()))
	}
	if fmt.Sprint(got) != "[u:3 acquire ok v:4 acquire fail]" {
		t.Fatalf("recorded %v", got)
	}
}

// With a replica the emulation sends each lock script and a WAIT in one pipeline. While the replica
// acknowledges, the wire records plain grants; once it is frozen, WAIT answers 0 after its timeout and
// both the emulation and the wire record the script as applied without a replica (nosync), then the
// emulation's compensating unlock the same way.
func TestWireWaitNoSyncMatchesEmulation(t *testing.T) {
	primary := redistest.Start(t, node.PersistNone)
	replica := redistest.StartConfig(t, node.Config{Name: "n2", Password: primary.Password(), Extra: []string{
		fmt.Sprintf("replicaof 127.0.0.1 %d", primary.Port()), "masterauth " + primary.Password()}})
	admin := redistest.Client(t, primary.Addr(), primary.Password())
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(admin.Info(ctx, "replication").Val(), "connected_slaves:1") {
		if time.Now().After(deadline) {
			t.Fatal("the replica never connected")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := newRigOn(t, primary, "", false, "c1")
	cfg := locks.DefaultRedissonConfig()
	cfg.SyncRetries, cfg.SlavesSyncTimeout = 0, time.Second
	c := r.client(t, "c1", cfg)
	l := c.Lock("k", 1)
	synced := 0
	for range 3 {
		// On a loaded machine even a healthy replica may miss WAIT's timeout: then both sides record nosync,
		// which the comparison below covers as well.
		ok, err := l.TryLock(ctx, 0, 5*time.Second)
		if err != nil && !errors.Is(err, locks.ErrNoSync) {
			t.Fatalf("acquire with a healthy replica: %v", err)
		}
		if ok {
			synced++
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if synced == 0 {
		t.Fatal("no acquire was acknowledged by the healthy replica")
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	if ok, err := l.TryLock(ctx, 0, 5*time.Second); ok || !errors.Is(err, locks.ErrNoSync) {
		t.Fatalf("acquire with a frozen replica: %v %v", ok, err)
	}
	c.Close()
	r.sess.Close()
	api, wh := read(t, &r.apiBuf), read(t, &r.wireBuf)
	fs, _ := sameCommands(t, api, wh)
	nosync := 0
	for _, o := range wh.Ops {
		if o.Complete != nil && o.Complete.Args["nosync"] == 1 {
			nosync++
		}
	}
	if nosync < 2 || fs["acquire/ok"] < synced+1 {
		t.Fatalf("%d nosync records (want at least the frozen acquire and its undo), counts %v", nosync, fs)
	}
}

// The emulation's RReadWriteLock (readers, writers, re-entry, the watchdog renewing both halves, unlocks
// by non-holders): the wire records the same commands, and the read-write model judges them valid.
func TestWireMatchesEmulationRW(t *testing.T) {
	clients := []string{"c1", "c2", "c3"}
	r := newRig(t, "", clients...)
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = 2 * time.Second
	cfg.WatchdogTimeout = 600 * time.Millisecond
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	stop := time.Now().Add(2 * time.Second)
	var cs []*locks.Redisson
	for i, name := range clients {
		c := r.client(t, name, cfg)
		cs = append(cs, c)
		for th := int64(1); th <= 2; th++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(th)))
				for time.Now().Before(stop) {
					l := c.WriteLock("rw", th)
					if rng.IntN(3) > 0 {
						l = c.ReadLock("rw", th, false)
					}
					lease := time.Duration(0)
					if rng.IntN(2) == 0 {
						lease = 2 * time.Second
					}
					if rng.IntN(8) == 0 {
						_ = l.Unlock(ctx) // usually "not held"
						continue
					}
					if ok, err := l.TryLock(ctx, 300*time.Millisecond, lease); err != nil || !ok {
						continue
					}
					holds := 1
					if rng.IntN(3) == 0 {
						if ok, _ := l.TryLock(ctx, 0, lease); ok {
							holds++
						}
					}
					time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
					for range holds {
						if err := l.Unlock(ctx); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		// A descheduled client can let a lease lapse (not held) or time out: both sides record that
		// alike, and the comparison below is the test.
		t.Logf("%d unlocks failed, e.g. %v", len(errs), errs[0])
	}
	for _, c := range cs {
		c.Close()
	}
	r.sess.Close()
	api, wh := read(t, &r.apiBuf), read(t, &r.wireBuf)
	fs, _ := sameCommands(t, api, wh)
	reads := 0
	for _, o := range wh.Ops {
		if o.Invoke.Args["read"] == 1 && o.Outcome() == history.Ok {
			reads++
		}
	}
	if reads == 0 || fs["acquire/ok"] == 0 || fs["release/ok"] == 0 || fs["renew/ok"] == 0 {
		t.Fatalf("the workload did not cover reads, writes and renewals: %v, %d read", fs, reads)
	}
	if st := r.sess.Stats(); len(st.Unmapped) > 0 || len(st.GaveUp) > 0 {
		t.Fatalf("the session missed commands: %+v", st)
	}
	lin := &checker.Linearizable{Label: "porcupine", Model: checker.RWModel, Timeout: 30 * time.Second,
		Convert: func(h *history.History) []porc.Operation { return checker.Commands(h, "acquire", "release", "renew") }}
	if res := lin.Check(ctx, wh); res.Valid != checker.Valid {
		t.Fatalf("the read-write model on the wire history: %v %s %s", res.Valid, res.Summary, res.Violation)
	}
	t.Logf("%d commands on the wire: %v, %d read", len(wh.Ops), fs, reads)
}

// Bytes that are not RESP make the tap stop following that connection and say so in the session's
// stats; it keeps forwarding (the node answers as it would without the tap), and other connections are
// still recorded.
func TestWireGivesUpOnGarbageAndSaysSo(t *testing.T) {
	r := newRig(t, "", "c1")
	conn, err := net.Dial("tcp", r.links["c1"].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("*1\r\n:5\r\n")); err != nil { // an array of an integer: no command
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, _ := io.ReadAll(conn) // Redis answers a protocol error and closes
	if !strings.Contains(string(reply), "Protocol error") {
		t.Fatalf("the node's answer did not come through the tap: %q", reply)
	}
	ctx := context.Background()
	l := r.client(t, "c1", locks.DefaultRedissonConfig()).Lock("k", 1)
	if ok, err := l.TryLock(ctx, 0, time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r.sess.Close()
	st := r.sess.Stats()
	if len(st.GaveUp) != 1 || !strings.Contains(st.GaveUp[0], "c1->n1#1: client sent a command that is not an array of bulk strings") {
		t.Fatalf("gave up: %q", st.GaveUp)
	}
	if p := st.Problem(); !strings.HasPrefix(p, "wire: 1 connections not followed to the end (c1->n1#1: ") {
		t.Fatalf("problem line %q", p)
	}
	wh := read(t, &r.wireBuf)
	if n := len(wh.Ops); n == 0 || wh.Ops[n-1].Outcome() != history.Ok {
		t.Fatalf("the next connection was not recorded: %d ops", n)
	}
}

// The emulation's RFairLock (waiters queue with their slots, some give up and leave the queue, unlocks
// answer for the head waiter): the wire records the same commands, and the mutex model judges them valid.
func TestWireMatchesEmulationFair(t *testing.T) {
	clients := []string{"c1", "c2", "c3"}
	r := newRig(t, "", clients...)
	cfg := locks.DefaultRedissonConfig()
	cfg.Timeout = 2 * time.Second
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	var cs []*locks.Redisson
	for i, name := range clients {
		c := r.client(t, name, cfg)
		cs = append(cs, c)
		for th := int64(1); th <= 2; th++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(th)))
				for time.Now().Before(stop) {
					l := c.FairLock("fair", th, false)
					if ok, err := l.TryLock(ctx, time.Duration(rng.IntN(100))*time.Millisecond, 2*time.Second); err != nil || !ok {
						continue
					}
					time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
					_ = l.Unlock(ctx)
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range cs {
		c.Close()
	}
	r.sess.Close()
	api, wh := read(t, &r.apiBuf), read(t, &r.wireBuf)
	fs, _ := sameCommands(t, api, wh)
	if fs["acquire/ok"] == 0 || fs["acquire/fail"] == 0 || fs["dequeue/ok"] == 0 || fs["release/ok"] == 0 {
		t.Fatalf("the workload did not queue, give up and release: %v", fs)
	}
	if st := r.sess.Stats(); len(st.Unmapped) > 0 || len(st.GaveUp) > 0 {
		t.Fatalf("the session missed commands: %+v", st)
	}
	if res := porcupine(t, wh); res.Valid != checker.Valid {
		t.Fatalf("porcupine on the wire history: %v %s %s", res.Valid, res.Summary, res.Violation)
	}
	t.Logf("%d commands on the wire: %v", len(wh.Ops), fs)
}

// The Redis docs' Redlock (lockcheck's redlock-spec, here on one master): SET NX PX and a
// compare-and-delete script. With Table.SetNX the wire records the same commands as the emulation, judged
// valid; the naive lock's plain DEL cannot be attributed and is counted as unmapped instead.
func TestWireMatchesEmulationSetNX(t *testing.T) {
	clients := []string{"c1", "c2", "c3"}
	r := newRigOn(t, redistest.Start(t, node.PersistNone), "", true, append(clients, "c4")...)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	var cs []*locks.SpecClient
	for i, name := range clients {
		c := locks.NewSpecClient(name, []string{"n1"}, []string{r.links[name].Addr()}, r.node.Password(), 2*time.Second,
			time.Second, r.scripts, r.api, false, nil)
		cs = append(cs, c)
		for th := int64(1); th <= 2; th++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(th)))
				l := c.Mutex([]string{"spec"}, th)
				for time.Now().Before(stop) {
					if ok, err := l.TryLock(ctx, 200*time.Millisecond, time.Second); err != nil || !ok {
						continue
					}
					time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
					_ = l.Unlock(ctx)
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range cs {
		c.Close()
	}
	naive := locks.NewNaiveClient("c4", "naive-id", locks.ClientConfig{Addr: r.links["c4"].Addr(), Password: r.node.Password()},
		time.Second, history.NewRecorder(io.Discard, history.NewClock()))
	nl := naive.Lock("naive", 1)
	if ok, err := nl.TryLock(ctx, 0, time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := nl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	naive.Close()
	r.sess.Close()
	api, wh := read(t, &r.apiBuf), read(t, &r.wireBuf)
	// the naive client's acquire is on the wire, not in the api history: leave it out of the comparison
	var spec history.History
	for _, o := range wh.Ops {
		if o.Invoke.Key == "spec" {
			spec.Ops = append(spec.Ops, o)
		}
	}
	fs, _ := sameCommands(t, api, &spec)
	if fs["acquire/ok"] == 0 || fs["acquire/fail"] == 0 || fs["release/ok"] == 0 {
		t.Fatalf("the workload did not contend: %v", fs)
	}
	if res := porcupine(t, &spec); res.Valid != checker.Valid {
		t.Fatalf("porcupine on the wire history: %v %s %s", res.Valid, res.Summary, res.Violation)
	}
	if st := r.sess.Stats(); st.Unmapped["DEL"] != 1 || len(st.Unmapped) != 1 ||
		st.Problem() != "wire: calls of unknown lock scripts not recorded: DEL ×1" {
		t.Fatalf("unmapped %v (%q), want only the naive lock's DEL", st.Unmapped, st.Problem())
	}
}

// A RESP3 client (go-redis negotiates it with HELLO 3): nulls, maps and pub/sub pushes are followed, and
// the lock commands recorded as with RESP2.
func TestWireRESP3(t *testing.T) {
	r := newRig(t, "", "c1")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: r.links["c1"].Addr(), Password: r.node.Password(), Protocol: 3,
		MaxRetries: -1, DisableIdentity: true, PoolSize: 1})
	defer c.Close()
	ps := c.Subscribe(ctx, "ch")
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	acq := redis.NewScript(r.scripts.Source("acquire"))
	if err := acq.Run(ctx, c, []string{"k"}, 5000, "u:1").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("acquire: %v", err)
	}
	if err := c.Publish(ctx, "ch", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "hello" {
		t.Fatalf("message %v %v", m, err)
	}
	if n, err := acq.Run(ctx, c, []string{"k"}, 5000, "v:2").Int64(); err != nil || n <= 0 {
		t.Fatalf("refusal: %v %v", n, err)
	}
	if err := c.HGetAll(ctx, "k").Err(); err != nil { // a RESP3 map reply
		t.Fatal(err)
	}
	ps.Close()
	c.Close()
	r.sess.Close()
	if st := r.sess.Stats(); len(st.GaveUp) > 0 {
		t.Fatalf("gave up: %v", st.GaveUp)
	}
	var got []string
	for _, o := range read(t, &r.wireBuf).Ops {
		if o.Complete != nil && o.Complete.Error != "" {
			continue // NOSCRIPT before the EVAL
		}
		got = append(got, fmt.Sprintf("%s %s %s", o.Invoke.Owner, o.Invoke.F, o.Outcome()))
	}
	if fmt.Sprint(got) != "[u:1 acquire ok v:2 acquire fail]" {
		t.Fatalf("recorded %v", got)
	}
}

// RESP3 pushes on a connection that also carries commands (client-side caching invalidations) are not
// taken for replies.
func TestWireRESP3PushBetweenReplies(t *testing.T) {
	r := newRig(t, "", "c1")
	conn, err := net.Dial("tcp", r.links["c1"].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dec := wire.NewDecoder(false)
	var got []wire.Value
	// send writes commands and reads until n replies (and any pushes) have come back.
	send := func(n int, cmds ...[]string) {
		for _, c := range cmds {
			fmt.Fprintf(conn, "*%d\r\n", len(c))
			for _, a := range c {
				fmt.Fprintf(conn, "$%d\r\n%s\r\n", len(a), a)
			}
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		for replies := 0; replies < n; {
			k, err := conn.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if err := dec.Feed(buf[:k], func(v wire.Value) {
				got = append(got, v)
				if v.Kind != wire.Push {
					replies++
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(3, []string{"HELLO", "3", "AUTH", "default", r.node.Password()}, []string{"CLIENT", "TRACKING", "ON"}, []string{"GET", "k"})
	admin := redistest.Client(t, r.node.Addr(), r.node.Password())
	if err := admin.Set(context.Background(), "k", "x", 0).Err(); err != nil { // invalidates k: a push to conn
		t.Fatal(err)
	}
	send(1, []string{"EVAL", r.scripts.Source("acquire"), "1", "L", "5000", "u:1"})
	pushes := 0
	for _, v := range got {
		if v.Kind == wire.Push {
			pushes++
		}
	}
	if pushes == 0 {
		t.Fatal("no invalidation push came: the test did not test pushes")
	}
	conn.Close()
	r.sess.Close()
	if st := r.sess.Stats(); len(st.GaveUp) > 0 {
		t.Fatalf("gave up: %v", st.GaveUp)
	}
	wh := read(t, &r.wireBuf)
	if len(wh.Ops) != 1 || wh.Ops[0].Outcome() != history.Ok || wh.Ops[0].Invoke.Owner != "u:1" {
		t.Fatalf("recorded %d ops", len(wh.Ops))
	}
}
