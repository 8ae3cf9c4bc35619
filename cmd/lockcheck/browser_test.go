package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumPath finds Debian's chromium; the browser tests skip without it, except in CI (.ci/run installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (.ci/run installs it)")
	}
	t.Skip("chromium is not installed: apt-get install chromium")
	return ""
}

// browse loads url in a fresh headless Chromium, keeps a screenshot as shot in the test's artefact directory
// (go test -artifacts -outputdir DIR keeps them), and returns the DOM after the page's scripts ran. Any
// console message but lockcheck's own "every chart rendered", and any error the page caught, fails the test.
func browse(t *testing.T, url, shot string) string {
	t.Helper()
	bin := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	png := filepath.Join(t.ArtifactDir(), shot)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--hide-scrollbars", "--window-size=1280,1800",
		"--enable-logging=stderr", "--v=0", "--dump-dom", "--screenshot="+png, url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // its helpers too
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") && !strings.Contains(line, `"lockcheck: every chart rendered"`) {
			t.Errorf("console message on %s: %s", url, line)
		}
	}
	if m := regexp.MustCompile(`<html[^>]*data-errors="([^"]*)"`).FindSubmatch(dom); m != nil {
		t.Errorf("errors on %s: %s", url, m[1])
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() < 10_000 {
		t.Errorf("no screenshot of %s (%v)", url, err)
	} else {
		t.Logf("screenshot: %s", png)
	}
	return string(dom)
}

// attr is an element's attribute in a dumped DOM ("" when absent).
func attr(t *testing.T, dom, id, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<[a-z]+ [^>]*id="` + id + `"[^>]*>`).FindString(dom)
	if m == "" {
		t.Fatalf("no element #%s on the page", id)
	}
	v := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(m)
	if v == nil {
		return ""
	}
	return v[1]
}

// runInto runs lockcheck with its results under root and returns the exit code and the run's directory.
func runInto(t *testing.T, root string, args ...string) (int, string) {
	t.Helper()
	code := execute(context.Background(), append(args, "--results", root))
	latest, err := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if err != nil {
		t.Fatalf("exit %d and no run directory: %v", code, err)
	}
	return code, latest
}

// The summary page of a broken lock draws the overlaps in red and names the first violation in its banner;
// the porcupine timeline it links names its rows after client threads. (The README's "Reports" screenshots.)
func TestPageInBrowser(t *testing.T) {
	// Sequential: a 4 s negative control (naive) must be flagged.
	root := t.TempDir()
	code, dir := runInto(t, root, "run", "--lock", "naive", "--lease", "300ms", "--hold", "400ms-1s", "--time", "4s",
		"--quiet", "1s", "--clients", "4", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d", code, exitInvalid)
	}
	var res struct {
		Files    map[string]string `json:"files"`
		Checkers []struct {
			Checker   string `json:"checker"`
			Valid     any    `json:"valid"`
			Violation string `json:"violation"`
			At        int64  `json:"violation_at_ns"`
		} `json:"checkers"`
		Story struct{ Text string } `json:"story"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Files["page"] != filepath.Join(dir, "index.html") {
		t.Fatalf("results.json names no summary page: %v", res.Files)
	}
	firstAt := int64(-1)
	for _, c := range res.Checkers {
		if c.Valid == false && (firstAt < 0 || c.At < firstAt) {
			firstAt = c.At
		}
	}
	var firsts []string // checkers that saw a violation within the banner's millisecond: it may name any of them
	for _, c := range res.Checkers {
		if c.Valid == false && c.At-firstAt < int64(time.Millisecond) {
			firsts = append(firsts, c.Checker)
		}
	}
	dom := browse(t, "file://"+filepath.Join(dir, "index.html"), "summary-naive.png")
	if attr(t, dom, "gantt", "data-rendered") != "true" || attr(t, dom, "rate", "data-rendered") != "true" ||
		attr(t, dom, "latency", "data-rendered") != "true" || !strings.Contains(dom, `<body data-rendered="true"`) {
		t.Fatal("a chart did not render")
	}
	if n, _ := strconv.Atoi(attr(t, dom, "gantt", "data-overlaps")); n < 2 {
		t.Fatalf("the holder plot drew %d overlapping (red) sections", n)
	}
	banner := regexp.MustCompile(`(?s)<header id="banner"[^>]*>(.*?)</header>`).FindStringSubmatch(dom)
	named := banner != nil && slices.ContainsFunc(firsts, func(c string) bool {
		return strings.Contains(banner[1], fmt.Sprintf("first violation (%s) at", c))
	})
	if !named || !strings.Contains(banner[1], fmt.Sprintf("%.3fs", float64(firstAt)/1e9)) {
		t.Fatalf("the banner does not name the first violation (%v at %d ns): %.600s", firsts, firstAt, banner)
	}
	// The run's story leads the banner, under the verdict (text as the DOM serializes it: &, < and > escaped).
	story := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(res.Story.Text)
	if res.Story.Text == "" || !strings.Contains(banner[1], `INVALID</div><div class="story" id="story">`+story+"</div>") {
		t.Fatalf("the banner does not lead with the story %q: %.600s", res.Story.Text, banner)
	}
	if cl := regexp.MustCompile(`<pre id="command">([^<]*)</pre>`).FindStringSubmatch(dom); cl == nil ||
		!strings.HasPrefix(cl[1], "lockcheck run ") || !strings.Contains(cl[1], " --hold=400ms-1s") || !strings.Contains(cl[1], " --seed=1") {
		t.Fatal("the page lacks the run's command line")
	}

	// The proof: proof.jsonl, listed in results.json, a history of its own that checks invalid, drawn on
	// the page as its own timeline.
	if res.Files["proof"] != filepath.Join(dir, "proof.jsonl") {
		t.Fatalf("results.json names no proof: %v", res.Files)
	}
	if code := execute(context.Background(), []string{"check", res.Files["proof"]}); code != exitInvalid {
		t.Fatalf("lockcheck check proof.jsonl: exit %d, want %d", code, exitInvalid)
	}
	if n, _ := strconv.Atoi(attr(t, dom, "proof", "data-ops")); attr(t, dom, "proof", "data-rendered") != "true" || n < 2 || n > 10 {
		t.Fatalf("the proof's timeline: rendered %q, %d operations", attr(t, dom, "proof", "data-rendered"), n)
	}

	timeline := browse(t, "file://"+filepath.Join(dir, "history.html"), "timeline-naive.png")
	for _, row := range []string{">c1/1<", ">c4/1<"} {
		if !strings.Contains(timeline, row) {
			t.Fatalf("the timeline has no row labelled %s", row)
		}
	}
}

// Every fault window is shaded on every plot of a partition,kill run's page.
func TestPageShadesEveryFault(t *testing.T) {
	t.Parallel() // a safe lock's valid faulted run and its page: no timing edge
	root := t.TempDir()
	code, dir := runInto(t, root, "run", "--lock", "reentrant", "--nemesis", "partition,kill", "--nemesis-interval", "1s",
		"--nemesis-duration", "1s", "--time", "7s", "--quiet", "2s", "--persistence", "always", "--seed", "3")
	if code > exitUnknown { // the verdict is TestFaultRunsHeal's business; this test needs a judged run
		t.Fatalf("exit %d", code)
	}
	var res struct {
		Faults []struct {
			Kind string `json:"Kind"`
		} `json:"faults"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range res.Faults {
		kinds[f.Kind] = true
	}
	if !kinds["partition"] || !kinds["kill"] {
		t.Fatalf("the run applied %v, want a partition and a kill", res.Faults)
	}
	dom := browse(t, "file://"+filepath.Join(dir, "index.html"), "summary-partition-kill.png")
	for _, plot := range []string{"rate", "latency", "gantt"} {
		if attr(t, dom, plot, "data-rendered") != "true" {
			t.Fatalf("plot %s did not render", plot)
		}
		if got := attr(t, dom, plot, "data-bands"); got != strconv.Itoa(len(res.Faults)) {
			t.Errorf("plot %s shaded %s fault windows, want %d", plot, got, len(res.Faults))
		}
	}
}

// lockcheck serve lists every run of the store with its verdict, picks up a run that appears while it
// serves, keeps the nodes' private files private, and stops cleanly on SIGTERM.
func TestServeInBrowser(t *testing.T) {
	// Sequential: a 3 s negative control (naive) must be flagged.
	chromiumPath(t)
	root := t.TempDir()
	codeA, a := runInto(t, root, "run", "--lock", "naive", "--lease", "300ms", "--hold", "400ms-1s", "--time", "3s",
		"--quiet", "1s", "--clients", "4", "--seed", "2")
	codeB, b := runInto(t, root, "run", "--lock", "reentrant", "--time", "2s", "--quiet", "1s", "--seed", "2")
	if codeA != exitInvalid || codeB != exitValid {
		t.Fatalf("exits %d and %d, want %d and %d", codeA, codeB, exitInvalid, exitValid)
	}
	cmd := exec.Command(buildBinary(t), "serve", "--results", root, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	lines := bufio.NewScanner(stderr)
	if !lines.Scan() {
		t.Fatal("serve printed nothing")
	}
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:[0-9]+)/`).FindStringSubmatch(lines.Text())
	if m == nil {
		t.Fatalf("serve said %q", lines.Text())
	}
	base := m[1]
	var rest strings.Builder
	go func() { _, _ = io.Copy(&rest, stderr); exited <- cmd.Wait() }()

	verdicts := func(dom string) map[string]string {
		out := map[string]string{}
		re := regexp.MustCompile(`(?s)<tr data-verdict="([a-z]+)">.*?<a class="page" href="/runs/([^"]+)/index.html">`)
		for _, r := range re.FindAllStringSubmatch(dom, -1) {
			out[r[2]] = r[1]
		}
		return out
	}
	dom := browse(t, base+"/", "serve-index.png")
	if !strings.Contains(dom, `<body data-rendered="true"`) {
		t.Fatal("the index did not render")
	}
	got := verdicts(dom)
	if len(got) != 2 || got[filepath.Base(a)] != "invalid" || got[filepath.Base(b)] != "valid" {
		t.Fatalf("the index lists %v, want %s invalid and %s valid", got, filepath.Base(a), filepath.Base(b))
	}
	// Filtered to the invalid runs, sorted by seed: the valid run is hidden.
	view := browse(t, base+"/?verdict=invalid&sort=seed&desc=1", "serve-filtered.png")
	if !regexp.MustCompile(`<tr data-verdict="valid" hidden="">`).MatchString(view) ||
		regexp.MustCompile(`<tr data-verdict="invalid" hidden="">`).MatchString(view) || !strings.Contains(view, `class="desc"`) {
		t.Fatal("filtering by verdict or sorting did not apply")
	}
	page := browse(t, base+"/runs/"+filepath.Base(a)+"/index.html", "serve-summary.png")
	if !strings.Contains(page, `<body data-rendered="true"`) {
		t.Fatal("the summary page served did not render")
	}
	resp, err := http.Get(base + "/runs/" + filepath.Base(b) + "/nodes/n1/redis.conf")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a node's config (it holds the password) was served: %s", resp.Status)
	}

	// A run that finishes while serving is listed on the next load.
	c := filepath.Join(root, "20990101T000000.000-late")
	if err := os.CopyFS(c, os.DirFS(b)); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := verdicts(string(body)); len(got) != 3 || got["20990101T000000.000-late"] != "valid" {
		t.Fatalf("after a new run the index lists %v", got)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, rest.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of SIGTERM")
	}
}

// serve refuses an address beyond loopback with one line and 254.
func TestServeRefusesNonLoopback(t *testing.T) {
	t.Parallel() // bad input: nothing starts
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		if code := execute(context.Background(), []string{"serve", "--results", t.TempDir(), "--addr", addr}); code != exitUsage {
			t.Errorf("--addr %s: exit %d, want %d", addr, code, exitUsage)
		}
	}
}

// A summary page that cannot be written is a note; the verdict and the other outputs stand.
func TestPageFailureKeepsVerdict(t *testing.T) {
	// Sequential: a 3 s negative control (naive) must be flagged.
	code, dir := run(t, "run", "--lock", "naive", "--lease", "300ms", "--hold", "400ms-1s", "--time", "3s",
		"--quiet", "1s", "--clients", "4", "--seed", "3")
	if code != exitInvalid {
		t.Fatalf("exit %d", code)
	}
	// Something lockcheck did not write sits where the re-check's page would go.
	if err := os.Mkdir(filepath.Join(dir, "history.check.summary.html"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code := execute(context.Background(), []string{"check", dir}); code != exitInvalid {
		t.Fatalf("check: exit %d, want %d", code, exitInvalid)
	}
	b, err := os.ReadFile(filepath.Join(dir, "history.check.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "no summary page: ") || strings.Contains(string(b), `"page"`) {
		t.Fatalf("history.check.json does not report the missing page: %.400s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "history.check.html")); err != nil {
		t.Fatal(err)
	}
}

// A semaphore's page plots the permits in use against those that exist: on a healthy run every read of the
// available permits, plus those held then, finds the permits it was set to.
func TestPageSemaphorePermits(t *testing.T) {
	t.Parallel() // fault-free valid run and its page
	code, dir := run(t, "run", "--lock", "semaphore", "--permits", "2", "--time", "3s", "--quiet", "1s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d", code)
	}
	dom := browse(t, "file://"+filepath.Join(dir, "index.html"), "summary-semaphore.png")
	if attr(t, dom, "permits", "data-rendered") != "true" {
		t.Fatal("the permits plot did not render")
	}
	m := regexp.MustCompile(`(?s)<script id="data" type="application/json">(.*?)</script>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("no page data")
	}
	var data struct {
		Permits *struct {
			Exist int64        `json:"exist"`
			InUse []int        `json:"in_use"`
			Reads [][2]float64 `json:"reads"`
		} `json:"permits"`
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatal(err)
	}
	p := data.Permits
	if p == nil || p.Exist != 2 || len(p.Reads) == 0 || slicesMax(p.InUse) != 2 {
		t.Fatalf("permits %+v: want 2 set, 2 in use at the busiest and some reads", p)
	}
	for _, r := range p.Reads {
		if r[1] != 2 {
			t.Fatalf("at %.3fs the permits that exist were %v, not 2", r[0], r[1])
		}
	}
}

func slicesMax(a []int) int {
	m := 0
	for _, v := range a {
		m = max(m, v)
	}
	return m
}

// lockcheck serve on a results directory holding a suite, a compare and a repro, each where the command
// writes it by default (results/suites/NAME-TIME, results/compare/TIME, results/repro/TIME), lists and
// links every run they kept: the README says it browses every run's page. One of them, repro's caught
// run, opens in a browser.
func TestServeListsSuiteCompareRepro(t *testing.T) {
	t.Parallel() // child lockcheck processes: fault-free runs and the naive control, flagged on its own
	chromiumPath(t)
	root := t.TempDir()
	s := writeSuite(t, "name: tiny\ndefaults:\n  time: 2s\n  flags: {quiet: 1s}\nentries:\n  - name: rlock\n    lock: reentrant\n")
	for _, args := range [][]string{
		{"suite", s, "--keep", "all", "--results", filepath.Join(root, "suites", "tiny-20261128T150000")},
		{"compare", "--locks", "naive", "--scenarios", "S1", "--seeds", "1", "--results", filepath.Join(root, "compare", "20261128T150100")},
		{"repro", "design-unconditional-unlock", "--seeds", "1", "--results", filepath.Join(root, "repro", "20261128T150200")},
	} {
		if code, out, errs := runSuite(t, args...); code > exitInvalid {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
	// The runs they kept, as their suite.json files name them.
	var want []string
	reports, _ := filepath.Glob(filepath.Join(root, "*", "*", "suite.json"))
	more, _ := filepath.Glob(filepath.Join(root, "*", "*", "*", "suite.json"))
	for _, p := range append(reports, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct{ Outcomes []struct{ Dir string } }
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		for _, o := range rep.Outcomes {
			rel, _ := filepath.Rel(root, filepath.Join(filepath.Dir(p), o.Dir))
			want = append(want, filepath.ToSlash(rel))
		}
	}
	if len(want) < 4 { // suite 1, compare 1, repro 2
		t.Fatalf("the commands kept %d runs: %v", len(want), want)
	}
	base := startServe(t, root, "127.0.0.1")
	dom := browse(t, base+"/", "serve-every-run.png")
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a class="page" href="/runs/([^"]+)/index.html">`).FindAllStringSubmatch(dom, -1) {
		linked[m[1]] = true
	}
	var caught string
	for _, w := range want {
		if !linked[w] {
			t.Errorf("run %s is not listed and linked; the index links %v", w, linked)
		}
		if strings.HasPrefix(w, "repro/") && strings.Contains(w, "buggy") {
			caught = w
		}
	}
	if caught == "" {
		t.Fatalf("no buggy run of the repro among %v", want)
	}
	page := browse(t, base+"/runs/"+caught+"/index.html", "serve-repro-run.png")
	if !strings.Contains(page, `<body data-rendered="true"`) {
		t.Fatal("the repro's caught run did not render")
	}
}
