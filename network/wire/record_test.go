package wire_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	_ "github.com/lockcheck/lockcheck/clients/worker" // registers real Redisson's and redsync's scripts
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/network/wire"
)

// recordBytes runs one connection's client and server bytes through a session and returns the history.
func recordBytes(t *testing.T, s *wire.Session, buf *bytes.Buffer, client, server string) *history.History {
	t.Helper()
	c := wire.RecordConn(s, "c1", "n1")
	c.FromClient([]byte(client))
	c.FromServer([]byte(server))
	c.Close()
	h, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newTestSession(t *testing.T, setNX bool) (*wire.Session, *bytes.Buffer) {
	table, err := wire.NewTable()
	if err != nil {
		t.Fatal(err)
	}
	table.SetNX = setNX
	buf := &bytes.Buffer{}
	clock := history.NewClock()
	return wire.NewSession(history.NewRecorder(buf, clock), clock, table), buf
}

func opText(o history.Operation) string {
	s := fmt.Sprintf("%s %s %s t%d %v -> %s", o.Invoke.F, o.Invoke.Key, o.Invoke.Owner, o.Invoke.Thread, o.Invoke.Args, o.Outcome())
	if o.Complete != nil && o.Complete.Value != nil {
		s += fmt.Sprint(" ", *o.Complete.Value)
	}
	if o.Complete != nil && len(o.Complete.Args) > 0 {
		s += fmt.Sprint(" ", o.Complete.Args)
	}
	if o.Invoke.Src != wire.Src || o.Invoke.Client != "c1" || o.Invoke.Node != "n1" {
		s += " (not marked as c1's wire record on n1)"
	}
	return s
}

func opsText(h *history.History) string {
	var out []string
	for _, o := range h.Ops {
		out = append(out, opText(o))
	}
	return strings.Join(out, "\n")
}

// Real Redisson's scripts (by wire.SHA-1) and lockcheck's own (by text and wire.SHA-1) map to the same commands; a WAIT right after a script
// decides nosync as Redisson's NoSyncedSlavesException does; an unknown script is counted, not recorded.
func TestRecordScriptsAndWait(t *testing.T) {
	s, buf := newTestSession(t, false)
	own, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	redissonAcquire := "149c5a8bf18676fd99e9e6e24923bd64d9b62f94"                                              // Redisson 3.19.0–4.7.0's RLock acquire
	client := wire.Cmd("EVALSHA", redissonAcquire, "1", "L", "30000", "u:7") + wire.Cmd("WAIT", "1", "1000") + // granted, no replica
		wire.Cmd("EVALSHA", wire.SHA(own.Source("acquire")), "1", "L", "30000", "u:7") + wire.Cmd("WAIT", "1", "1000") + // re-entry, synced
		wire.Cmd("EVAL", own.Source("acquire"), "1", "L", "500", "v:2") + // refused
		wire.Cmd("EVAL", own.Source("release"), "3", "L", "ch", "latch:1", "0", "30000", "u:7", "publish", "9000") +
		wire.Cmd("EVAL", own.Source("release"), "3", "L", "ch", "latch:1", "0", "30000", "u:7", "publish", "9000") + // same request id
		wire.Cmd("EVAL", own.Source("renew"), "2", "L", "M", "30000", "u:7", "u:8") +
		wire.Cmd("EVAL", "return 1", "0") + wire.Cmd("EVALSHA", strings.Repeat("ab", 20), "0") +
		wire.Cmd("EVALSHA", "444506ed6079843ae4590ff6caf5f677dae3a35f", "2", "a", "b") // Redisson's connection check
	server := "$-1\r\n:0\r\n$-1\r\n:1\r\n:2999\r\n:0\r\n:0\r\n*2\r\n:1\r\n:0\r\n:1\r\n-NOSCRIPT\r\n*2\r\n$-1\r\n$-1\r\n"
	h := recordBytes(t, s, buf, client, server)
	want := strings.Join([]string{
		"acquire L u:7 t7 map[lease_ms:30000] -> ok map[nosync:1]",
		"acquire L u:7 t7 map[lease_ms:30000] -> ok",
		"acquire L v:2 t2 map[lease_ms:500] -> fail 2999",
		"release L u:7 t7 map[attempt:0 lease_ms:30000] -> ok 0",
		"release L u:7 t7 map[attempt:1 lease_ms:30000] -> ok 0",
		"renew L u:7 t0 map[lease_ms:30000] -> ok 1",
		"renew M u:8 t0 map[lease_ms:30000] -> fail 0",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if st := s.Stats(); len(st.Unmapped) != 2 {
		t.Fatalf("unmapped %v, want the two unknown scripts (not the known non-lock one)", st.Unmapped)
	}
}

// A command whose reply never came is unknown; a script whose WAIT never answered ran but may not have
// replicated (nosync); an error reply means the script never ran; a script inside MULTI/EXEC gets EXEC's
// element.
func TestRecordLostErrorAndTransaction(t *testing.T) {
	s, buf := newTestSession(t, false)
	own, _ := locks.LoadScripts("redisson", "")
	acq := func(owner string) string { return wire.Cmd("EVAL", own.Source("acquire"), "1", "L", "100", owner) }
	client := acq("a:1") + wire.Cmd("MULTI") + acq("b:1") + wire.Cmd("EXEC") + acq("c:1") + acq("d:1") + wire.Cmd("WAIT", "1", "1") + acq("e:1")
	server := "-WRONGTYPE\r\n+OK\r\n+QUEUED\r\n*1\r\n:55\r\n-MOVED 1 127.0.0.1:1\r\n$-1\r\n"
	h := recordBytes(t, s, buf, client, server)
	want := strings.Join([]string{
		"acquire L a:1 t1 map[lease_ms:100] -> fail",
		"acquire L b:1 t1 map[lease_ms:100] -> fail 55",
		"acquire L c:1 t1 map[lease_ms:100] -> fail",
		"acquire L d:1 t1 map[lease_ms:100] -> ok map[nosync:1]",
		"acquire L e:1 t1 map[lease_ms:100] -> unknown",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// Real Redisson's read-write lock scripts, by wire.SHA-1, are read with their own KEYS/ARGV positions; an
// unlock from before 3.44.0 that answers 1 is unknown (released, or already gone).
func TestRecordRedissonReadWrite(t *testing.T) {
	s, buf := newTestSession(t, false)
	client := wire.Cmd("EVALSHA", "95553a6ff11176c18e71344e89d116b06fd6f753", "2", "L", "{L}:u:3:rwlock_timeout", "30000", "u:3", "u:3:write") +
		wire.Cmd("EVALSHA", "6306ba3bf1f563b284bed52d305fce615c6664d9", "1", "L", "30000", "v:4:write") +
		wire.Cmd("EVALSHA", "1affef780a01e1406cb1968c62918f618d10d6a3", "4", "L", "{L}", "M", "{M}", "30000", "u:3", "w:5") +
		wire.Cmd("EVALSHA", "6563941ff57e01b8cf61e86907b80686438a2f74", "2", "L", "{L}", "30000", "u:3") +
		wire.Cmd("EVALSHA", "6e1b10e11ac0a3ed8e902562ecd32ce01b553039", "5", "L", "ch", "{L}:u:3:rwlock_timeout", "{L}", "latch:9", "0", "u:3", "publish", "9000") +
		wire.Cmd("EVALSHA", "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6", "3", "L", "ch", "latch:8", "1", "30000", "v:4:write", "publish", "9000") +
		wire.Cmd("EVALSHA", "baa634f6184acc1b8f145e810a0e0e00967a3cbe", "2", "L", "ch", "1", "30000", "v:4:write") // 3.16: 1 may mean gone
	server := "$-1\r\n:2500\r\n*2\r\n:1\r\n:0\r\n:1\r\n:1\r\n$-1\r\n:1\r\n"
	h := recordBytes(t, s, buf, client, server)
	want := strings.Join([]string{
		"acquire L u:3 t3 map[lease_ms:30000 read:1] -> ok",
		"acquire L v:4:write t4 map[lease_ms:30000] -> fail 2500",
		"renew L u:3 t0 map[lease_ms:30000 read:1] -> ok 1",
		"renew M w:5 t0 map[lease_ms:30000 read:1] -> fail 0",
		"renew L u:3 t0 map[lease_ms:30000 read:1] -> ok 1",
		"release L u:3 t3 map[attempt:0 read:1] -> ok 1",
		"release L v:4:write t4 map[attempt:0 lease_ms:30000] -> fail -1",
		"release L v:4:write t4 map[attempt:0 lease_ms:30000] -> unknown",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if st := s.Stats(); len(st.Unmapped) != 0 {
		t.Fatalf("unmapped %v", st.Unmapped)
	}
}

// Real Redisson's fair-lock scripts: the two acquire variants swap ARGV[3] and ARGV[4]; a give-up names
// the queue, from which the lock's name is read back.
func TestRecordRedissonFair(t *testing.T) {
	s, buf := newTestSession(t, false)
	keys := []string{"3", "F", "redisson_lock_queue:{F}", "redisson_lock_timeout:{F}"}
	client := wire.Cmd(append([]string{"EVALSHA", "d20501c26a30adf6fb0fe9883bbbcc497e6157e2"}, append(keys, "30000", "u:1", "1700000000000", "5000")...)...) +
		wire.Cmd(append([]string{"EVALSHA", "8f6ed299ffd259f0539c20f89253998c0777ea75"}, append(keys, "30000", "v:2", "300", "1700000000000")...)...) +
		wire.Cmd("EVALSHA", "d1ddef65ad80886b5d36e023c99930044ddd653a", "2", "redisson_lock_queue:{F}", "redisson_lock_timeout:{F}", "v:2", "300") +
		wire.Cmd("EVALSHA", "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6", "5", "F", "redisson_lock_queue:{F}", "redisson_lock_timeout:{F}",
			"redisson_lock__channel:{F}", "latch:1", "0", "30000", "u:1", "1700000000000", "publish", "9000")
	server := "$-1\r\n:29000\r\n$-1\r\n:1\r\n"
	h := recordBytes(t, s, buf, client, server)
	want := strings.Join([]string{
		"acquire F u:1 t1 map[fair:1 lease_ms:30000 slot_ms:5000] -> ok",
		"acquire F v:2 t2 map[fair:1 lease_ms:30000 slot_ms:300] -> fail 29000",
		"dequeue F v:2 t2 map[fair:1 slot_ms:300] -> ok",
		"release F u:1 t1 map[attempt:0 fair:1 lease_ms:30000] -> ok 1",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// A call refused with an error never ran, so the next call with the same unlock request id is no repeat
// (go-redis sends EVALSHA, gets NOSCRIPT, then EVAL); a call whose reply was lost may have run, so the next
// one is a repeat.
func TestRecordUnlockAttempts(t *testing.T) {
	s, buf := newTestSession(t, false)
	own, _ := locks.LoadScripts("redisson", "")
	rel := func(verb, script string) string {
		return wire.Cmd(verb, script, "3", "L", "ch", "latch:7", "0", "30000", "u:1", "publish", "9000")
	}
	c := wire.RecordConn(s, "c1", "n1")
	c.FromClient([]byte(rel("EVALSHA", wire.SHA(own.Source("release")))))
	c.FromServer([]byte("-NOSCRIPT No matching script\r\n"))
	c.FromClient([]byte(rel("EVAL", own.Source("release"))))
	c.Close() // its reply is lost
	c = wire.RecordConn(s, "c1", "n1")
	c.FromClient([]byte(rel("EVAL", own.Source("release"))))
	c.FromServer([]byte(":1\r\n"))
	c.Close()
	h, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range h.Ops {
		got = append(got, fmt.Sprintf("%d %s", o.Invoke.Args["attempt"], o.Outcome()))
	}
	if fmt.Sprint(got) != "[0 fail 0 unknown 1 ok]" {
		t.Fatalf("attempts %v", got)
	}
}

// With Table.SetNX a plain SET NX PX|EX is an acquire; compare-and-delete and compare-and-expire scripts
// (lockcheck's spec_release, redsync's by the wire.SHA-1 it declares) are a release and a renewal; a plain DEL
// of such a key names no owner and is counted as unmapped. Without SetNX no SET is a lock command.
func TestRecordPlainLocks(t *testing.T) {
	own, _ := locks.LoadScripts("redisson", "")
	client := wire.Cmd("SET", "P", "u:1", "NX", "PX", "800") + wire.Cmd("set", "P", "v:2", "px", "800", "nx") +
		wire.Cmd("SET", "Q", "w:3", "EX", "2", "NX") + wire.Cmd("SET", "R", "x", "NX") + wire.Cmd("SET", "R", "x", "NX", "PX", "5", "GET") +
		wire.Cmd("EVALSHA", "d75bb8b5bd13532ddedd17762e772346e39b321e", "1", "P", "u:1", "900") +
		wire.Cmd("EVAL", own.Source("spec_release"), "1", "P", "v:2") +
		wire.Cmd("EVALSHA", "e950836ed1e694540c503ef9972b8de518044d3b", "1", "P", "u:1") +
		wire.Cmd("EVALSHA", "e950836ed1e694540c503ef9972b8de518044d3b", "1", "Q", "w:3") + wire.Cmd("DEL", "Q")
	server := "+OK\r\n$-1\r\n+OK\r\n+OK\r\n$-1\r\n:1\r\n:0\r\n:1\r\n:-1\r\n:0\r\n"
	s, buf := newTestSession(t, true)
	h := recordBytes(t, s, buf, client, server)
	want := strings.Join([]string{
		"acquire P u:1 t1 map[lease_ms:800] -> ok",
		"acquire P v:2 t2 map[lease_ms:800] -> fail -2",
		"acquire Q w:3 t3 map[lease_ms:2000] -> ok",
		"renew P u:1 t1 map[lease_ms:900] -> ok 1",
		"release P v:2 t2 map[] -> fail -1",
		"release P u:1 t1 map[] -> ok 1",
		"release Q w:3 t3 map[] -> fail -1",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if st := s.Stats(); st.Unmapped["DEL"] != 1 || st.Unmapped["SET NX"] != 2 {
		t.Fatalf("unmapped %v, want the DEL of a lock key and the two SET NX that are no plain acquire", st.Unmapped)
	}
	s, buf = newTestSession(t, false)
	h = recordBytes(t, s, buf, wire.Cmd("SET", "P", "u:1", "NX", "PX", "800"), "+OK\r\n")
	if len(h.Ops) != 0 {
		t.Fatalf("a SET was recorded without SetNX: %s", opsText(h))
	}
}

// Redisson 4.4.0+ renews all of a client's readers of a lock and answers once per lock: a sole reader's 1
// is its renewal; with several readers a 1 says only that one of them held it (each is unknown); a 0 says
// none did.
func TestRecordRedissonReadRenewOwners(t *testing.T) {
	s, buf := newTestSession(t, false)
	client := wire.Cmd("EVALSHA", "38d2b478dfbe264ab67c221b7e4be62245f00ba0", "6", "L", "{L}", "M", "{M}", "N", "{N}",
		"30000", "1", "u:1", "2", "u:2", "u:3", "1", "u:4")
	h := recordBytes(t, s, buf, client, "*3\r\n:1\r\n:1\r\n:0\r\n")
	want := strings.Join([]string{
		"renew L u:1 t0 map[lease_ms:30000 read:1] -> ok 1",
		"renew M u:2 t0 map[lease_ms:30000 read:1] -> unknown",
		"renew M u:3 t0 map[lease_ms:30000 read:1] -> unknown",
		"renew N u:4 t0 map[lease_ms:30000 read:1] -> fail 0",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// MultiLock's and RedLock's final lease (RedissonExpirable.expireAsync, H6) is an expire of each key with no
// owner: one key's 1 is its expire applied, its 0 a key that was gone; with several keys a 1 says only that
// some key was set, so each is unknown. The 4.7.0 text is recognised by its wire.SHA-1 (the worker's script cache).
func TestRecordRedissonExpire(t *testing.T) {
	text := "local result = 0;for j = 1, #KEYS, 1 do local expireSet; if ARGV[2] ~= '' then expireSet = redis.call('pexpire', KEYS[j], ARGV[1], ARGV[2]); else expireSet = redis.call('pexpire', KEYS[j], ARGV[1]); end; if expireSet == 1 then result = expireSet;end; end; return result; "
	if wire.SHA(text) != "3fd750e0b43af99dbd223e5523718f18cded3664" {
		t.Fatalf("the 4.7.0 text hashes to %s", wire.SHA(text))
	}
	s, buf := newTestSession(t, false)
	client := wire.Cmd("EVAL", text, "1", "L", "5000", "") + wire.Cmd("EVALSHA", "3fd750e0b43af99dbd223e5523718f18cded3664", "1", "M", "5000", "") +
		wire.Cmd("EVALSHA", "3fd750e0b43af99dbd223e5523718f18cded3664", "2", "N", "O", "5000", "")
	h := recordBytes(t, s, buf, client, ":1\r\n:0\r\n:1\r\n")
	want := strings.Join([]string{
		"expire L  t0 map[lease_ms:5000] -> ok 1",
		"expire M  t0 map[lease_ms:5000] -> fail 0",
		"expire N  t0 map[lease_ms:5000] -> unknown",
		"expire O  t0 map[lease_ms:5000] -> unknown",
	}, "\n")
	if got := opsText(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if st := s.Stats(); st.Problem() != "" {
		t.Fatalf("the expire script counted as a problem: %s", st.Problem())
	}
}
