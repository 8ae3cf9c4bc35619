package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// hostileRun runs the binary in its own process group with env added, killing the whole group if it has
// not ended within limit (then the test fails: a hostile input must never hang lockcheck).
func hostileRun(t *testing.T, env []string, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("lockcheck %s: still running after %v, killed; stderr:\n%.2000s", strings.Join(args, " "), limit, errb.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// hostileSpec writes a mutex spec into dir, its control and release given.
func hostileSpec(t *testing.T, dir, name, control, release string) string {
	t.Helper()
	text := "name: " + name + "\nfamily: mutex\n" + control + `operations:
  acquire:
    script: return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
    keys: ["{{key}}"]
    argv: ["{{token}}", "{{lease_ms}}"]
    reply: {granted: OK, refused: nil}
  release:
` + release + `    keys: ["{{key}}"]
    reply: {released: 1, not_held: 0}
`
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const delScript = "    script: return redis.call('DEL', KEYS[1])\n"

// A spec's control flags are applied as if typed: a spec naming --client-cmd ran a shell. Now it is
// refused when read, by `run` and `locks` alike, in one line with 254, and the command never runs.
func TestHostileSpecControlFlags(t *testing.T) {
	t.Parallel() // refused before anything starts
	dir := t.TempDir()
	pwned := filepath.Join(dir, "PWNED")
	for name, flags := range map[string]string{
		"evil-cmd":     `[--client-cmd, "sh -c 'id > ` + pwned + `'"]`,
		"evil-scripts": `[--lease, 300ms, --scripts, "` + dir + `"]`,
		"evil-results": `[--results, "` + dir + `"]`,
		"evil-backend": `[--backend, external, --external-addrs, "127.0.0.1:1"]`,
	} {
		spec := hostileSpec(t, dir, name, "control: {why: \"is evil\", flags: "+flags+"}\n", delScript)
		for _, args := range [][]string{
			{"run", "--lock-spec", spec, "--time", "2s", "--quiet", "1s", "--results", filepath.Join(dir, "results")},
			{"locks", "--lock-spec", spec},
		} {
			code, _, errs := hostileRun(t, nil, time.Minute, args...)
			if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
				!strings.Contains(errs, "control: flags: ") || !strings.Contains(errs, "is not a flag a control may set") {
				t.Errorf("%s %s: exit %d, stderr %q; want 254 and one line refusing the flag", args[0], name, code, errs)
			}
		}
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the spec's command ran: %s exists (%v)", pwned, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "results")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused spec started a run: %v", err)
	}
}

// What a control may still set cannot hang a run: at their bounds (24 h holds, waits, leases, timeouts and
// run time, 64 clients) the run starts, and a Ctrl-C once it runs ends it at once with its verdict.
func TestHostileSpecControlExtremes(t *testing.T) {
	// Sequential: stops a started run by signal.
	dir := t.TempDir()
	spec := hostileSpec(t, dir, "extreme", `control:
  why: "holds for a day"
  flags: [--hold, 23h-24h, --wait, 24h, --lease, 24h, --timeout, 24h, --watchdog, 24h, --time, 24h, --quiet, 1s, --clients, "64"]
`, delScript)
	cmd := exec.Command(buildBinary(t), "run", "--lock-spec", spec, "--results", filepath.Join(dir, "results"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a hang fails below; nothing is left behind
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	defer close(done)
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.Contains(sc.Text(), "extreme on single (") { // started: the workload is running
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()
	for sc.Scan() {
		said = append(said, sc.Text())
	}
	_ = cmd.Wait()
	if took := time.Since(interrupted); took > 30*time.Second || cmd.ProcessState.ExitCode() != exitUnknown {
		t.Fatalf("exit %d %v after Ctrl-C; want 2 (interrupted) at once\n%s", cmd.ProcessState.ExitCode(), took, strings.Join(said, "\n"))
	}
}

// Special files as a spec, a spec's script or an --external deployment: a device, a FIFO, a path out of
// the spec's directory. Each is one line and 254 at once: no hang (a FIFO's open waited for a writer, deaf
// to Ctrl-C), no out-of-memory (/dev/zero was read to the end), and nothing of an outside file shown.
func TestHostileSpecSpecialFiles(t *testing.T) {
	t.Parallel() // refused before anything starts
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.lua"), []byte("return 'TOPSECRET'"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"fifo.yaml", "fifo.lua", "fifo-ext.yaml"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) []string {
		return append([]string{"run", "--time", "2s", "--quiet", "1s", "--results", filepath.Join(dir, "results")}, args...)
	}
	spec := func(name, file string) string { return hostileSpec(t, dir, name, "", "    file: "+file+"\n") }
	for what, tc := range map[string]struct {
		args []string
		want string
	}{
		"spec /dev/zero":       {run("--lock-spec", "/dev/zero"), "/dev/zero: not a regular file (a character device)"},
		"spec FIFO":            {run("--lock-spec", filepath.Join(dir, "fifo.yaml")), "fifo.yaml: not a regular file (a FIFO)"},
		"locks spec /dev/zero": {[]string{"locks", "--lock-spec", "/dev/zero"}, "not a regular file"},
		"file: /dev/zero":      {run("--lock-spec", spec("s-zero", "/dev/zero")), "file /dev/zero: not a path inside the spec's directory"},
		"file: FIFO":           {run("--lock-spec", spec("s-fifo", "fifo.lua")), "file fifo.lua: not a regular file (a FIFO)"},
		"file: absolute":       {run("--lock-spec", spec("s-abs", filepath.Join(outside, "secret.lua"))), "not a path inside the spec's directory"},
		"file: ..":             {run("--lock-spec", spec("s-up", "../"+filepath.Base(outside)+"/secret.lua")), "not a path inside the spec's directory"},
		"external /dev/zero":   {run("--backend", "external", "--external", "/dev/zero"), "--external: /dev/zero: not a regular file"},
		"external FIFO":        {run("--backend", "external", "--external", filepath.Join(dir, "fifo-ext.yaml")), "not a regular file (a FIFO)"},
		"external directory":   {run("--backend", "external", "--external", dir), "not a regular file (a directory)"},
	} {
		began := time.Now()
		code, _, errs := hostileRun(t, nil, 30*time.Second, tc.args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, tc.want) ||
			strings.Contains(errs, "TOPSECRET") {
			t.Errorf("%s: exit %d after %v, stderr %q; want 254 and one line with %q", what, code, time.Since(began), errs, tc.want)
		}
	}
}

// A spec lock whose acquire answers a contended attempt with 2 MB no rule matches, and whose release
// raises a 2 MB error: the run ends with a verdict, its history has no line the reader refuses (the
// texts are clipped to a few KiB where the client meets them), and `lockcheck check` accepts it.
func TestHostileSpecHugeReplies(t *testing.T) {
	t.Parallel() // hostile input: its bound is 2 minutes for a 4 s run
	dir := t.TempDir()
	acquire := `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.status_reply('OK') end; return string.rep('x', 2097152)`
	spec := hostileSpec(t, dir, "huge-replies", "", "    script: \"redis.call('DEL', KEYS[1]); return redis.error_reply(string.rep('y', 2097152))\"\n")
	b, _ := os.ReadFile(spec)
	text := strings.Replace(string(b), "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])", `"`+acquire+`"`, 1)
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "results")
	code, out, errs := hostileRun(t, nil, 2*time.Minute, "run", "--lock-spec", spec, "--clients", "3", "--hold", "50ms-100ms",
		"--time", "4s", "--quiet", "1s", "--seed", "1", "--results", root)
	if code > exitUnknown {
		t.Fatalf("run: exit %d, want a verdict\n%s\n%s", code, out, errs)
	}
	run, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	path := filepath.Join(run, "history.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	clipped, longest := 0, 0
	for sc.Scan() {
		longest = max(longest, len(sc.Bytes()))
		if bytes.Contains(sc.Bytes(), []byte("bytes in all]")) {
			clipped++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := f.Stat(); longest > 16<<10 || clipped == 0 || fi.Size() > 16<<20 {
		t.Fatalf("history: %d bytes, longest line %d bytes, %d clipped texts: want every text clipped to a few KiB",
			fi.Size(), longest, clipped)
	}
	h, err := history.ReadFile(path)
	if err != nil {
		t.Fatalf("the run's own history is refused: %v", err)
	}
	unknown, failed := 0, 0
	for _, o := range h.Ops {
		switch {
		case o.Invoke.F == "acquire" && o.Outcome() == history.Unknown:
			unknown++
		case o.Invoke.F == "release" && o.Outcome() == history.Fail:
			failed++
		}
	}
	if unknown == 0 || failed == 0 {
		t.Fatalf("%d unmatched acquires recorded unknown, %d error releases recorded failed: the run never met a huge reply", unknown, failed)
	}
	if code, out, errs := hostileRun(t, nil, 2*time.Minute, "check", run); code > exitUnknown {
		t.Fatalf("check: exit %d, want a verdict\n%s\n%s", code, out, errs)
	}
}

// `repro NAME --version V` where V does not build: nothing ran, so the answer is undetermined (exit 2),
// saying why with the build's last line, never "affected=false" with exit 0. The build is a stand-in
// worker folder whose build.sh fails, so no network is needed.
func TestHostileReproUndetermined(t *testing.T) {
	t.Parallel() // every run fails at its build, in a second
	workers := t.TempDir()
	if err := os.MkdirAll(filepath.Join(workers, "redsync"), 0o755); err != nil {
		t.Fatal(err)
	}
	build := "#!/bin/sh\necho \"go: github.com/go-redsync/redsync/v4@$1: no network here\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(workers, "redsync", "build.sh"), []byte(build), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"LOCKCHECK_WORKERS=" + workers, "LOCKCHECK_CACHE=" + t.TempDir()}
	code, out, errs := hostileRun(t, env, 3*time.Minute, "repro", "redsync-extend-lost-lock", "--version", "99.99.99",
		"--seeds", "2", "--parallel", "1", "--results", t.TempDir())
	if code != exitUnknown || strings.Contains(out, "affected=false") ||
		!strings.Contains(out, "redsync at 99.99.99: affected=undetermined: no run reached a verdict (2 of 2 failed): ") ||
		!strings.Contains(out, "no network here") {
		t.Fatalf("exit %d; want 2 and the line saying undetermined, with the build's error\n%s\n%s", code, out, errs)
	}
}
