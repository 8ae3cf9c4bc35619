package lockspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/kinds"
)

// base is a valid mutex spec the error cases below break one way each.
const base = `name: t-lock
family: mutex
watchdog: {operation: extend, every: 1s}
operations:
  acquire:
    script: return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
    keys: ["{{key}}"]
    argv: ["{{token}}", "{{lease_ms}}"]
    reply: {granted: OK, refused: nil}
  release:
    script: return redis.call('DEL', KEYS[1])
    keys: ["{{key}}"]
    reply: {released: 1, not_held: 0}
  extend:
    script: return redis.call('PEXPIRE', KEYS[1], ARGV[1])
    keys: ["{{key}}"]
    argv: ["{{lease_ms}}"]
    reply: {extended: 1, not_held: 0}
`

func TestBaseIsValid(t *testing.T) {
	s, err := Parse([]byte(base), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Family != kinds.Mutex || s.WatchdogOp != "extend" || s.WatchdogEvery.Seconds() != 1 || s.Token != "random" ||
		s.WatchdogStopsOnError {
		t.Fatalf("parsed %+v", s)
	}
	for v, stops := range map[string]bool{"keep": false, "stop": true} {
		s, err := Parse([]byte(strings.Replace(base, "every: 1s}", "every: 1s, on_error: "+v+"}", 1)), "t.yaml", "")
		if err != nil || s.WatchdogStopsOnError != stops {
			t.Fatalf("on_error: %s: stops %v, %v", v, s != nil && s.WatchdogStopsOnError, err)
		}
	}
}

// Each class of bad spec gets one line naming the file and, where there is one, the operation.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string // replace old by new in base
		want     string
	}{
		{"unknown top-level field", "family: mutex", "family: mutex\nretries: 3", "t.yaml: line 3: unknown field retries"},
		{"unknown operation field", `    reply: {released: 1, not_held: 0}`, "    reply: {released: 1, not_held: 0}\n    timeout: 1s",
			"t.yaml: line 14: unknown field timeout"},
		{"unknown watchdog field", "every: 1s}", "every: 1s, jitter: 1}", `t.yaml: watchdog: unknown field "jitter"`},
		{"watchdog on_error", "every: 1s}", "every: 1s, on_error: retry}", `t.yaml: watchdog: on_error "retry": want keep`},
		{"unknown placeholder", `argv: ["{{token}}", "{{lease_ms}}"]`, `argv: ["{{tokn}}", "{{lease_ms}}"]`,
			"t.yaml: operation acquire: argv[1]: template \"{{tokn}}\": unknown placeholder {{tokn}} (have: key, tag"},
		{"unclosed placeholder", `keys: ["{{key}}"]
    argv: ["{{token}}"`, `keys: ["{{key"]
    argv: ["{{token}}"`, "t.yaml: operation acquire: keys[1]: template \"{{key\": {{ without }}"},
		{"hash tag in braces", `keys: ["{{key}}"]
    argv: ["{{token}}"`, `keys: ["{{{key}}}:x"]
    argv: ["{{token}}"`, "t.yaml: operation acquire: keys[1]: template \"{{{key}}}:x\": for the key as a hash tag write {{tag}}"},
		{"placeholder of another family", `argv: ["{{lease_ms}}"]`, `argv: ["{{permits}}"]`,
			"t.yaml: operation extend: argv[1]: {{permits}} has no value in this family's operations"},
		{"missing operation", "  release:\n", "  relase:\n", "t.yaml: operation relase: not an operation of a mutex (have: acquire, release, extend)"},
		{"no operations", "operations:", "ops:", "t.yaml: line 4: unknown field ops"},
		{"unknown family", "family: mutex", "family: barrier", `t.yaml: family "barrier": want mutex, rwlock (read-write) or semaphore`},
		{"bad name", "name: t-lock", "name: My Lock", `t.yaml: name "My Lock": want lower-case letters`},
		{"built-in name", "name: t-lock", "name: naive", `t.yaml: name "naive" is a built-in lock: choose another`},
		{"bad token", "family: mutex", "family: mutex\ntoken: uuid", `t.yaml: token "uuid": want random or now_ms`},
		{"bad retry delay", "family: mutex", "family: mutex\nretry_delay: soon", `t.yaml: retry_delay "soon": want a positive duration`},
		{"watchdog without its operation", "extend:\n", "extnd:\n", "t.yaml: operation extnd: not an operation of a mutex"},
		{"watchdog period", "every: 1s", "every: often", `t.yaml: watchdog: every "often": want a positive duration`},
		{"watchdog operation", "operation: extend", "operation: acquire", `t.yaml: watchdog: operation "acquire": want extend (or renew)`},
		{"script and file", "  release:\n    script:", "  release:\n    file: x.lua\n    script:", "t.yaml: operation release: both script: and file: given"},
		{"no script", "    script: return redis.call('DEL', KEYS[1])\n", "", "t.yaml: operation release: no script: give script:"},
		{"file not allowed", "    script: return redis.call('DEL', KEYS[1])\n", "    file: del.lua\n", "t.yaml: operation release: file del.lua: scripts in files are not allowed here"},
		{"no keys", "    keys: [\"{{key}}\"]\n    reply: {released", "    reply: {released", "t.yaml: operation release: keys: none given"},
		{"unknown outcome", "{granted: OK, refused: nil}", "{granted: OK, busy: nil}", `t.yaml: operation acquire: reply: unknown outcome "busy" here (have: granted, refused, ttl)`},
		{"outcome of another operation", "{released: 1, not_held: 0}", "{released: 1, extended: 0}", `t.yaml: operation release: reply: unknown outcome "extended" here`},
		{"matcher under two outcomes", "refused: nil", "refused: OK", `t.yaml: operation acquire: reply: "OK" matches both granted and refused`},
		{"float reply", "released: 1,", "released: 1.5,", "t.yaml: operation release: reply: released: 1.5 can never be a reply: Redis turns a Lua number into an integer"},
		{"boolean reply", "released: 1,", "released: true,", "t.yaml: operation release: reply: released: true can never be a reply"},
		{"ttl that is no number", "refused: nil", "ttl: OK", `t.yaml: operation acquire: reply: ttl: "OK" can never carry a number`},
		{"no grant", "{granted: OK, refused: nil}", "{refused: nil}", "t.yaml: operation acquire: reply: no reply is mapped to granted, so the client could never see one"},
		{"no reply", "    reply: {extended: 1, not_held: 0}\n", "", "t.yaml: operation extend: reply: missing"},
		{"empty list", "refused: nil", "refused: []", "t.yaml: operation acquire: reply: refused: an empty list matches nothing"},
		{"mapping matcher", "refused: nil", "refused: {type: nil}", "t.yaml: operation acquire: reply: refused: want a value or a type (nil, integer, string), got a mapping"},
		{"control flags", "family: mutex", "family: mutex\ncontrol: {why: x, flags: [--lease]}", "t.yaml: control: flags come in pairs"},
		{"two documents", "    reply: {extended: 1, not_held: 0}\n", "    reply: {extended: 1, not_held: 0}\n---\nname: x\n",
			"t.yaml: more than one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("base has no %q", tc.old)
			}
			_, err := Parse([]byte(strings.Replace(base, tc.old, tc.new, 1)), "t.yaml", "")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to start with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error has more than one line: %q", err)
			}
		})
	}
}

// The other families' own checks: a read-write lock's read release must say when the lock is free, a
// watchdog is a mutex's, {{token}} means nothing to a read of the permits.
func TestFamilyErrors(t *testing.T) {
	op := func(name, reply string, argv ...string) string {
		a := ""
		if len(argv) > 0 {
			a = "\n    argv: [\"" + strings.Join(argv, "\", \"") + "\"]"
		}
		return "  " + name + ":\n    script: return 1\n    keys: [\"{{key}}\"]" + a + "\n    reply: " + reply + "\n"
	}
	acq := "{granted: 1, refused: 0}"
	rel := "{released: 1, not_held: 0}"
	rw := "name: t-rw\nfamily: read-write\noperations:\n" + op("read_acquire", acq) + op("write_acquire", acq) +
		op("write_release", rel)
	sem := "name: t-sem\nfamily: semaphore\noperations:\n" + op("acquire_permits", acq, "{{permits}}") +
		op("release_permits", rel, "{{token}}")
	for _, tc := range []struct{ name, text, want string }{
		{"read release without last", rw + op("read_release", rel), "t.yaml: operation read_release: reply: no reply is mapped to last"},
		{"rw missing operation", rw, "t.yaml: operation read_release: missing (a rwlock needs read_acquire, read_release, write_acquire, write_release)"},
		{"rw watchdog", rw + op("read_release", "{released: integer, last: 0}") + "watchdog: {operation: extend, every: 1s}",
			"t.yaml: watchdog: only a mutex spec renews its holds"},
		{"token in available", sem + op("available", "{count: integer}", "{{token}}"),
			"t.yaml: operation available: argv[1]: {{token}} has no value here"},
		{"count not a number", sem + op("available", "{count: nil}"), "t.yaml: operation available: reply: count: nil can never carry a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), "t.yaml", "")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to start with %q", err, tc.want)
			}
		})
	}
	if _, err := Parse([]byte(rw+op("read_release", "{released: integer, last: 0}")), "t.yaml", ""); err != nil {
		t.Fatalf("the read-write lock with last: %v", err)
	}
}

// Every shipped example is a valid spec of the family it says, with its scripts read from their files.
func TestExamplesLoad(t *testing.T) {
	for file, fam := range map[string]*kinds.Family{"setnx.yaml": kinds.Mutex, "setnx-broken.yaml": kinds.Mutex,
		"rwlock.yaml": kinds.RW, "rwlock-zset-broken.yaml": kinds.RW, "semaphore.yaml": kinds.Expirable} {
		s, err := Load(filepath.Join("..", "examples", "locks", file))
		if err != nil {
			t.Fatal(err)
		}
		if s.Family != fam {
			t.Fatalf("%s: family %s", file, s.Family.Name)
		}
	}
	s, _ := Load("../examples/locks/setnx.yaml")
	if src := s.Ops["release"]; src.Source != filepath.Join("..", "examples", "locks", "setnx-release.lua") ||
		!strings.Contains(src.Script, "redis.call('GET', KEYS[1]) == ARGV[1]") {
		t.Fatalf("release script from %s: %q", src.Source, src.Script)
	}
	if b, _ := Load("../examples/locks/setnx-broken.yaml"); b.Broken == "" || len(b.Flags) == 0 {
		t.Fatal("the broken twin is not marked a control")
	}
	for file, stops := range map[string]bool{"base.yaml": false, "twin.yaml": true} {
		if s, err := Load(filepath.Join("..", "examples", "twins", "watchdog-gives-up", file)); err != nil || s.WatchdogStopsOnError != stops {
			t.Fatalf("twins/watchdog-gives-up/%s: %v (stops on error: %v)", file, err, s != nil && s.WatchdogStopsOnError)
		}
	}
	if _, err := Load("../examples/locks/nope.yaml"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a missing file: %v", err)
	}
}

// A missing script file is named.
func TestMissingScriptFile(t *testing.T) {
	dir := t.TempDir()
	text := strings.Replace(base, "    script: return redis.call('DEL', KEYS[1])\n", "    file: del.lua\n", 1)
	p := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), "operation release: file del.lua: open ") {
		t.Fatalf("error %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "del.lua"), []byte("return redis.call('DEL', KEYS[1])"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err != nil {
		t.Fatal(err)
	}
}

// Exact matchers win over type matchers whatever their order in the file, and a reply no rule matches is
// told apart.
func TestReplyClassification(t *testing.T) {
	text := strings.Replace(base, "{granted: OK, refused: nil}", "{ttl: integer, granted: [OK, 1], refused: [nil, -2]}", 1)
	s, err := Parse([]byte(text), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Ops["acquire"].Reply
	for _, tc := range []struct {
		reply any
		want  Outcome
		ok    bool
	}{{"OK", Granted, true}, {int64(1), Granted, true}, {nil, Refused, true}, {int64(-2), Refused, true},
		{int64(1500), TTL, true}, {"QUEUED", "", false}, {[]any{int64(1)}, "", false}} {
		got, ok := r.classify(tc.reply)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%#v: %q %v, want %q %v", tc.reply, got, ok, tc.want, tc.ok)
		}
	}
}

// Templates expand every placeholder, with literal text around them; {{tag}} is the key as a hash tag.
func TestTemplates(t *testing.T) {
	tm, err := parseTemplate("{{tag}}:readers:{{ owner }}")
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.expand(map[string]string{"tag": "{lock-0}", "owner": "ab:1"}); got != "{lock-0}:readers:ab:1" {
		t.Fatalf("expanded %q", got)
	}
	if !tm.uses("owner") || tm.uses("token") {
		t.Fatal("uses")
	}
}

// A spec may be registered again (a second run in one process) but never take a built-in lock's name.
func TestRegisterAgain(t *testing.T) {
	for range 2 {
		k, err := Register("../examples/locks/setnx.yaml")
		if err != nil || k.Name != "setnx" {
			t.Fatalf("%v %v", k, err)
		}
	}
	if _, err := Parse([]byte(strings.Replace(base, "name: t-lock", "name: reentrant", 1)), "t.yaml", ""); err == nil {
		t.Fatal("a spec took a built-in lock's name")
	}
}
