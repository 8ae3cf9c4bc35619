package lockspec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/runflag"
)

// A control's flags are the workload's only: a flag that names a command, a file, a directory, an address,
// a backend or a fault is refused when the spec is read, in one line naming the spec; so are a flag
// written another way than "--flag value" and a value not of its flag's form. The shipped controls (the
// examples' and the built-in kinds') keep to the list.
func TestControlFlagsAllowList(t *testing.T) {
	control := func(flags string) string {
		return strings.Replace(base, "family: mutex", "family: mutex\ncontrol: {why: broken, flags: "+flags+"}", 1)
	}
	for _, flags := range []string{
		`[--client-cmd, "sh -c 'id > /tmp/x'"]`, `[--client, "redis-py@../../x"]`, `[--client-option, a=b]`,
		`[--scripts, /tmp]`, `[--results, /tmp]`, `[--external, /etc/passwd]`, `[--external-addrs, "127.0.0.1:1"]`,
		`[--external-toxiproxy, "http://127.0.0.1:1"]`, `[--backend, docker]`, `[--docker-image, evil]`, `[--lock, naive]`,
		`[--lock-spec, /dev/zero]`, `[--nemesis, kill]`, `[--topology, cluster]`, `[--persistence, always]`, `[--seed, "1"]`,
		`[--lease, 300ms, --client-cmd, sh]`, `["--lease=300ms", --hold]`, `[lease, 300ms]`, `[-lease, 300ms]`,
	} {
		_, err := Parse([]byte(control(flags)), "t.yaml", "")
		if err == nil || !strings.HasPrefix(err.Error(), "t.yaml: control: flags: ") || !strings.Contains(err.Error(), "not a flag a control may set") ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("flags %s: error %v, want one line refusing the flag", flags, err)
		}
	}
	for flags, want := range map[string]string{
		`[--lease, soon]`: `--lease "soon": want a duration`, `[--clients, many]`: `--clients "many": want an integer`,
		`[--hold, soon]`: `--hold "soon": range "soon"`, `[--readers, "3"]`: `--readers "3": want READERS:WRITERS`,
		`[--reentry, often]`: `--reentry "often": want a chance in [0, 1]`, `[--lease, --client-cmd]`: `--lease "--client-cmd": want a duration`,
		`[--reentry, NaN]`: `--reentry "NaN": want a chance in [0, 1]`, `[--reentry, "-Inf"]`: `--reentry "-Inf": want a chance in [0, 1]`,
		`[--reentry, "1.5"]`: `--reentry "1.5": want a chance in [0, 1]`,
	} {
		if _, err := Parse([]byte(control(flags)), "t.yaml", ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("flags %s: error %v, want %q", flags, err, want)
		}
	}
	s, err := Parse([]byte(control(`[--lease, 300ms, --hold, 400ms-1s, --wait, 1s, --watchdog, 2s, --timeout, 1s, --clients, "4", --keys, "2", --time, 10s, --quiet, 1s, --reentry, "0", --readers, "3:1", --permits, "2", --group, "2", --count, "3"]`)), "t.yaml", "")
	if err != nil || len(s.Flags) != 28 {
		t.Fatalf("every workload flag: %v %v", s, err)
	}
	for _, name := range kinds.KindNames() {
		if k, _ := kinds.Lookup(name); k.Broken != "" {
			if err := CheckControlFlags(k.Flags); err != nil {
				t.Errorf("built-in control %s: %v", name, err)
			}
		}
	}
	if _, err := Load("../examples/locks/setnx-broken.yaml"); err != nil {
		t.Errorf("the example control: %v", err)
	}
}

// The spec's free texts reach the terminal: one line, no escape sequence, bounded.
func TestSpecProse(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(base, "family: mutex", "family: mutex\nabout: |\n  two\n  lines\n", 1)), "t.yaml", "")
	if err != nil || s.About != "two lines" {
		t.Fatalf("about %q, %v", s.About, err)
	}
	for text, want := range map[string]string{
		`about: "\e[2J\e]0;owned\a"`:                              `t.yaml: about: has the control character '\x1b'`,
		`about: "` + strings.Repeat("x", 2000) + `"`:              "t.yaml: about: 2000 bytes, more than the 1 KiB",
		`control: {why: "ok\u202egnp.exe", flags: [--lease, 1s]}`: `t.yaml: control: why: has the control character '\u202e'`,
	} {
		_, err := Parse([]byte(strings.Replace(base, "family: mutex", "family: mutex\n"+text, 1)), "t.yaml", "")
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%.40s: error %v, want %q", text, err, want)
		}
	}
}

// loadWithin is Load, failing the test instead of hanging when the load blocks (a FIFO opened for reading
// waits for a writer).
func loadWithin(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Load(path)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Load(%s) still blocked after 10s", path)
		return nil
	}
}

// A spec, and each of its file: scripts, is a regular file of at most SpecMax bytes inside the spec's
// directory: a device, a FIFO, a directory, a file too big, an absolute path, a path with "..", a symlink
// out of the directory are each refused at once with one line; a script in a subdirectory, or reached by a
// symlink that stays inside, is read.
func TestSpecFiles(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.lua")
	if err := os.WriteFile(secret, []byte("return 'TOPSECRET'"), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.lua"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", "del.lua"), []byte("return redis.call('DEL', KEYS[1])"), 0o644))
	must(os.Symlink(secret, filepath.Join(dir, "link-out.lua")))
	must(os.Symlink("sub/del.lua", filepath.Join(dir, "link-in.lua")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.lua")))
	must(os.WriteFile(filepath.Join(dir, "big.lua"), make([]byte, safefile.SpecMax+1), 0o644))
	must(os.WriteFile(filepath.Join(dir, "big.yaml"), make([]byte, safefile.SpecMax+1), 0o644))

	for path, want := range map[string]string{
		"/dev/zero":                     "lock spec: /dev/zero: not a regular file (a character device)",
		filepath.Join(dir, "fifo.yaml"): "not a regular file (a FIFO)",
		dir:                             "not a regular file (a directory)",
		filepath.Join(dir, "big.yaml"):  "more than the 1 MiB a file of this kind may have",
		filepath.Join(dir, "none.yaml"): "no such file or directory",
	} {
		if err := loadWithin(t, path); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--lock-spec %s: error %v, want one line with %q", path, err, want)
		}
	}

	spec := func(file string) string {
		p := filepath.Join(dir, "t.yaml")
		must(os.WriteFile(p, []byte(strings.Replace(base, "    script: return redis.call('DEL', KEYS[1])\n", "    file: "+file+"\n", 1)), 0o644))
		return p
	}
	for file, want := range map[string]string{
		"/dev/zero": "not a path inside the spec's directory",
		secret:      "not a path inside the spec's directory",
		"../" + filepath.Base(outside) + "/secret.lua": "not a path inside the spec's directory",
		"sub/../../x.lua": "not a path inside the spec's directory",
		"link-out.lua":    "escapes",
		"zero.lua":        "escapes",
		"fifo.lua":        "fifo.lua: not a regular file (a FIFO)",
		"sub":             "sub: not a regular file (a directory)",
		"big.lua":         "more than the 1 MiB",
		"none.lua":        "open " + filepath.Join(dir, "none.lua") + ": no such file or directory",
	} {
		err := loadWithin(t, spec(file))
		if err == nil || !strings.Contains(err.Error(), "operation release: file ") || !strings.Contains(err.Error(), want) ||
			strings.Contains(err.Error(), "TOPSECRET") || strings.Contains(err.Error(), "\n") {
			t.Errorf("file: %s: error %v, want one line with %q", file, err, want)
		}
	}
	for _, file := range []string{"sub/del.lua", "link-in.lua", "./sub/del.lua"} {
		s, err := Load(spec(file))
		if err != nil || !strings.Contains(s.Ops["release"].Script, "DEL") {
			t.Errorf("file: %s: %v", file, err)
		}
	}
}

// A script that returns or raises megabytes leaves no more than a few KiB of it anywhere: not in the
// error the client returns, nor in the history, and clipping keeps the outcome (a reply no rule takes
// is unknown; an error reply is definite, a fail).
func TestHugeRepliesClipped(t *testing.T) {
	const n = 2 << 20
	text := strings.Replace(base, "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])", "return string.rep('x', 2097152)", 1)
	text = strings.Replace(text, "return redis.call('DEL', KEYS[1])", "return redis.error_reply(string.rep('y', 2097152))", 1)
	cs, hist := clients(t, text, 1)
	m := cs[0].(locks.MutexClient).Mutex([]string{"k"}, 1)
	ok, err := m.TryLock(context.Background(), 0, time.Second)
	if ok || !errors.Is(err, ErrNoMatch) || len(err.Error()) > maxReply+200 || !strings.Contains(err.Error(), "[clipped: 2097152 bytes in all]") {
		t.Fatalf("TryLock: %v, a %d-byte error: want ErrNoMatch, clipped", ok, len(err.Error()))
	}
	err = m.Unlock(context.Background())
	if err == nil || !locks.Definite(err) || len(err.Error()) > maxReply+200 || !strings.Contains(err.Error(), "bytes in all]") {
		t.Fatalf("Unlock: a %d-byte error (definite %v): want a definite one, clipped", len(err.Error()), locks.Definite(err))
	}
	got := outcomes(hist())
	if strings.Join(got, ",") != "acquire unknown,release fail" {
		t.Fatalf("recorded %v", got)
	}
	for _, o := range hist().Ops {
		if len(o.Complete.Error) > maxReply+200 || len(o.Complete.Error) < maxReply {
			t.Errorf("%s recorded a %d-byte error (the reply was %d bytes)", o.Invoke.F, len(o.Complete.Error), n)
		}
	}
}

// Every flag a control may set is read and bounded by the run's own row (runflag): one without a row
// would be refused as not a control's flag, whatever the list says.
func TestEveryControlFlagHasItsRunRow(t *testing.T) {
	for _, f := range ControlFlags() {
		if _, ok := runflag.Lookup(f); !ok {
			t.Errorf("%s: no row in runflag.Flags", f)
		}
	}
}
