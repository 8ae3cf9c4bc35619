package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
)

// hostileWorker is the test binary as a worker that breaks the protocol (LOCKCHECK_TEST_WORKER):
//   - flood: answers init with an endless line, no newline;
//   - reply: answers init_ok, then every request with LOCKCHECK_TEST_REPLY (%d: the msg_id);
//   - escape: starts a process that leaves its session (setsid), ignores SIGTERM and keeps stdout open
//     (its argv holds LOCKCHECK_TEST_MARK), then answers init_ok and reads requests until stdin ends.
func hostileWorker(mode string) {
	in := bufio.NewScanner(os.Stdin)
	id := func() int {
		if !in.Scan() {
			os.Exit(0)
		}
		var m struct {
			MsgID int `json:"msg_id"`
		}
		_ = json.Unmarshal(in.Bytes(), &m)
		return m.MsgID
	}
	switch mode {
	case "flood":
		id()
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				os.Exit(1)
			}
		}
	case "escape":
		cmd := exec.Command("sh", "-c", `trap "" TERM; exec sleep "$0"`, os.Getenv("LOCKCHECK_TEST_MARK"))
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			os.Exit(1)
		}
	}
	fmt.Printf(`{"type":"init_ok","in_reply_to":%d,"library":"hostile","version":"0","kinds":["naive"]}`+"\n", id())
	for {
		n := id()
		if mode == "reply" {
			fmt.Printf(os.Getenv("LOCKCHECK_TEST_REPLY")+"\n", n)
		}
	}
}

// A version is a name: one that is a path (from --client NAME@VERSION, repro --version, a suite's client
// entry) is refused by Lookup, and by Build itself, and nothing outside the cache is touched. Before, Build
// removed filepath.Join(cache, "workers", folder, version), wherever that was.
func TestVersionIsAName(t *testing.T) {
	cache := testCache(t)
	victim := filepath.Join(cache, "victim")
	other := filepath.Join(cache, "workers", "other", "1") // another worker's cached build
	for _, d := range []string{victim, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "keep"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Spec{Name: "counting", Folder: "counting"}
	for _, v := range []string{"../../victim", "..", ".", "a/b", "x\x1b[31m"} {
		if _, err := Build(context.Background(), s, v, os.Stderr); !errors.As(err, new(UnknownError)) || !strings.Contains(err.Error(), "not a name") {
			t.Errorf("Build version %q: %v, want an UnknownError saying it is not a name", v, err)
		}
		if _, _, err := Lookup("redis-py@" + v); !errors.As(err, new(UnknownError)) || !strings.Contains(err.Error(), "not a name") {
			t.Errorf("Lookup redis-py@%s: %v, want an UnknownError saying it is not a name", v, err)
		}
	}
	for _, d := range []string{victim, other} {
		if _, err := os.Stat(filepath.Join(d, "keep")); err != nil {
			t.Errorf("%s was touched: %v", d, err)
		}
	}
	base := filepath.Join(cache, "workers", "x")
	if err := inside(base, filepath.Join(base, "1")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{filepath.Join(base, ".."), base, filepath.Join(base, "../../victim"), filepath.Join(base, "..x/../../y")} {
		if inside(base, out) == nil {
			t.Errorf("%s passed as inside %s", out, base)
		}
	}
}

// A worker that never answers init is killed at once when the run's context ends (Ctrl-C during
// start-up), not after the start-up allowance. Before, Start waited for the allowance (here 30 s).
func TestInitHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	begin := time.Now()
	_, _, _, err := startWorkerCtx(t, ctx, "mute", time.Second, 30*time.Second)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "client c1: stopped while waiting") {
		t.Fatalf("a mute worker whose start-up was stopped: %v", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("Start returned %s after its context ended", took)
	}
}

// A worker flooding stdout with no newline fails with the documented reason, at once: it is killed before
// it is waited for (it blocks on the full pipe). Before, the reader waited for the process, and the
// worker was killed later by the request's bound, as "unanswered".
func TestFloodIsALineTooLong(t *testing.T) {
	begin := time.Now()
	_, _, _, err := startWorker(t, "flood", 2*time.Second, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "client c1: worker printed a line longer than 1 MiB") {
		t.Fatalf("a flooding worker: %v", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
}

// A reply with a field of the wrong type names the field and the type it should have; an acquire_ok
// without granted is a protocol error naming the field (before, it was taken as a refusal); either way
// the acquire is unknown, not a refusal, and the worker is ended.
func TestMalformedReplies(t *testing.T) {
	for _, tc := range []struct{ reply, says string }{
		{`{"type":"acquire_ok","in_reply_to":%d,"granted":"yes"}`, `worker printed a message whose "granted" is a string, not a boolean`},
		{`{"type":"acquire_ok","in_reply_to":%d,"token":[1]}`, `worker printed a message whose "token" is an array, not an integer`},
		{`{"type":"acquire_ok","in_reply_to":%d}`, `worker answered acquire (msg_id 2) with acquire_ok without "granted"`},
		{`{"type":"acquire_ok","in_reply_to":%d,"granted":true`, `worker printed a line that is not valid JSON`},
	} {
		t.Setenv("LOCKCHECK_TEST_REPLY", tc.reply)
		c, buf, failed, err := startWorker(t, "reply", time.Second, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := c.Mutex([]string{"k"}, 1).TryLock(context.Background(), 0, time.Second)
		if ok || err == nil || locks.Definite(err) {
			t.Fatalf("%s: acquire gave %v, %v; want an indefinite error", tc.reply, ok, err)
		}
		ferr := <-failed
		if !strings.Contains(ferr.Error(), tc.says) || strings.Contains(ferr.Error(), "not a JSON object") {
			t.Fatalf("%s: OnFail %q, want it to say %q", tc.reply, ferr, tc.says)
		}
		c.Close()
		if h := readHistory(t, buf); len(h.Ops) != 1 || h.Ops[0].Outcome() != history.Unknown {
			t.Fatalf("%s: recorded as %+v", tc.reply, h.Ops[0].Complete)
		}
	}
}

// A worker's texts reach the terminal with their control characters escaped: an ANSI sequence in its
// library name or an error text cannot recolour or rewrite the user's terminal.
func TestWorkerTextIsPrintable(t *testing.T) {
	t.Setenv("LOCKCHECK_TEST_LIBRARY", "evil\x1b[2J\x1b[31m\u202e")
	c, _, _ := startFake(t, time.Second)
	if got, want := c.Info.Library, `evil\x1b[2J\x1b[31m\u202e`; got != want {
		t.Fatalf("library %q, want %q", got, want)
	}
	for in, want := range map[string]string{"ok: é ✓": "ok: é ✓", "a\xffb\r\n": `a\xffb\r\n`, "\u0085\x7f": `\u0085\x7f`} {
		if got := printable(in); got != want {
			t.Fatalf("printable(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv("LOCKCHECK_TEST_REPLY", `{"type":"error","in_reply_to":%d,"code":13,"text":"boom\u001b]0;title\u0007"}`)
	r, _, _, err := startWorker(t, "reply", time.Second, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Mutex([]string{"k"}, 1).TryLock(context.Background(), 0, time.Second)
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), `boom\x1b]0;title\a`) {
		t.Fatalf("error reply: %q", err)
	}
}

// A worker's descendant that leaves its process group and session, ignores SIGTERM and holds the worker's
// stdout is killed when the worker closes, and Close does not wait on the pipe it held. Before, it was left
// running (reparented to pid 1) and Close waited for ever on the pipe.
func TestEscapedDescendantIsKilled(t *testing.T) {
	mark := fmt.Sprintf("1000.%d%d", os.Getpid(), time.Now().UnixNano()%1e6)
	t.Setenv("LOCKCHECK_TEST_MARK", mark)
	c, _, _, err := startWorker(t, "escape", time.Second, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killMarked(mark) })
	if len(marked(mark)) != 1 {
		t.Fatalf("the escaping process did not start")
	}
	begin := time.Now()
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(8 * time.Second):
		t.Fatalf("Close still waiting after 8s; left: %v", marked(mark))
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("Close took %s", took)
	}
	if left := marked(mark); len(left) > 0 {
		t.Fatalf("left running: %v", left)
	}
}

// marked lists the live processes whose command line holds mark.
func marked(mark string) []string {
	var out []string
	for pid := range scanProcs() {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(b), mark) {
			out = append(out, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return out
}

func killMarked(mark string) {
	for _, p := range marked(mark) {
		var pid int
		fmt.Sscanf(p, "%d:", &pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
