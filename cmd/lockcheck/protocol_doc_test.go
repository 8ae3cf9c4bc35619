package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/workers/sdk"
)

// docs/protocol.md's own examples are tested here (the other docs' commands: docs_test.go): its JSON
// messages parse as protocol messages through workers/sdk's types, its tables name what the code knows,
// and its lockcheck commands run, with ./my-worker the stand-in worker (newuser_test.go).

const protocolDoc = "../../docs/protocol.md"

// protocolBlocks returns the fenced blocks of docs/protocol.md with their language.
func protocolBlocks(t *testing.T) (langs, texts []string) {
	t.Helper()
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	in, cur := false, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if l, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			if in = !in; in {
				langs, cur = append(langs, l), ""
			} else {
				texts = append(texts, cur)
			}
			continue
		}
		if in {
			cur += line + "\n"
		}
	}
	return langs, texts
}

func TestProtocolDocJSON(t *testing.T) {
	langs, texts := protocolBlocks(t)
	types := map[string]bool{"init_ok": true, "shutdown_ok": true}
	for _, r := range []string{sdk.TypeInit, sdk.TypeAcquire, sdk.TypeRelease, sdk.TypeExtend, sdk.TypeSetPermits,
		sdk.TypeAcquirePermits, sdk.TypeReleasePermits, sdk.TypeAcquirePermit, sdk.TypeReleasePermit, sdk.TypeAvailable,
		sdk.TypeSetCount, sdk.TypeCountDown, sdk.TypeAwait, sdk.TypeShutdown, sdk.TypeError, sdk.TypeEvent} {
		types[r] = true
	}
	n := 0
	for i, text := range texts {
		if langs[i] != "json" {
			continue
		}
		d := json.NewDecoder(strings.NewReader(text))
		d.DisallowUnknownFields() // a field the sdk does not know is one the doc made up
		var m sdk.Message
		if err := d.Decode(&m); err != nil {
			t.Errorf("json block %d: %v:\n%s", i, err, text)
			continue
		}
		if d.More() {
			t.Errorf("json block %d holds more than one message:\n%s", i, text)
		}
		switch {
		case !types[m.Type]:
			t.Errorf("json block %d: type %q is no protocol message", i, m.Type)
		case m.Type == sdk.TypeInit && (m.Protocol != sdk.Protocol || m.MsgID == 0 || m.Topology == nil || m.Options == nil):
			t.Errorf("json block %d: an init without protocol, msg_id, topology or options:\n%s", i, text)
		case m.Type == "init_ok" && (m.InReplyTo == 0 || len(m.Kinds) == 0):
			t.Errorf("json block %d: an init_ok without in_reply_to or kinds:\n%s", i, text)
		case m.Type == sdk.TypeError && (m.Code == nil || m.InReplyTo == 0):
			t.Errorf("json block %d: an error without code or in_reply_to:\n%s", i, text)
		}
		n++
	}
	if n < 6 {
		t.Fatalf("only %d json blocks found: the extraction is broken", n)
	}
}

// tableRows returns the first column (unquoted) and the rest of each row of the table under heading.
func tableRows(t *testing.T, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no %q in docs/protocol.md", heading)
	}
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		if strings.HasPrefix(cells[0], "---") || cells[0] == "request" || cells[0] == "code" || cells[0] == "cap" {
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}

// The requests, error codes and caps the doc lists are the ones the code has.
func TestProtocolDocTables(t *testing.T) {
	for _, r := range tableRows(t, "## Requests") {
		if r[0] == "shutdown" {
			continue
		}
		if !slices.Contains([]string{sdk.TypeAcquire, sdk.TypeRelease, sdk.TypeExtend, sdk.TypeSetPermits, sdk.TypeAcquirePermits,
			sdk.TypeReleasePermits, sdk.TypeAcquirePermit, sdk.TypeReleasePermit, sdk.TypeAvailable, sdk.TypeSetCount,
			sdk.TypeCountDown, sdk.TypeAwait, sdk.TypeHeld, sdk.TypeIsLocked, sdk.TypeForceUnlock}, r[0]) {
			t.Errorf("request %q is not in workers/sdk", r[0])
		}
	}
	codes := tableRows(t, "## Errors")
	if len(codes) < 8 {
		t.Fatalf("%d error codes", len(codes))
	}
	for _, r := range codes {
		code, err := strconv.Atoi(r[0])
		if err != nil || len(r) < 3 {
			t.Fatalf("error row %q", r)
		}
		if definite := r[2] == "definite"; definite != sdk.Definite(code) {
			t.Errorf("code %d is %s in the doc, definite=%v in workers/sdk", code, r[2], sdk.Definite(code))
		}
	}
	// Every cap lockcheck reads (the worker driver's caps["..."], the sdk's Cap constants) is in the table.
	var read []string
	files, _ := filepath.Glob("../../clients/worker/*.go")
	files = append(files, "../../workers/sdk/protocol.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`caps\["([a-z-]+)"\]|Cap[A-Za-z]+ += "([a-z-]+)"`).FindAllStringSubmatch(string(b), -1) {
			read = append(read, m[1]+m[2])
		}
	}
	var listed []string
	for _, r := range tableRows(t, "### Caps") {
		listed = append(listed, r[0])
	}
	if len(read) < 3 {
		t.Fatalf("found only %q read in the code: the search is broken", read)
	}
	for _, c := range read {
		if !slices.Contains(listed, c) {
			t.Errorf("lockcheck reads cap %q, which docs/protocol.md's Caps table does not list (it lists %q)", c, listed)
		}
	}
}

// The doc's lockcheck commands run as shown, against the stand-in worker.
func TestProtocolDocCommands(t *testing.T) {
	langs, texts := protocolBlocks(t)
	dir := t.TempDir()
	bin := buildMyWorker(t, dir)
	ran := 0
	for i, text := range texts {
		if langs[i] != "text" && langs[i] != "sh" {
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			words := strings.Fields(line)
			if len(words) < 2 || words[0] != "lockcheck" {
				continue
			}
			args := append([]string{words[1], "--results", filepath.Join(dir, "results")}, words[2:]...)
			for i, a := range args {
				if a == "./my-worker" {
					args[i] = bin
				}
			}
			stdout := capture(t, &os.Stdout)
			code := execute(t.Context(), args)
			out := stdout()
			if code != exitValid || words[1] == "worker-check" && strings.Count(out, "✓") != 5 { // my-worker extends: 5 items
				t.Errorf("%s: exit %d:\n%s", line, code, out)
			}
			ran++
		}
	}
	if ran < 2 {
		t.Fatalf("only %d lockcheck commands found in docs/protocol.md", ran)
	}
}
