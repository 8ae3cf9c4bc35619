package lockspec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
)

// clients starts a node and makes n clients of the spec, recording into one history.
func clients(t *testing.T, text string, n int) ([]locks.Client, func() *history.History) {
	t.Helper()
	s, err := Parse([]byte(text), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	nd := redistest.Start(t, node.PersistNone)
	if err := s.LoadScripts(context.Background(), nd.Addr(), nd.Password()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, history.NewClock())
	k := s.Kind()
	var cs []locks.Client
	for i := range n {
		c, err := k.New(locks.Env{Client: "c" + string(rune('1'+i)), Addrs: []string{nd.Addr()}, Password: nd.Password(),
			Redisson: locks.DefaultRedissonConfig(), Rec: rec, Gate: locks.NewGate()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if !k.Family.Accepts(c) {
			t.Fatalf("%T is no %s client", c, k.Family.Name)
		}
		cs = append(cs, c)
	}
	return cs, func() *history.History {
		h, err := history.Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// outcomes lists each recorded command as "f type [value]".
func outcomes(h *history.History) []string {
	var out []string
	for _, o := range h.Ops {
		s := o.Invoke.F + " " + string(o.Outcome())
		if o.Complete != nil && o.Complete.Value != nil {
			s += " " + strconv.FormatInt(*o.Complete.Value, 10)
		}
		out = append(out, s)
	}
	return out
}

// The commands a spec mutex sends are recorded in the shapes the mutex model reads: a grant ok, a
// refusal fail with the ttl (or -2), a release ok 1, a foreign release fail -1 (ErrNotHeld); a reply no
// matcher takes is unknown; each hold that stores {{token}} is its own owner.
func TestMutexRecords(t *testing.T) {
	text := strings.Replace(base, "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
		`"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.status_reply('OK') end; return redis.call('PTTL', KEYS[1])"`, 1)
	text = strings.Replace(text, "{granted: OK, refused: nil}", "{granted: OK, ttl: integer}", 1)
	text = strings.Replace(text, "return redis.call('DEL', KEYS[1])",
		`"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end; return 0"`, 1)
	text = strings.Replace(text, "    reply: {released: 1, not_held: 0}", "    argv: [\"{{token}}\"]\n    reply: {released: 1, not_held: 0}", 1)
	cs, hist := clients(t, text, 2)
	ctx := context.Background()
	a := cs[0].(locks.MutexClient).Mutex([]string{"k"}, 1)
	b := cs[1].(locks.MutexClient).Mutex([]string{"k"}, 1)
	if ok, err := a.TryLock(ctx, 0, 5*time.Second); !ok || err != nil {
		t.Fatalf("a: %v %v", ok, err)
	}
	if ok, err := b.TryLock(ctx, 0, 5*time.Second); ok || err != nil {
		t.Fatalf("b got the held lock: %v %v", ok, err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("b's release of a's lock: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a's release: %v", err)
	}
	a2 := cs[0].(locks.MutexClient).Mutex([]string{"k"}, 1)
	if a2.Owner() == a.Owner() {
		t.Fatalf("two holds of one thread share the owner %s", a.Owner())
	}
	// A lock that stores {{owner}} instead is one owner per thread, as it is to Redis.
	byOwner := strings.ReplaceAll(base, "{{token}}", "{{owner}}")
	s, err := Parse([]byte(byOwner), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c := s.newClient(locks.Env{Client: "c9", Addrs: []string{"127.0.0.1:1"}, Redisson: locks.DefaultRedissonConfig()},
		&shared{permits: map[string]int64{}})
	defer c.Close()
	if o1, o2 := c.Mutex([]string{"k"}, 1).Owner(), c.Mutex([]string{"k"}, 1).Owner(); o1 != o2 || o1 != c.id+":1" {
		t.Fatalf("owners %s and %s, want %s:1", o1, o2, c.id)
	}
	h := hist()
	got := outcomes(h)
	if len(got) != 4 || got[0] != "acquire ok 1" || got[2] != "release fail -1" || got[3] != "release ok 1" ||
		!strings.HasPrefix(got[1], "acquire fail ") || got[1] == "acquire fail -2" {
		t.Fatalf("recorded %v", got)
	}
	if ttl := *h.Ops[1].Complete.Value; ttl <= 0 || ttl > 5000 {
		t.Fatalf("the refusal's ttl %d", ttl)
	}
	if h.Ops[0].Invoke.Args["lease_ms"] != 5000 {
		t.Fatalf("acquire args %v", h.Ops[0].Invoke.Args)
	}
}

// A reply no matcher takes is recorded unknown (the script ran; what it did is not known) and the call
// fails with ErrNoMatch.
func TestUnmatchedReplyIsUnknown(t *testing.T) {
	text := strings.Replace(base, "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])", "return 'maybe'", 1)
	cs, hist := clients(t, text, 1)
	ok, err := cs[0].(locks.MutexClient).Mutex([]string{"k"}, 1).TryLock(context.Background(), time.Second, time.Second)
	if ok || !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), `"maybe"`) {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	if got := outcomes(hist()); len(got) != 1 || got[0] != "acquire unknown" {
		t.Fatalf("recorded %v", got)
	}
}

// The example semaphore admits --permits holders, records a refusal, a release by token, a release of a
// token it does not hold (fail 0) and the final count; its capacity is recorded once, with no command.
func TestSemaphoreRecords(t *testing.T) {
	b, err := os.ReadFile("../examples/locks/semaphore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, hist := clients(t, string(b), 3)
	ctx := context.Background()
	sem := func(i int) locks.Expirable { return cs[i].(locks.ExpirableClient).Expirable("s", 1) }
	if ok, err := sem(0).TrySetPermits(ctx, 2); !ok || err != nil {
		t.Fatalf("set: %v %v", ok, err)
	}
	if ok, _ := sem(1).TrySetPermits(ctx, 2); ok {
		t.Fatal("the capacity was set twice")
	}
	t1, err1 := sem(0).TryAcquire(ctx, 0, 5*time.Second)
	t2, err2 := sem(1).TryAcquire(ctx, 0, 5*time.Second)
	t3, err3 := sem(2).TryAcquire(ctx, 0, 5*time.Second)
	if t1 == "" || t2 == "" || t3 != "" || err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("acquires: %q %q %q (%v %v %v)", t1, t2, t3, err1, err2, err3)
	}
	if ok, err := sem(0).Release(ctx, t1); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if ok, err := sem(0).Release(ctx, t1); ok || err != nil {
		t.Fatalf("second release of one permit: %v %v", ok, err)
	}
	if n, err := sem(2).Available(ctx); n != 1 || err != nil {
		t.Fatalf("available: %d %v", n, err)
	}
	want := []string{"setPermits ok", "setPermits fail", "acquire ok 1", "acquire ok 1", "acquire fail -2",
		"release ok 1", "release fail 0", "available ok 1"}
	if got := outcomes(hist()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("recorded %v, want %v", got, want)
	}
}

// The template values of a call: the key and its hash tag, owner, token, lease in ms and in whole seconds
// rounded up, the capacity; a now_ms token is the client's clock.
func TestTemplateValues(t *testing.T) {
	c := &client{s: &Spec{Token: "now_ms"}, id: "abc", sh: &shared{permits: map[string]int64{"k": 3}}}
	v := c.values(call{key: "k", thread: 2, token: "tok", lease: 1500 * time.Millisecond})
	for name, want := range map[string]string{"key": "k", "tag": "{k}", "owner": "abc:2", "token": "tok",
		"lease_ms": "1500", "lease_s": "2", "permits": "3", "n": "1"} {
		if v[name] != want {
			t.Errorf("{{%s}} = %q, want %q", name, v[name], want)
		}
	}
	if v := c.values(call{lease: 200 * time.Millisecond}); v["lease_s"] != "1" {
		t.Errorf("a 200ms lease in seconds: %s", v["lease_s"])
	}
	for _, s := range []string{v["now_ms"], c.newToken()} {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)).Abs() > time.Minute {
			t.Errorf("%q is not the client's clock in ms", s)
		}
	}
	c.s.Token = "random"
	if a, b := c.newToken(), c.newToken(); len(a) != 32 || a == b {
		t.Errorf("random tokens %q %q", a, b)
	}
}
