package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// buildLeaseWorker builds testdata/leaseworker: a library whose leases are whole seconds (issue #29, item
// 8), whose extend lies with -lying (item 9).
func buildLeaseWorker(t *testing.T) string {
	t.Helper()
	return buildTestCommand(t, "./testdata/leaseworker", filepath.Join(t.TempDir(), "leaseworker"))
}

// A library whose leases are whole seconds, given a lease it cannot take, refuses every acquire (error
// 10): the verdict line says so with the worker's text, not only that no critical section completed.
// Announcing lease_granularity_ms 1000 in init_ok makes lockcheck round each lease drawn from --lease
// 1s-3s to whole seconds: the run is valid, every lease sent is whole seconds, and the meta record, a
// note and one line say so.
func TestLeaseGranularity(t *testing.T) {
	t.Parallel() // fault-free runs of the binary
	bin, worker := buildBinary(t), buildLeaseWorker(t)
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		code, out, errs := runBinary(t, bin, "run", "--client-cmd", worker, "--lease", "1500ms", "--time", "3s",
			"--quiet", "1s", "--results", t.TempDir())
		if code != exitUnknown || !strings.Contains(out, "VERDICT: UNKNOWN: every acquire was refused (") ||
			!strings.Contains(out, "error 10 'leases are whole seconds, not 1500ms'") {
			t.Fatalf("exit %d, want %d and a verdict line naming the refusal:\n%s\n%s", code, exitUnknown, out, errs)
		}
	})
	t.Run("announced", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		code, out, errs := runBinary(t, bin, "run", "--client-cmd", worker+" -granularity 1000", "--lease", "1s-3s", "--hold", "50ms-300ms",
			"--time", "3s", "--quiet", "1s", "--results", root)
		if code != exitValid {
			t.Fatalf("exit %d, want %d:\n%s\n%s", code, exitValid, out, errs)
		}
		if n := strings.Count(errs, "lockcheck: the worker's leases are multiples of 1s"); n != 1 {
			t.Errorf("%d lines say the leases were rounded, want 1:\n%s", n, errs)
		}
		dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
		h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if h.Run.Client == nil || h.Run.Client.LeaseGranularityMs != 1000 {
			t.Errorf("meta client %+v: want lease_granularity_ms 1000", h.Run.Client)
		}
		sent := 0
		for _, o := range h.OnlySrc("").Ops {
			if l := o.Invoke.Args["lease_ms"]; (o.Invoke.F == "acquire" || o.Invoke.F == "renew") && (l < 1000 || l%1000 != 0) {
				t.Fatalf("%s sent lease_ms %d: not whole seconds", o.Invoke.F, l)
			} else if o.Invoke.F == "acquire" {
				sent++
			}
		}
		if sent == 0 || !strings.Contains(out, "note: the worker's leases are multiples of 1s") {
			t.Errorf("%d acquires; results:\n%s", sent, out)
		}
	})
	t.Run("out of range", func(t *testing.T) { // a granularity lockcheck cannot honour is bad input
		t.Parallel()
		for _, g := range []string{"-5", "3600001"} {
			code, out, errs := runBinary(t, bin, "run", "--client-cmd", worker+" -granularity "+g, "--lock", "mutex", "--time", "2s",
				"--quiet", "1s", "--results", t.TempDir())
			if code != exitUsage || !strings.Contains(errs, "announced lease_granularity_ms "+g+": want 0 (none) to 3600000") {
				t.Errorf("-granularity %s: exit %d, want %d:\n%s\n%s", g, code, exitUsage, out, errs)
			}
		}
	})
}

// worker-check holds a lock past its lease, without and with extend, for a worker whose application
// extends (kind mutex): a worker whose extend answers extended: true and extends nothing fails the extend
// item, its honest twin passes every item. Both take leases in whole seconds and announce it, so the
// lease worker-check picks is fitted to them. worker-check used to send no extend and hold no lock past a
// third of its lease, and passed the liar.
func TestWorkerCheckExtend(t *testing.T) {
	t.Parallel() // fault-free runs of the binary
	worker := buildLeaseWorker(t)
	for _, c := range []struct {
		name  string
		flags []string
		code  int
		want  []string
	}{
		{"honest", nil, exitValid, []string{"✓ lease: holds of 2s-3s on a 1s lease, never extended, were taken over",
			"✓ extend: holds of 2s-3s on a 1s lease, extended every 333ms: valid"}},
		{"lying", []string{"-lying"}, exitInvalid, []string{"✓ lease: ",
			"✗ extend: holds of 2s-3s on a 1s lease, extended every 333ms: verdict invalid: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out := workerCheck(t, append([]string{worker, "-granularity", "1000"}, c.flags...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q", w)
				}
			}
			if t.Failed() {
				t.Logf("worker-check:\n%s", out)
			}
		})
	}
}

// worker-check --help shows one default for --lock (it showed its own words and cobra's "reentrant").
func TestWorkerCheckLockDefault(t *testing.T) {
	code, out, _ := runBinary(t, buildBinary(t), "worker-check", "--help")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "--lock ") && (code != exitValid || strings.Count(line, "default") != 1) {
			t.Fatalf("exit %d; --lock: %s", code, line)
		}
	}
	if !strings.Contains(out, "--lock ") {
		t.Fatalf("no --lock in:\n%s", out)
	}
}

// A worker whose library calls scripts lockcheck does not know gets the wire line, which links the section
// of docs/protocol.md that explains it (it appeared on such runs unexplained).
func TestWireLineExplained(t *testing.T) {
	t.Parallel() // a fault-free run of the binary
	worker := buildLeaseWorker(t)
	code, out, errs := runBinary(t, buildBinary(t), "run", "--client-cmd", worker+" -own-scripts", "--lease", "1s",
		"--hold", "50ms-200ms", "--clients", "2", "--threads", "1", "--time", "3s", "--quiet", "1s", "--results", t.TempDir())
	line := ""
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "lockcheck: wire: calls of unknown lock scripts not recorded: ") {
			line = l
		}
	}
	if code != exitValid || !strings.HasSuffix(line, runner.WireDoc+")") {
		t.Fatalf("exit %d, want %d and the wire line ending in a link to %s:\n%s\n%s", code, exitValid, runner.WireDoc, out, errs)
	}
	doc, anchor, _ := strings.Cut(runner.WireDoc, "#")
	b, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok && strings.ReplaceAll(strings.ToLower(h), " ", "-") == anchor {
			found = true
		}
	}
	if !found {
		t.Errorf("%s has no heading for #%s", doc, anchor)
	}
}

// docs/protocol.md's Python example runs as the doc says a user runs it: from a folder outside the
// repository with lcp.py copied beside it, against a real redis-server (redis-py's Redis is played by
// testdata/redis_standin.py: the machine has no redis-py). init_ok carries lease_granularity_ms when the
// Backend sets it; an acquire, a refused acquire, an extend and a release, then error 40 for a release of
// a lock not held.
func TestProtocolDocPython(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	langs, texts := protocolBlocks(t)
	example := ""
	for i, l := range langs {
		if l == "python" {
			example = texts[i]
		}
	}
	const unit = "lease_granularity_ms = 0"
	if !strings.Contains(example, unit) {
		t.Fatalf("docs/protocol.md has no python block with %q", unit)
	}
	pw := node.NewPassword()
	n := redistest.StartConfig(t, node.Config{Persistence: node.PersistNone, Password: pw})
	for _, granularity := range []int64{0, 1000} {
		dir := t.TempDir()
		for from, to := range map[string]string{"../../workers/lcp-python/lcp.py": "lcp.py", "testdata/redis_standin.py": "redis.py"} {
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		src := strings.Replace(example, unit, fmt.Sprintf("lease_granularity_ms = %d", granularity), 1)
		if err := os.WriteFile(filepath.Join(dir, "my_worker.py"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(python, "my_worker.py")
		cmd.Dir = dir
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		var errs strings.Builder
		cmd.Stderr = &errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		id := int64(0)
		send := func(m sdk.Message) sdk.Message {
			t.Helper()
			id++
			m.MsgID = id
			b, _ := json.Marshal(m)
			in.Write(append(b, '\n'))
			var r sdk.Message
			if !lines.Scan() || json.Unmarshal(lines.Bytes(), &r) != nil || r.InReplyTo != id {
				t.Fatalf("%s: no reply (%q); stderr:\n%s", b, lines.Text(), errs.String())
			}
			return r
		}
		r := send(sdk.Message{Type: sdk.TypeInit, Protocol: sdk.Protocol, Client: "c1",
			Topology: &sdk.Topology{Kind: "single", Nodes: []sdk.Node{{Name: "n1", Addr: n.Addr()}}}, Password: pw,
			Lock: &sdk.Lock{Kind: "mutex", Family: "mutex"}, Options: &sdk.Options{WatchdogMs: 30000, WaitMs: 0, TimeoutMs: 3000}})
		if r.Type != "init_ok" || !slices.Equal(r.Kinds, []string{"mutex"}) || r.LeaseGranularityMs != granularity {
			t.Fatalf("granularity %d: init answered %+v", granularity, r)
		}
		key := []string{fmt.Sprintf("doc-python-%d", granularity)}
		for _, step := range []struct {
			req  sdk.Message
			want func(sdk.Message) bool
		}{
			{sdk.Message{Type: sdk.TypeAcquire, Thread: 1, Keys: key, LeaseMs: 5000}, func(r sdk.Message) bool { return r.Granted != nil && *r.Granted }},
			{sdk.Message{Type: sdk.TypeAcquire, Thread: 2, Keys: key, LeaseMs: 5000}, func(r sdk.Message) bool { return r.Granted != nil && !*r.Granted }},
			{sdk.Message{Type: sdk.TypeExtend, Thread: 1, Keys: key, LeaseMs: 5000}, func(r sdk.Message) bool { return r.Extended != nil && *r.Extended }},
			{sdk.Message{Type: sdk.TypeRelease, Thread: 1, Keys: key}, func(r sdk.Message) bool { return r.Type == "release_ok" }},
			{sdk.Message{Type: sdk.TypeRelease, Thread: 1, Keys: key}, func(r sdk.Message) bool { return r.Code != nil && *r.Code == sdk.CodeNotHeld }},
		} {
			if r := send(step.req); !step.want(r) {
				b, _ := json.Marshal(r)
				t.Fatalf("%s %d: answered %s; stderr:\n%s", step.req.Type, step.req.Thread, b, errs.String())
			}
		}
		in.Close() // the worker exits 0 when stdin closes
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v; stderr:\n%s", err, errs.String())
		}
	}
}
