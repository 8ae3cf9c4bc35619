package lockspec

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/topology"
	"github.com/redis/go-redis/v9"
)

// ambiguousRetries is how often a release or extend whose outcome is unknown is repeated, with
// retry_ambiguous (an acquire is repeated while its wait lasts).
const ambiguousRetries = 3

// Kind is the spec's lock kind: its family's workload, model and checkers, its own clients.
func (s *Spec) Kind() kinds.Kind {
	about := s.About
	if about == "" {
		about = fmt.Sprintf("a %s from the lock spec %s", s.Family.Name, s.Path)
	}
	sh := &shared{permits: map[string]int64{}}
	prepare := func(ctx context.Context, addr, password string) error {
		sh.reset() // once per run, before its clients
		return s.LoadScripts(ctx, addr, password)
	}
	return kinds.Kind{Name: s.Name, About: about, Family: s.Family, Watchdog: s.WatchdogEvery > 0,
		Topology: topology.Single, Broken: s.Broken, Flags: s.Flags, Prepare: prepare, Source: s.Path,
		New: func(e locks.Env) (locks.Client, error) {
			c := s.newClient(e, sh)
			switch s.Family {
			case kinds.RW:
				return rwClient{c}, nil
			case kinds.Expirable:
				return semClient{c}, nil
			}
			return c, nil
		}}
}

// Register loads the spec at path and registers its kind, returning it. Errors are bad input.
func Register(path string) (*kinds.Kind, error) {
	s, err := Load(path)
	if err != nil {
		return nil, err
	}
	specMu.Lock()
	specNames[s.Name] = true
	specMu.Unlock()
	kinds.Register(s.Kind()) // a spec registered again (another run in this process) replaces its kind
	return kinds.Lookup(s.Name)
}

var (
	specMu    sync.Mutex
	specNames = map[string]bool{} // the kinds registered from specs, told apart from the built-in ones
)

func registered(name string) bool {
	specMu.Lock()
	defer specMu.Unlock()
	return specNames[name]
}

// LoadScripts compiles every script of the spec on the node at addr (SCRIPT LOAD), so that a script that
// does not compile stops the run before the workload, naming the operation, the file and Redis's message.
func (s *Spec) LoadScripts(ctx context.Context, addr, password string) error {
	rdb := locks.NewClient(locks.ClientConfig{Addr: addr, Password: password, Timeout: 5 * time.Second})
	defer rdb.Close()
	for _, name := range s.opNames() {
		op := s.Ops[name]
		if err := rdb.ScriptLoad(ctx, op.Script).Err(); err != nil {
			var rerr redis.Error
			if !errors.As(err, &rerr) {
				return fmt.Errorf("%s: operation %s: SCRIPT LOAD on %s: %v", s.Path, name, addr, err)
			}
			// Lua quotes the token it choked on, which may be most of a 1 MiB script.
			return fmt.Errorf("%s: operation %s: %s does not compile: %s", s.Path, name, op.where(), clip(oneLine(err.Error())))
		}
	}
	return nil
}

func (s *Spec) opNames() []string {
	var out []string
	for n := range s.Ops {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// shared is what a run's clients of one spec share: the capacity the application set per semaphore key
// (the workload sets it once, through the first client, before any acquire; every acquire passes it).
type shared struct {
	mu      sync.Mutex
	permits map[string]int64
}

func (sh *shared) reset() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.permits = map[string]int64{}
}

func (sh *shared) capacity(key string) int64 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.permits[key]
}

// client is one client of a spec lock: one go-redis client, an owner id, the spec's scripts.
type client struct {
	s       *Spec
	name    string
	id      string
	rdb     redis.UniversalClient
	rec     locks.Recorder
	gate    *locks.Gate
	lease   time.Duration // the lease of a hold taken without one
	scripts map[string]*redis.Script
	sh      *shared
	wd      *watchdog
	holds   atomic.Int64
	broken  atomic.Int64 // commands in a row whose outcome is unknown
}

// backoff is how long an acquire waits after a command whose outcome is unknown: retry_delay, doubling
// with each such command in a row, at most 1 s, as client libraries back off a broken connection.
// Without it every client spins on a killed node and each spin is one more unknown outcome.
func (c *client) backoff() time.Duration {
	n := min(max(c.broken.Load()-1, 0), 10)
	return max(min(c.s.RetryDelay<<n, time.Second), c.s.RetryDelay)
}

func (s *Spec) newClient(e locks.Env, sh *shared) *client {
	conn := locks.ClientConfig{Addr: e.Addrs[0], Password: e.Password, Timeout: e.Redisson.Timeout, Gate: e.Gate}
	if e.Sentinel != nil {
		conn.Sentinels, conn.MasterName, conn.Dialer = e.Sentinel.Addrs, e.Sentinel.MasterName, e.Sentinel.Dialer
	}
	if e.Cluster != nil {
		conn.Cluster, conn.Dialer = e.Cluster.Addrs, e.Cluster.Dialer
	}
	lease := e.Lease
	if lease <= 0 {
		lease = e.Redisson.WatchdogTimeout
	}
	c := &client{s: s, name: e.Client, id: randomHex(), rdb: locks.NewClient(conn), rec: e.Rec, gate: e.Gate,
		lease: lease, scripts: map[string]*redis.Script{}, sh: sh}
	for n, op := range s.Ops {
		c.scripts[n] = redis.NewScript(op.Script)
	}
	if s.WatchdogEvery > 0 {
		c.wd = newWatchdog(c)
	}
	return c
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

func (c *client) Name() string         { return c.name }
func (c *client) Gate() *locks.Gate    { return c.gate }
func (c *client) owner(t int64) string { return c.id + ":" + strconv.FormatInt(t, 10) }

func (c *client) Close() error {
	if c.wd != nil {
		c.wd.close()
	}
	return c.rdb.Close()
}

// newToken is {{token}} for one hold: random, or the client's clock in ms.
func (c *client) newToken() string {
	if c.s.Token == "now_ms" {
		return strconv.FormatInt(c.gate.Now().UnixMilli(), 10)
	}
	return randomHex()
}

// call is one script call about one hold.
type call struct {
	op     *Op
	key    string
	thread int64
	owner  string // recorded owner (the write half of a read-write lock adds ":write")
	token  string
	lease  time.Duration
	args   map[string]int64
	f      string // the recorded operation: acquire, release, renew, available, setPermits
}

// values are the template values of a call.
func (c *client) values(x call) map[string]string {
	ms := x.lease.Milliseconds()
	secs := (ms + 999) / 1000
	return map[string]string{"key": x.key, "tag": "{" + x.key + "}", "owner": c.owner(x.thread), "token": x.token,
		"lease_ms": strconv.FormatInt(ms, 10), "lease_s": strconv.FormatInt(max(secs, 1), 10),
		"now_ms": strconv.FormatInt(c.gate.Now().UnixMilli(), 10), "permits": strconv.FormatInt(c.sh.capacity(x.key), 10),
		"n": "1"}
}

// ErrNoMatch is a reply that no rule of the operation's mapping matches: the command ran, what it did is
// unknown to the client.
var ErrNoMatch = errors.New("reply matches no outcome of the spec")

// run sends one script call, recorded as one operation, and returns its outcome and its integer reply.
func (c *client) run(ctx context.Context, x call) (Outcome, int64, error) {
	vals := c.values(x)
	keys := make([]string, len(x.op.Keys))
	for i, t := range x.op.Keys {
		keys[i] = t.expand(vals)
	}
	argv := make([]any, len(x.op.Argv))
	for i, t := range x.op.Argv {
		argv[i] = t.expand(vals)
	}
	op := c.rec.Invoke(history.Record{Client: c.name, Thread: x.thread, Key: x.key, Owner: x.owner, F: x.f, Args: x.args})
	reply, err := c.scripts[x.op.Name].Run(context.WithoutCancel(ctx), c.rdb, keys, argv...).Result()
	if errors.Is(err, redis.Nil) {
		reply, err = nil, nil
	}
	err = clipErr(err) // recorded twice (this command, the workload's call) and returned: never megabytes
	if err != nil {
		if outcome.Complete(op, outcome.Call{Err: err}) == history.Unknown {
			c.broken.Add(1)
		}
		return "", 0, err
	}
	c.broken.Store(0)
	out, ok := x.op.Reply.classify(reply)
	if !ok {
		err := fmt.Errorf("%s: %w: %s", x.op.Name, ErrNoMatch, describe(reply))
		outcome.Complete(op, outcome.Call{Err: err}) // it ran: unknown
		return "", 0, err
	}
	n, _ := reply.(int64)
	outcome.Complete(op, c.recorded(x, out, n))
	return out, n, nil
}

// recorded is how a reply that mapped to out (with integer n) is recorded: its value in the models'
// terms, and whether it took no effect.
func (c *client) recorded(x call, out Outcome, n int64) outcome.Call {
	switch out {
	case Released:
		if x.op.class == readReleaseClass {
			return outcome.Call{Value: history.Int64(0)} // other holds remain
		}
	case Count:
		return outcome.Call{Value: history.Int64(n)}
	case TTL:
		return outcome.Call{Value: history.Int64(n), Refused: true}
	case Refused:
		return outcome.Call{Value: history.Int64(-2), Refused: true} // held by someone; how long is not said
	case NotHeld:
		v := int64(-1)
		if x.f == "renew" || c.s.Family == kinds.Expirable {
			v = 0
		}
		return outcome.Call{Value: history.Int64(v), Refused: true}
	}
	return outcome.Call{Value: history.Int64(1)} // Granted, Extended, Last, Released
}

// describe says what a reply was, in at most about maxReply bytes.
func describe(reply any) string {
	switch v := reply.(type) {
	case nil:
		return "nil"
	case string:
		return strconv.Quote(clip(v))
	case int64:
		return "integer " + strconv.FormatInt(v, 10)
	}
	return clip(fmt.Sprintf("%T %v", reply, reply))
}

// maxReply bounds the text of a reply or an error that a spec client keeps, records and returns: a script
// can return or raise megabytes, and its start with its length says as much about it.
const maxReply = 4 << 10

// clip keeps the first maxReply bytes of s (on a rune boundary) and says how long s was.
func clip(s string) string { return history.ClipText(s, maxReply) }

// clippedError is an error whose text was too long to keep: its clipped text, and whether its outcome was
// definite (outcome.Definite asks it), so that clipping changes no recorded outcome.
type clippedError struct {
	text     string
	definite bool
}

func (e *clippedError) Error() string  { return e.text }
func (e *clippedError) Definite() bool { return e.definite }

// clipErr is err, or a clippedError standing for it when its text is longer than maxReply.
func clipErr(err error) error {
	if err == nil || len(err.Error()) <= maxReply {
		return err
	}
	return &clippedError{text: clip(err.Error()), definite: outcome.Definite(err)}
}

// retry runs a call, repeating it while its outcome is unknown, if the spec says so, up to tries times.
func (c *client) retry(ctx context.Context, x call, tries int) (Outcome, int64, error) {
	for i := 0; ; i++ {
		out, n, err := c.run(ctx, x)
		if err == nil || outcome.Definite(err) || errors.Is(err, ErrNoMatch) || !c.s.RetryAmbiguous || i >= tries ||
			!sleepCtx(ctx, c.s.RetryDelay) {
			return out, n, err
		}
	}
}

// acquire tries until granted or wait runs out, waiting retry_delay (or less, when the reply says the
// lock frees sooner) between attempts.
func (c *client) acquire(ctx context.Context, x call, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	for {
		out, n, err := c.run(ctx, x)
		switch {
		case err != nil && (outcome.Definite(err) || errors.Is(err, ErrNoMatch)):
			return false, err
		case err != nil && !c.s.RetryAmbiguous:
			sleepCtx(ctx, c.backoff()) // the connection just broke: no spinning on a dead node
			return false, err
		case err == nil && out == Granted:
			return true, nil
		}
		d := c.s.RetryDelay
		if err != nil {
			d = c.backoff()
		}
		if out == TTL && n >= 0 && time.Duration(n)*time.Millisecond < d {
			d = max(time.Duration(n)*time.Millisecond, time.Millisecond)
		}
		if left := time.Until(deadline); left <= 0 {
			return false, err
		} else if !sleepCtx(ctx, min(d, left)) {
			return false, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// where names the script in errors: its file, or inline.
func (op *Op) where() string {
	if op.Source == "inline" {
		return "its inline script"
	}
	return "script " + op.Source
}

// usesToken reports whether the operation passes {{token}}, which then names the hold in Redis.
func (op *Op) usesToken() bool {
	for _, t := range append(append([]template{}, op.Keys...), op.Argv...) {
		if t.uses("token") {
			return true
		}
	}
	return false
}
