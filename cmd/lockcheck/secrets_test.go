package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// echoWorker writes a worker that echoes the password its init hands it in every text it can send: its
// library, version and runtime, an error reply to every request, a lost, a renewed (with it as the key)
// and a log event, and its stderr; each text but library and version also carries extra, the other forms
// of it (JSON-escaped in the replies, as they are on the wire; only the last in runtime, which is bounded).
func echoWorker(t *testing.T, extra []string) string {
	t.Helper()
	var js []string
	for _, f := range extra {
		b, _ := json.Marshal(f)
		js = append(js, strings.Trim(string(b), `"`))
	}
	e, u := strings.Join(js, " "), strings.Join(extra, " ")
	r := "" // one form in runtime: init_ok's names are bounded (256 bytes)
	if len(js) > 0 {
		r = js[len(js)-1]
	}
	if strings.Contains(e+u+r, "'") {
		t.Fatalf("a form with a quote: %q", extra)
	}
	script := `#!/bin/sh
E='` + e + `'
U='` + u + `'
R='` + r + `'
say() { printf '%s\n' "$1"; }
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
pw=$(printf '%s' "$line" | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')
say "{\"type\":\"init_ok\",\"in_reply_to\":$id,\"library\":\"lib $pw\",\"version\":\"$pw\",\"runtime\":\"rt $R\",\"kinds\":[\"naive\"],\"caps\":[\"events\"]}"
printf 'connecting to redis://default:%s@127.0.0.1:6379 %s\n' "$pw" "$U" >&2
while read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
	thread=$(printf '%s' "$line" | sed -n 's/.*"thread":\([0-9]*\).*/\1/p')
	say "{\"type\":\"event\",\"event\":\"log\",\"text\":\"log $pw $E\"}"
	say "{\"type\":\"event\",\"event\":\"lost\",\"thread\":${thread:-1},\"key\":\"lock-0\",\"text\":\"lost $pw $E\"}"
	say "{\"type\":\"event\",\"event\":\"renewed\",\"thread\":${thread:-1},\"key\":\"$pw\",\"text\":\"renewed $pw $E\"}"
	say "{\"type\":\"error\",\"in_reply_to\":$id,\"code\":13,\"text\":\"crash $pw $E\"}"
done
`
	p := filepath.Join(t.TempDir(), "echo.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A worker that echoes the password it was given, in every text it sends and in every form (raw,
// JSON-escaped, URL-encoded with either case of hex), leaves it in no file of the run that group or other
// may read (history.jsonl, results.json, index.html, its stderr.log) and in nothing serve answers: the
// run's own random password, and an external deployment's with characters JSON and URLs escape.
func TestWorkerEchoedSecretIsRedacted(t *testing.T) {
	t.Parallel() // short runs of a shell worker, served
	common := []string{"--lock", "naive", "--hold", "50ms", "--time", "2s", "--quiet", "1s", "--clients", "1", "--seed", "1"}
	ran := func(t *testing.T, dir string, code int) {
		t.Helper()
		if code == exitHarness || code == exitUsage || dir == "" {
			t.Fatalf("exit %d", code)
		}
		b, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"f":"lost"`, `"f":"renewed"`, `"type":"unknown"`, `"library":"lib `} {
			if !strings.Contains(string(b), want) {
				t.Fatalf("the history has no %s: the worker's texts were not recorded\n%s", want, b)
			}
		}
	}
	t.Run("run-password", func(t *testing.T) {
		code, dir := run(t, append([]string{"run", "--client-cmd", echoWorker(t, nil)}, common...)...)
		ran(t, dir, code)
		noSecret(t, filepath.Dir(dir), nodePassword(t, dir), 1)
	})
	t.Run("external-password", func(t *testing.T) {
		secret := "ext" + node.NewPassword() + `@/:?#&<>%+\é`
		n := redistest.StartConfig(t, node.Config{Password: secret})
		code, dir := run(t, append([]string{"run", "--client-cmd", echoWorker(t, secretForms(secret)[1:]),
			"--backend", "external", "--external-addrs", n.Addr(), "--external-password", secret}, common...)...)
		ran(t, dir, code)
		noSecret(t, filepath.Dir(dir), secret, 0)
	})
}

// A suite entry's external-password is a secret: suite.json's args, junit.xml, the suite's page, its
// runs' files (the child's output.txt too, where its worker's echoes would show) and `suite --list` show
// REDACTED, in no form the value; the child run still gets the value (through its environment, out of the
// process list) and reaches the deployment.
func TestSuiteSecretFlagIsRedacted(t *testing.T) {
	t.Parallel() // one fault-free child run against its own Redis
	secret := "suite" + node.NewPassword() + "@/:?&%<"
	n := redistest.StartConfig(t, node.Config{Password: secret})
	forms := secretForms(secret)
	file := writeSuite(t, "name: ext\nentries:\n  - name: ext\n    lock: naive\n    nemeses: [none]\n    time: 2s\n    expect: unknown\n"+
		"    flags: {backend: external, external-addrs: '"+n.Addr()+"', external-password: '"+secret+"', quiet: 1s,\n"+
		"      client-cmd: '"+echoWorker(t, forms[1:])+"', hold: 50ms, clients: '1'}\n")
	code, out, errs := runSuite(t, "suite", file, "--list")
	if code != exitValid {
		t.Fatalf("--list: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(out, "--external-password=REDACTED") {
		t.Errorf("--list does not show the flag as REDACTED: %s", out)
	}
	if f := holdsSecret(out+errs, forms); f != "" {
		t.Errorf("--list shows the password (as %q): %s", f, out)
	}
	root := t.TempDir()
	junit := filepath.Join(root, "junit.xml")
	code, out, errs = runSuite(t, "suite", file, "--results", filepath.Join(root, "suite"), "--junit", junit, "--keep", "all")
	if code != exitValid {
		t.Fatalf("suite: exit %d (the child run must get the password)\n%s\n%s", code, out, errs)
	}
	if f := holdsSecret(out+errs, forms); f != "" {
		t.Errorf("the suite's output shows the password (as %q)", f)
	}
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if f := holdsSecret(string(b), forms); f != "" {
			t.Errorf("%s holds the password (as %q)", p, f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{junit, filepath.Join(root, "suite", "suite.json")} {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), "--external-password=REDACTED") {
			t.Errorf("%s does not show the flag as REDACTED (%v)", p, err)
		}
	}
	if files < 6 { // suite.json, its page, junit.xml, the run's history, results, stderr.log and output
		t.Errorf("only %d files under the suite's results: the run was not kept", files)
	}
}

// A worker that prints the password where lockcheck expects JSON ends the run (exit 255), and the line
// saying so (on stderr, in the history's end record, in results.json's notes) has it as REDACTED.
func TestWorkerGarbageEchoIsRedacted(t *testing.T) {
	t.Parallel() // one short run of the binary
	script := filepath.Join(t.TempDir(), "garbage.sh")
	body := `#!/bin/sh
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
pw=$(printf '%s' "$line" | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')
printf '{"type":"init_ok","in_reply_to":%s,"library":"g","version":"0","kinds":["naive"]}\n' "$id"
read -r line
echo "garbage $pw"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	code, out, errs := runBinary(t, buildBinary(t), "run", "--client-cmd", script, "--lock", "naive", "--time", "2s",
		"--quiet", "1s", "--clients", "1", "--seed", "1", "--results", root)
	dir, _ := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if code != exitHarness || dir == "" || !strings.Contains(errs, `not a JSON object: "garbage REDACTED"`) {
		t.Fatalf("exit %d, stderr %q; want 255 and the worker's line with the password REDACTED", code, errs)
	}
	if f := holdsSecret(out+errs, secretForms(nodePassword(t, dir))); f != "" {
		t.Errorf("the run's output holds the password: %s", errs)
	}
	noSecret(t, root, nodePassword(t, dir), 1)
}
