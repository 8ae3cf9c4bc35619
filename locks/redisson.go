package locks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/internal/bounded"
	"github.com/redis/go-redis/v9"
)

// RedissonConfig holds the Redisson settings that change lock behaviour (defaults are Redisson's).
type RedissonConfig struct {
	WatchdogTimeout   time.Duration // lockWatchdogTimeout, 30 s
	WatchdogBatch     int           // lockWatchdogBatchSize, 100
	RetryAttempts     int           // retryAttempts, 4: resends after a response timeout (replicated only)
	RetryDelayMin     time.Duration // retryDelay: EqualJitterDelay(1 s, 2 s) between attempts
	RetryDelayMax     time.Duration
	Timeout           time.Duration // per command (timeout, 3 s)
	CheckSyncedSlaves bool          // checkLockSyncedSlaves, true
	SlavesSyncTimeout time.Duration // slavesSyncTimeout, 1 s
	SyncRetries       int           // ServiceManager.execute retries on NoSync (retryAttempts, 4)
	// Gate freezes the client (client-pause) and skews its wall clock (client-clock), which the fair lock
	// and the expirable semaphore send to Redis. nil: never paused, the real clock.
	Gate *Gate
}

// DefaultRedissonConfig is Redisson's defaults.
func DefaultRedissonConfig() RedissonConfig {
	return RedissonConfig{WatchdogTimeout: 30 * time.Second, WatchdogBatch: 100, RetryAttempts: 4,
		RetryDelayMin: time.Second, RetryDelayMax: 2 * time.Second,
		Timeout: 3 * time.Second, CheckSyncedSlaves: true, SlavesSyncTimeout: time.Second, SyncRetries: 4}
}

// Redisson is one Redisson client instance: an id, a connection pool, one pub/sub connection shared by all
// its waiters, and one watchdog timer for all the locks it holds.
type Redisson struct {
	ID      string
	name    string // client name in the history (c1...)
	node    string // the node it talks to, in the history
	cfg     RedissonConfig
	rdb     redis.UniversalClient
	scripts *Scripts
	rec     Recorder
	resends int // how many times a synced lock write is sent again after a response timeout (resendsFor)

	pub  *publishMode
	subs *subscriptions
	wd   *watchdog

	conn     ClientConfig // how rdb was made: cluster nodes are dialed the same way
	slavesMu sync.Mutex
	slaves   map[string]int64 // cached connected_slaves by shard ("": the one master; on a cluster "slot N")
	nodesMu  sync.Mutex
	nodes    map[string]redis.UniversalClient // cluster: one client per master that served a lock script

	latchMu sync.Mutex
	latches map[string]string // unlock request id -> its latch key, until dropped

	losses LossSignals // the watchdog's word to the holders whose lock it found gone (RLock.LostSignal)
}

// NewRedisson connects a client instance named name (its ops are recorded under that name).
func NewRedisson(name string, conn ClientConfig, cfg RedissonConfig, scripts *Scripts, rec Recorder) *Redisson {
	return NewRedissonOn(name, "n1", conn, cfg, scripts, rec)
}

// NewRedissonOn is NewRedisson for a client of the named node (one Redisson instance per master, as a
// RedLock's users create them).
func NewRedissonOn(name, node string, conn ClientConfig, cfg RedissonConfig, scripts *Scripts, rec Recorder) *Redisson {
	conn.Timeout, conn.Gate = cfg.Timeout, cfg.Gate
	r := &Redisson{ID: uuid.NewString(), name: name, node: node, cfg: cfg, rdb: NewClient(conn), scripts: scripts, rec: rec,
		conn: conn, slaves: map[string]int64{}, nodes: map[string]redis.UniversalClient{}, resends: resendsFor(conn, cfg)}
	r.pub = newPublishMode(r.rdb)
	r.subs = newSubscriptions(r.rdb, r.pub)
	r.wd = newWatchdog(r)
	return r
}

func (r *Redisson) now() time.Time { return r.cfg.Gate.Now() }

// Gate is the client's pause gate and clock.
func (r *Redisson) Gate() *Gate { return r.cfg.Gate }

// closeWait bounds how long Close waits for the pub/sub connection: go-redis closes it under a lock its
// health check holds while it redials, which on a link that accepts and never answers lasts a command
// timeout per attempt.
const closeWait = 2 * time.Second

// Close stops the watchdog and closes every connection. The pools go first, so that a pub/sub redial in
// progress fails at once instead of holding the pub/sub connection's lock.
func (r *Redisson) Close() error {
	r.wd.close()
	r.nodesMu.Lock()
	for _, c := range r.nodes {
		c.Close()
	}
	r.nodesMu.Unlock()
	err := r.rdb.Close()
	bounded.Run(closeWait, r.subs.close)
	return err
}

// Lock returns the RLock called name for one thread of this client.
func (r *Redisson) Lock(name string, thread int64) *RLock {
	return &RLock{r: r, name: name, thread: thread, internalLease: r.cfg.WatchdogTimeout, acquire: "acquire"}
}

// FencedLock returns the RFencedLock called name: an RLock whose grants draw a token from
// redisson_lock_token:{name}. broken swaps in a script that hands out the same token again.
func (r *Redisson) FencedLock(name string, thread int64, broken bool) *RLock {
	l := r.Lock(name, thread)
	l.acquire = variant("fenced_acquire", broken)
	return l
}

// availableSlaves is Redisson's cached connected_slaves of the node at addr ("" for the client's one
// master), read from INFO replication on first use.
func (r *Redisson) availableSlaves(ctx context.Context, c redis.Cmdable, addr string) int64 {
	r.slavesMu.Lock()
	defer r.slavesMu.Unlock()
	if n, ok := r.slaves[addr]; ok {
		return n
	}
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0 // unknown: send without WAIT, and ask again next time
	}
	n := parseConnectedSlaves(info)
	r.slaves[addr] = n
	return n
}

// WaitError is a WAIT that failed after its script ran: the script's effect stands, whether it replicated
// is unknown, so the operation's outcome is unknown (never "did not run", whatever WAIT's error), and
// Redisson's executor resends the batch (RedisWaitException is a retry exception).
type WaitError struct{ Err error }

func (e *WaitError) Error() string  { return "wait: " + e.Err.Error() }
func (e *WaitError) Unwrap() error  { return e.Err }
func (e *WaitError) Definite() bool { return false }

func (r *Redisson) forgetSlaves(addr string) {
	r.slavesMu.Lock()
	delete(r.slaves, addr)
	r.slavesMu.Unlock()
}

func parseConnectedSlaves(info string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// eval runs a lock write the way Redisson's syncedEval does: where the node has replicas, EVAL and
// WAIT <replicas> <slavesSyncTimeout> go in one pipeline on one connection, and ErrNoSync is returned (with
// the script's reply) when no replica acknowledged.
func (r *Redisson) eval(ctx context.Context, script string, keys []string, args ...any) (any, error) {
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		return r.clusterEval(ctx, cc, script, keys, args...)
	}
	return r.evalOn(ctx, r.rdb, "", false, script, keys, args...)
}

// evalOn is eval on one node's client c (addr keys its replica count: the shard's); asking sends ASKING first.
func (r *Redisson) evalOn(ctx context.Context, c redis.UniversalClient, addr string, asking bool, script string,
	keys []string, args ...any) (any, error) {
	n := r.availableSlaves(ctx, c, addr)
	if n == 0 && !asking {
		res, err := r.scripts.Get(script).Run(ctx, c, keys, args...).Result()
		if redisNil(err) {
			return nil, nil
		}
		return res, err
	}
	pipe := c.Pipeline()
	if asking {
		pipe.Do(ctx, "asking")
	}
	ev := pipe.Eval(ctx, r.scripts.Source(script), keys, args...)
	var wait *redis.Cmd
	if n > 0 {
		wait = pipe.Do(ctx, "wait", n, r.cfg.SlavesSyncTimeout.Milliseconds())
	}
	_, _ = pipe.Exec(ctx)
	res, err := ev.Result()
	if redisNil(err) {
		res, err = nil, nil
	}
	if err != nil || wait == nil {
		return res, err
	}
	acked, werr := wait.Int64()
	if werr != nil {
		return res, &WaitError{Err: werr}
	}
	if acked != n {
		r.forgetSlaves(addr)
	}
	if r.cfg.CheckSyncedSlaves && acked == 0 {
		return res, ErrNoSync
	}
	return res, nil
}

const (
	unlockMessage     = "0"
	readUnlockMessage = "1"
)

// watchdog is Redisson's renewal scheduler (3.44+): one timer per client renews every lock it holds without
// a lease, every WatchdogTimeout/3, in batches; a lock the script says is no longer ours is dropped
// silently; an error keeps the lock scheduled.
type watchdog struct {
	r    *Redisson
	mu   sync.Mutex
	held map[string]*renewal // by lock name
	stop chan struct{}
	done chan struct{}
}

type renewal struct {
	name   string
	read   bool           // a read-write lock's read hold: renewed with its timeout keys
	owners []string       // in order of first acquisition: the first is the one renewed
	holds  map[string]int // per owner
}

func renewalKey(name string, read bool) string {
	if read {
		return name + "\x00read"
	}
	return name
}

func newWatchdog(r *Redisson) *watchdog {
	w := &watchdog{r: r, held: map[string]*renewal{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *watchdog) add(name, owner string) { w.addKind(name, owner, false) }

func (w *watchdog) addKind(name, owner string, read bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := renewalKey(name, read)
	rn := w.held[k]
	if rn == nil {
		rn = &renewal{name: name, read: read, holds: map[string]int{}}
		w.held[k] = rn
	}
	if rn.holds[owner] == 0 {
		rn.owners = append(rn.owners, owner)
	}
	rn.holds[owner]++
}

// remove forgets one hold of owner, whatever the unlock answered (cancelExpirationRenewal).
func (w *watchdog) remove(name, owner string) { w.removeKind(name, owner, false) }

func (w *watchdog) removeKind(name, owner string, read bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := renewalKey(name, read)
	rn := w.held[k]
	if rn == nil || rn.holds[owner] == 0 {
		return
	}
	if rn.holds[owner]--; rn.holds[owner] == 0 {
		w.dropOwner(k, owner)
	}
}

func (w *watchdog) dropOwner(key, owner string) {
	rn := w.held[key]
	if rn == nil {
		return
	}
	delete(rn.holds, owner)
	for i, o := range rn.owners {
		if o == owner {
			rn.owners = append(rn.owners[:i], rn.owners[i+1:]...)
			break
		}
	}
	if len(rn.owners) == 0 {
		delete(w.held, key)
	}
}

func (w *watchdog) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *watchdog) loop() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(w.r.cfg.WatchdogTimeout / 3):
		}
		w.r.cfg.Gate.Pass() // a frozen client's watchdog is frozen too
		w.renewAll()
	}
}

// renewAll is one tick. As Redisson's RenewalTask, a tick renews chunk after chunk (per slot on a cluster)
// and abandons the rest of the tick at the first chunk that fails (an error or a NoSync): the locks after it
// are not renewed this tick. Read holds are a separate task (ReadLockTask), which stops at its own first
// failure. Redisson's order is its maps'; here it is by slot, then by name, so a run can be repeated.
func (w *watchdog) renewAll() {
	w.mu.Lock()
	var names, owners []string
	var reads []*renewal
	for _, rn := range w.held {
		if rn.read {
			reads = append(reads, &renewal{name: rn.name, owners: []string{rn.owners[0]}})
			continue
		}
		names = append(names, rn.name)
	}
	sort.Strings(names)
	for _, n := range names {
		owners = append(owners, w.held[renewalKey(n, false)].owners[0])
	}
	w.mu.Unlock()
	sort.Slice(reads, func(i, j int) bool { return reads[i].name < reads[j].name })
	for _, rn := range reads {
		if w.renewRead(rn.name, rn.owners[0]) != nil {
			break
		}
	}
	batch := max(w.r.cfg.WatchdogBatch, 1)
	for _, g := range w.r.sameSlot(names, owners) {
		for i := 0; i < len(g.names); i += batch {
			j := min(i+batch, len(g.names))
			if w.renew(g.names[i:j], g.owners[i:j]) != nil {
				return
			}
		}
	}
}

type renewGroup struct{ names, owners []string }

// sameSlot groups the locks to renew: one group, or on a cluster one per hash slot, since a multi-key
// script must not cross slots (Redisson batches per slot there too).
func (r *Redisson) sameSlot(names, owners []string) []renewGroup {
	if _, ok := r.rdb.(*redis.ClusterClient); !ok {
		return []renewGroup{{names, owners}}
	}
	var out []renewGroup
	at := map[int]int{}
	for i, n := range names {
		s := Slot(n)
		k, ok := at[s]
		if !ok {
			k = len(out)
			at[s] = k
			out = append(out, renewGroup{})
		}
		out[k].names = append(out[k].names, n)
		out[k].owners = append(out[k].owners, owners[i])
	}
	sort.SliceStable(out, func(i, j int) bool { return Slot(out[i].names[0]) < Slot(out[j].names[0]) })
	return out
}

// renew runs one chunk's renewal script and returns its error (a NoSync included: Redisson's LockTask sees
// an exception and then ignores the chunk's replies, so no lock is dropped for a 0 there).
func (w *watchdog) renew(names, owners []string) error {
	lease := w.r.cfg.WatchdogTimeout
	ops := make([]*history.Op, len(names))
	for i := range names {
		ops[i] = w.r.rec.Invoke(history.Record{Client: w.r.name, Node: w.r.node, Key: names[i], Owner: owners[i], F: "renew",
			Args: msArgs("lease_ms", lease)})
	}
	args := []any{lease.Milliseconds()}
	for _, o := range owners {
		args = append(args, o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.r.cfg.Timeout+w.r.cfg.SlavesSyncTimeout)
	res, err := w.r.eval(ctx, "renew", names, args...)
	cancel()
	nosync := errors.Is(err, ErrNoSync)
	vals, _ := res.([]any)
	for i, op := range ops {
		var v int64 = -1
		if i < len(vals) {
			v, _ = vals[i].(int64)
		}
		c := outcome.Call{Err: err} // the scheduler logs an error and keeps the lock: it tries again next tick
		switch {
		case v == 0 || v == 1: // this lock's answer stands whatever the batch's error; a NoSync is noted
			var e error
			if nosync {
				e = err
			}
			c = answer(history.Int64(v), v == 0, e)
		case err == nil:
			c.Err = fmt.Errorf("renew: unexpected reply %v", res)
		}
		outcome.Complete(op, c)
		if v == 0 && !nosync {
			w.mu.Lock()
			w.dropOwner(renewalKey(names[i], false), owners[i])
			w.mu.Unlock()
			w.r.losses.Fire(names[i], owners[i])
		}
	}
	return err
}

// Latch keys are dropped after an unlock request completes (Redisson fires an async DEL); the inner
// unlock notes which key its request used.
func (r *Redisson) noteLatch(id, key string) {
	r.latchMu.Lock()
	if r.latches == nil {
		r.latches = map[string]string{}
	}
	r.latches[id] = key
	r.latchMu.Unlock()
}

func (r *Redisson) dropLatches(id string) {
	r.latchMu.Lock()
	key, ok := r.latches[id]
	delete(r.latches, id)
	r.latchMu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	_ = r.rdb.Del(ctx, key).Err()
}

// renewRead renews one reader's hold of a read-write lock: the hash and every timeout key of the reader.
// It returns the script's error (a NoSync included).
func (w *watchdog) renewRead(name, owner string) error {
	lease := w.r.cfg.WatchdogTimeout
	ctx, cancel := context.WithTimeout(context.Background(), w.r.cfg.Timeout+w.r.cfg.SlavesSyncTimeout)
	defer cancel()
	rec := history.Record{Client: w.r.name, Node: w.r.node, Key: name, Owner: owner, F: "renew",
		Args: msArgs("lease_ms", lease, "read", 1)}
	_, refused, err := record(w.r.rec, rec, func() (*int64, bool, error) {
		res, err := w.r.eval(ctx, "rw_read_renew", []string{name, readTimeoutPrefix(name, owner)}, lease.Milliseconds(), owner)
		n, _ := res.(int64)
		return history.Int64(n), n == 0 && err == nil, err
	})
	if refused {
		w.mu.Lock()
		w.dropOwner(renewalKey(name, true), owner)
		w.mu.Unlock()
	}
	return err
}
