package bugreport

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// hostile is what a worker's init_ok or an edited run directory can put in any string a report quotes.
const hostile = "x\n```\n# Pwned @octocat <img src=x onerror=alert(1)> [click](https://evil.example) www.evil.example &lt;b&gt; | cell\u202e\x1b]0;title\x07"

// A report quotes every string that came from a worker or a file so that, rendered, it mentions nobody,
// opens no HTML, makes no link, starts no heading and closes no code block early (issue 36, item 9).
func TestReportEscapesWhatCameFromAFile(t *testing.T) {
	in := &Input{Dir: "/runs/r1", Ops: 3,
		Results: &report.Results{Valid: checker.Invalid, Topology: "single" + hostile, Nemesis: []string{"partition" + hostile}, Seed: 3,
			Options:  json.RawMessage(`{}`),
			Story:    &report.Story{Kind: report.Overlap, Key: "lock-0" + hostile, Text: "two owners" + hostile},
			Checkers: []checker.Result{{Checker: "mutual-exclusion" + hostile, Valid: checker.Invalid, Violation: "overlap" + hostile}},
			Faults:   []history.Window{{Kind: "partition" + hostile, Targets: []string{"n1" + hostile}, Start: 1, End: 2, Healed: true}}},
		Meta: history.RunMeta{Lock: "reentrant" + hostile, Versions: map[string]string{"lockcheck": "v1" + hostile, "server": "redis" + hostile},
			Client:  &history.Client{Library: "redisson" + hostile, Version: "3.17.0" + hostile, Runtime: "java" + hostile},
			Command: []string{"lockcheck", "run", "--lock=reentrant" + hostile, "--hold=1s", "--client-cmd=sh -c 'id'\n```\n@octocat"}},
		Proof: []string{`{"type":"op"}`, "```", "@octocat <img src=x>"}}
	var b bytes.Buffer
	if err := in.Write(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	t.Log(md)
	prose := withoutCode(md)
	for _, bad := range []string{"@octocat", `(^|[^\\])<img`, `[^\\]\]\(`, "https://evil", "www.evil", `(^|[^\\])&lt;`, `(^|[^\\])\| cell`, "\u202e", "\x1b", "\x07"} {
		if regexp.MustCompile(bad).MatchString(prose) {
			t.Errorf("the report's text carries %q raw", bad)
		}
	}
	for _, l := range strings.Split(prose, "\n") {
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "## ") && !strings.HasPrefix(l, report.ReportMarker+"# ") && !strings.HasPrefix(l, "# ") {
			t.Errorf("a heading that is not the report's: %q", l)
		}
		if strings.HasPrefix(l, "# Pwned") {
			t.Errorf("a worker's string made a heading: %q", l)
		}
	}
	// Every fenced block closes where the report closes it: the fence is longer than any run inside.
	if strings.Count(md, "\n## ") != strings.Count(prose, "\n## ") {
		t.Errorf("a section heading ended up inside a code block")
	}
	// The recorded --client-cmd is not in the command to run, and is named beside it.
	_, after, _ := strings.Cut(md, "## Steps to reproduce\n\n")
	fence, rest, _ := strings.Cut(after, "sh\n")
	command, _, closed := strings.Cut(rest, "\n"+fence+"\n")
	if !closed || strings.Trim(fence, "`") != "" || strings.Contains(command, "client-cmd") || !strings.Contains(command, "--hold=1s") {
		t.Fatalf("the command block %q (fence %q)", command, fence)
	}
	if !strings.Contains(md, "Left out of the command above") || !strings.Contains(md, "--client-cmd=") {
		t.Errorf("the left-out --client-cmd is not named")
	}
}

// md, code and block keep their text visible and whole.
func TestMarkdownHelpers(t *testing.T) {
	if got := md("a_b*c"); got != `a\_b\*c` {
		t.Errorf("md: %q", got)
	}
	if got := code("a``b"); got != "```a``b```" {
		t.Errorf("code: %q", got)
	}
	if got := code("`x"); got != "`` `x ``" {
		t.Errorf("code: %q", got)
	}
	if got := block("sh", "a\n````\nb"); got != "`````sh\na\n````\nb\n`````\n" {
		t.Errorf("block: %q", got)
	}
}

// withoutCode is a Markdown text without its fenced blocks and code spans, read as CommonMark does: a
// block ends at a fence line of at least its opening's backticks, a span at the next run of exactly as many.
func withoutCode(md string) string {
	var out strings.Builder
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if n := longestRun(lines[i], '`'); n >= 3 && strings.HasPrefix(lines[i], strings.Repeat("`", n)) {
			for i++; i < len(lines) && !(strings.Trim(lines[i], "`") == "" && len(lines[i]) >= n); i++ {
			}
			continue
		}
		l := lines[i]
		for {
			start := strings.Index(l, "`")
			if start < 0 {
				break
			}
			n := len(l[start:]) - len(strings.TrimLeft(l[start:], "`"))
			fence := strings.Repeat("`", n)
			rest := l[start+n:]
			end := -1
			for j := 0; j < len(rest); {
				k := strings.Index(rest[j:], fence)
				if k < 0 {
					break
				}
				k += j
				m := len(rest[k:]) - len(strings.TrimLeft(rest[k:], "`"))
				if m == n {
					end = k
					break
				}
				j = k + m
			}
			if end < 0 {
				break
			}
			l = l[:start] + rest[end+n:]
		}
		out.WriteString(l + "\n")
	}
	return out.String()
}
