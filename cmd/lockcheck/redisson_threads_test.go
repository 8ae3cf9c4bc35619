package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// wireOwners reads the Redisson owners (UUID:threadId) the wire recorder saw on each client's commands.
func wireOwners(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r struct {
			Type, Src, Client, Owner string
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Type == "invoke" && r.Src == "wire" && r.Owner != "" {
			if out[r.Client] == nil {
				out[r.Client] = map[string]bool{}
			}
			out[r.Client][r.Owner] = true
		}
	}
	return out
}

// Four threads on each of four real RedissonClients: valid fault-free, every one of the 16 is an owner in
// the history, and on the wire each client is one Redisson instance (one UUID) whose four threads are
// four Java threads (four owners), as a thread pool sharing one RedissonClient is.
func TestRedissonThreadsPerClient(t *testing.T) {
	t.Parallel() // a fault-free valid run
	needJava(t)
	useWorkerCache(t)
	code, dir := run(t, "run", "--client", "redisson", "--lock", "reentrant", "--threads", "4", "--clients", "4",
		"--time", "4s", "--quiet", "1s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (valid): %+v", code, exitValid, readResults(t, dir).Checkers)
	}
	got := owners(t, dir)
	for c := 1; c <= 4; c++ {
		for th := 1; th <= 4; th++ {
			if o := fmt.Sprintf("c%d/%d", c, th); !got[o] {
				t.Errorf("no acquire by %s in the history (have %v)", o, got)
			}
		}
	}
	wire := wireOwners(t, dir)
	for c := 1; c <= 4; c++ {
		name := fmt.Sprintf("c%d", c)
		uuids := map[string]bool{}
		for o := range wire[name] {
			uuid, _, _ := strings.Cut(o, ":")
			uuids[uuid] = true
		}
		if len(wire[name]) != 4 || len(uuids) != 1 {
			t.Errorf("%s: Redisson owners on the wire %v, want 4 threads of one instance", name, wire[name])
		}
	}
}

// Every lock kind the Redisson worker drives, one per family and more, stays valid fault-free with three
// Java threads on each of three RedissonClients.
func TestRedissonEveryFamilyValidWithThreads(t *testing.T) {
	t.Parallel() // fault-free valid runs
	needJava(t)
	useWorkerCache(t)
	for _, lock := range []string{"reentrant", "fair", "fenced", "multi", "redlock", "rwlock", "semaphore",
		"expirable-semaphore", "latch"} {
		t.Run(lock, func(t *testing.T) {
			t.Parallel()
			code, dir := run(t, "run", "--client", "redisson", "--lock", lock, "--threads", "3", "--clients", "3",
				"--time", "4s", "--quiet", "1s", "--seed", "2")
			if code != exitValid {
				t.Fatalf("exit %d, want %d (valid): %+v (%s)", code, exitValid, readResults(t, dir).Checkers, dir)
			}
			if !owners(t, dir)["c3/3"] && lock != "latch" {
				t.Errorf("thread 3 of client 3 never acquired (%s)", dir)
			}
		})
	}
}

// lcpWorker is one worker process spoken to directly over LCP/1: replies by msg_id.
type lcpWorker struct {
	t       *testing.T
	stdin   io.WriteCloser
	replies chan map[string]any
	early   map[int64]map[string]any // replies that came before the one being waited for
	next    int64
}

// startRedisson starts the Redisson worker (built into the test cache) against a fresh redis-server, and
// sends init for lock kind on topology tkind; the worker and the server are stopped when the test ends.
func startRedisson(t *testing.T, kind, tkind string) *lcpWorker {
	t.Helper()
	needJava(t)
	useWorkerCache(t)
	s, version, err := worker.Lookup("redisson")
	if err != nil {
		t.Fatal(err)
	}
	argv, err := worker.Build(t.Context(), s, version, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pw := node.NewPassword()
	n := redistest.StartConfig(t, node.Config{Password: pw})
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		stdin.Close() // EOF: the worker shuts its clients down and exits
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		stderr.Close()
	})
	w := &lcpWorker{t: t, stdin: stdin, replies: make(chan map[string]any, 64), early: map[int64]map[string]any{}}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				w.replies <- m
			}
		}
		cmd.Wait()
		close(done)
	}()
	id := w.send(map[string]any{"type": "init", "protocol": 1, "client": "c1",
		"topology": map[string]any{"kind": tkind, "nodes": []any{map[string]any{"name": "n1", "addr": n.Addr()}}},
		"password": pw, "lock": map[string]any{"kind": kind},
		"options": map[string]any{"watchdog_ms": 30000, "timeout_ms": 3000}})
	if r := w.reply(id); r["type"] != "init_ok" {
		t.Fatalf("init: %v", r)
	}
	return w
}

// send writes one request (msg_id added) and returns its msg_id.
func (w *lcpWorker) send(m map[string]any) int64 {
	w.t.Helper()
	w.next++
	m["msg_id"] = w.next
	b, err := json.Marshal(m)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.stdin.Write(append(b, '\n')); err != nil {
		w.t.Fatal(err)
	}
	return w.next
}

// reply waits for the reply to id, keeping any other that comes first (threads answer in any order).
func (w *lcpWorker) reply(id int64) map[string]any {
	w.t.Helper()
	bound := 20 * time.Second
	if id == 1 { // init: the JVM starts first, and lockcheck itself gives it this long (six start at once here)
		bound = worker.Startup + worker.Slack
	}
	deadline := time.After(bound)
	for {
		if r, ok := w.early[id]; ok {
			delete(w.early, id)
			return r
		}
		select {
		case r := <-w.replies:
			got, _ := r["in_reply_to"].(float64)
			w.early[int64(got)] = r
		case <-deadline:
			w.t.Fatalf("no reply to %d within %s", id, bound)
			return nil
		}
	}
}

// do sends a request for thread and returns its reply, which must be the next one.
func (w *lcpWorker) do(thread int, typ string, fields map[string]any) map[string]any {
	w.t.Helper()
	m := map[string]any{"type": typ, "thread": thread}
	for k, v := range fields {
		m[k] = v
	}
	return w.reply(w.send(m))
}

// Redisson ties a lock to the calling Java thread: through one worker (one RedissonClient), another
// protocol thread's release of a held lock is refused with error 40 (IllegalMonitorStateException) and
// leaves it held, its try at it fails while the holder re-enters, and a thread waiting for the lock is
// woken by another thread's release while it waits (the threads run concurrently, not one after another),
// for every thread-owned lock kind. RedLock's unlock says nothing either way (see below).
func TestRedissonReleaseByAnotherThreadRefused(t *testing.T) {
	t.Parallel() // each subtest its own worker and redis-server, no timing in the verdict
	for _, tc := range []struct {
		kind, topology string
		fields         map[string]any
	}{
		{"reentrant", "single", map[string]any{"keys": []string{"k"}}},
		{"fair", "single", map[string]any{"keys": []string{"k"}}},
		{"fenced", "single", map[string]any{"keys": []string{"k"}}},
		{"multi", "single", map[string]any{"keys": []string{"k1", "k2"}}},
		{"redlock", "redlock", map[string]any{"keys": []string{"k"}}},
		{"rwlock", "single", map[string]any{"keys": []string{"k"}, "mode": "write"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			w := startRedisson(t, tc.kind, tc.topology)
			with := func(more map[string]any) map[string]any {
				m := map[string]any{}
				for k, v := range tc.fields {
					m[k] = v
				}
				for k, v := range more {
					m[k] = v
				}
				return m
			}
			// A free lock is given a long wait: a multi-lock gives up (undoing its members) once its wait
			// has run out between members, so tryLock(0) can fail on a free group. A held one a short wait.
			try := with(map[string]any{"wait_ms": 5000, "lease_ms": 0})
			busy := with(map[string]any{"wait_ms": 300, "lease_ms": 0})
			granted := func(r map[string]any) bool { return r["type"] == "acquire_ok" && r["granted"] == true }
			refused := func(r map[string]any) bool { c, _ := r["code"].(float64); return r["type"] == "error" && c == 40 }
			if r := w.do(1, "acquire", try); !granted(r) {
				t.Fatalf("thread 1 acquire of a free lock: %v", r)
			}
			if r := w.do(2, "acquire", busy); r["type"] != "acquire_ok" || r["granted"] != false {
				t.Fatalf("thread 2 acquire while thread 1 holds: %v, want granted false", r)
			}
			if tc.kind == "redlock" {
				// RedissonRedLock.unlock() swallows its members' failures (unlockInner ignores each
				// unlockAsync's exception), so its user is told nothing: the worker answers as the library
				// did (docs/protocol.md), and the lock stays thread 1's.
				if r := w.do(2, "release", with(nil)); r["type"] != "release_ok" {
					t.Fatalf("thread 2 release of thread 1's RedLock: %v, want release_ok (RedLock.unlock returns normally)", r)
				}
				if r := w.do(2, "acquire", busy); r["type"] != "acquire_ok" || r["granted"] != false {
					t.Fatalf("thread 2 acquire after its release of thread 1's RedLock: %v, want granted false", r)
				}
			} else if r := w.do(2, "release", with(nil)); !refused(r) {
				t.Fatalf("thread 2 release of thread 1's lock: %v, want error 40", r)
			}
			if tc.kind != "multi" && tc.kind != "redlock" { // group locks are not re-entrant in lockcheck's sense
				if r := w.do(1, "acquire", try); !granted(r) {
					t.Fatalf("thread 1 re-entry after thread 2's refused release: %v", r)
				}
				if r := w.do(1, "release", with(nil)); r["type"] != "release_ok" {
					t.Fatalf("thread 1 release of its re-entry: %v", r)
				}
			}
			// Thread 3 waits for the lock; thread 1's release, sent while thread 3 waits, wakes it. A worker
			// that ran its threads one after another would run the release only once thread 3's wait had
			// run out, not granted.
			waiter := w.send(map[string]any{"type": "acquire", "thread": 3, "wait_ms": 15000, "lease_ms": 0,
				"keys": tc.fields["keys"], "mode": tc.fields["mode"]})
			time.Sleep(300 * time.Millisecond) // so that thread 3 is already waiting; the verdict holds either way
			rel := w.send(map[string]any{"type": "release", "thread": 1, "keys": tc.fields["keys"], "mode": tc.fields["mode"]})
			if r := w.reply(rel); r["type"] != "release_ok" {
				t.Fatalf("thread 1 release while thread 3 waits: %v", r)
			}
			if r := w.reply(waiter); !granted(r) {
				t.Fatalf("thread 3 waiting across thread 1's release: %v, want granted", r)
			}
			if r := w.do(1, "release", with(nil)); tc.kind != "redlock" && !refused(r) {
				t.Fatalf("thread 1 release of thread 3's lock: %v, want error 40", r)
			}
			if r := w.do(1, "acquire", busy); r["type"] != "acquire_ok" || r["granted"] != false {
				t.Fatalf("thread 1 acquire while thread 3 holds: %v, want granted false", r)
			}
			if r := w.do(3, "release", with(nil)); r["type"] != "release_ok" {
				t.Fatalf("thread 3 release of its own lock: %v", r)
			}
			if len(w.early) != 0 {
				t.Fatalf("replies to nothing sent: %v", w.early)
			}
		})
	}
}
