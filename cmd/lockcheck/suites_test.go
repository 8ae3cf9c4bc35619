package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node/server"
	"github.com/lockcheck/lockcheck/suite"
	"gopkg.in/yaml.v3"
)

// runSuite runs the built binary (a suite starts each run as a child lockcheck) and returns its exit code,
// stdout and stderr.
func runSuite(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runBinary(t, buildBinary(t), args...)
}

func writeSuite(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bad suite gets one line naming the entry and 254, before any run starts.
func TestSuiteBadFiles(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	for name, c := range map[string]struct{ body, want string }{
		"unknown lock":   {"entries:\n  - name: a\n    lock: nosuch\n", `entry "a"`},
		"unknown fault":  {"entries:\n  - name: b\n    lock: reentrant\n    nemeses: [nosuch]\n", `entry "b"`},
		"unknown field":  {"entries:\n  - name: c\n    lock: reentrant\n    colour: red\n", "field colour not found"},
		"unknown flag":   {"entries:\n  - name: d\n    lock: reentrant\n    flags: {nosuch: 1}\n", `entry "d"`},
		"bad expect":     {"entries:\n  - name: e\n    lock: reentrant\n    expect: green\n", `"green" is not valid`},
		"bad seeds":      {"entries:\n  - name: f\n    lock: reentrant\n    seeds: -2\n", "seeds"},
		"too short":      {"entries:\n  - name: g\n    nemeses: [\"partition,kill\"]\n    time: 5s\n", `entry "g"`},
		"no entries":     {"name: x\n", "no entries"},
		"duplicate name": {"entries:\n  - name: h\n  - name: h\n", "appears twice"},
	} {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			code, out, errs := runSuite(t, "suite", writeSuite(t, c.body), "--results", t.TempDir())
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q (stdout %q); want 254 and one line with %q", code, errs, out, c.want)
			}
		})
	}
}

// --shard i/n for every i covers every case of the suite exactly once, and an entry added to the suite moves
// no existing case to another shard.
func TestSuiteShardsPartition(t *testing.T) {
	t.Parallel() // pure: no run
	s, err := suite.Load(filepath.Join("..", "..", "examples", "suites", "matrix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	all := ids(s.Cases)
	for _, n := range []int{1, 2, 3, 7} {
		var union []string
		for i := 1; i <= n; i++ {
			part := *s
			part.Shard(i, n)
			union = append(union, ids(part.Cases)...)
		}
		slices.Sort(union)
		if !reflect.DeepEqual(union, all) {
			t.Fatalf("%d shards: %d cases, want the %d of the suite, each once", n, len(union), len(all))
		}
	}
	for _, c := range s.Cases {
		if suite.ShardOf(c.ID, 4) != suite.ShardOf(c.ID, 4) || suite.ShardOf(c.ID, 4) < 1 {
			t.Fatal("unstable shard")
		}
	}
}

func ids(cs []suite.Case) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	slices.Sort(out)
	return out
}

const tinySuite = `name: tiny
defaults:
  time: 2s
  flags: {quiet: 500ms, clients: "4"}
  seeds: [1, 2]
entries:
  - name: fine
    lock: reentrant
  - name: control
    lock: naive
    time: 3s
    flags: {lease: 300ms, hold: 400ms-1s}
    expect: invalid
`

// A suite run, and the same suite in two shards merged: the same table, JUnit a parser accepts with one
// testcase per run, exit 0 when every run met its expectation, and only failing runs keep their directory.
func TestSuiteShardsMergeToTheWholeTable(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	file := writeSuite(t, tinySuite)
	whole := filepath.Join(t.TempDir(), "whole")
	junit := filepath.Join(t.TempDir(), "whole.xml")
	code, out, errs := runSuite(t, "suite", file, "--results", whole, "--junit", junit, "--parallel", "1")
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	cases := readJUnit(t, junit)
	if len(cases) != 4 {
		t.Fatalf("%d testcases, want 4 (one per run)", len(cases))
	}
	if runs, _ := os.ReadDir(filepath.Join(whole, "runs")); len(runs) != 0 {
		t.Fatalf("%d run directories kept; runs that met their expectation keep none", len(runs))
	}
	shards := t.TempDir()
	for _, s := range []string{"1/2", "2/2"} {
		dir := filepath.Join(shards, "shard-"+s[:1])
		if code, out, errs := runSuite(t, "suite", file, "--shard", s, "--results", dir, "--parallel", "1"); code != exitValid && !strings.Contains(out, "ran nothing") {
			t.Fatalf("shard %s: exit %d\n%s\n%s", s, code, out, errs)
		}
	}
	merged := filepath.Join(t.TempDir(), "merged")
	mjunit := filepath.Join(t.TempDir(), "merged.xml")
	if code, out, errs := runSuite(t, "merge", "--out", merged, "--junit", mjunit, shards); code != exitValid {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errs)
	}
	a, b := table(t, whole), table(t, merged)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("merged table differs from the unsharded one:\n%v\n%v", a, b)
	}
	if len(readJUnit(t, mjunit)) != 4 {
		t.Fatal("merged JUnit has not one testcase per run")
	}
	if dom := browse(t, "file://"+filepath.Join(merged, "index.html"), "suite.png"); !strings.Contains(dom, `id="matrix"`) {
		t.Error("the suite page has no matrix")
	}
	page, err := os.ReadFile(filepath.Join(merged, "index.html"))
	if err != nil || !strings.Contains(string(page), "control/default/none") && !strings.Contains(string(page), "<td>control</td>") {
		t.Fatalf("suite page: %v", err)
	}
}

// table is a suite's matrix without times and paths: what must not depend on sharding.
func table(t *testing.T, dir string) []string {
	t.Helper()
	r, err := suite.ReadReport(filepath.Join(dir, "suite.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, row := range suite.Table(r) {
		for _, c := range row.Cells {
			out = append(out, strings.Join([]string{row.Entry, row.Topology, row.Nemesis, c.Label, c.Verdict, boolWord(c.Met)}, " "))
		}
	}
	return out
}

func boolWord(b bool) string {
	if b {
		return "met"
	}
	return "missed"
}

type junitDoc struct {
	Suites []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d junitDoc
	if err := xml.Unmarshal(b, &d); err != nil || len(d.Suites) != 1 || d.Suites[0].Tests != len(d.Suites[0].Cases) {
		t.Fatalf("JUnit does not parse as one testsuite with its count: %v\n%s", err, b)
	}
	var out []string
	for _, c := range d.Suites[0].Cases {
		s := c.Name
		if c.Failure != nil {
			s += " FAILED: " + c.Failure.Message
		}
		out = append(out, s)
	}
	return out
}

// A run that misses its expectation fails the suite (exit 1), its JUnit testcase carries the verdict and the
// first violation, and its directory is kept; a suite that ran nothing fails too.
func TestSuiteMissedExpectation(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	file := writeSuite(t, strings.Replace(tinySuite, "expect: invalid", "expect: valid", 1))
	dir := filepath.Join(t.TempDir(), "s")
	junit := filepath.Join(t.TempDir(), "j.xml")
	code, out, _ := runSuite(t, "suite", file, "--results", dir, "--junit", junit, "--until-fail", "--repeat", "0")
	if code != exitInvalid || !strings.Contains(out, "missed: control/") {
		t.Fatalf("exit %d, want 1, naming the missed run\n%s", code, out)
	}
	var failed []string
	for _, c := range readJUnit(t, junit) {
		if strings.Contains(c, "FAILED") {
			failed = append(failed, c)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "want valid, got invalid") {
		t.Fatalf("JUnit failures %v: want the control's, with its verdict (until-fail stops after it)", failed)
	}
	r, _ := suite.ReadReport(filepath.Join(dir, "suite.json"))
	for _, o := range r.Outcomes {
		_, err := os.Stat(filepath.Join(dir, o.Dir, "history.jsonl"))
		if !o.Met && err != nil {
			t.Fatalf("the missed run's history is not kept: %v", err)
		}
	}
	// Shard 2 of a one-case suite may be empty: then the suite ran nothing and fails.
	one := writeSuite(t, "entries:\n  - name: only\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n")
	s, _ := suite.Load(one)
	empty := 3 - suite.ShardOf(s.Cases[0].ID, 2)
	code, out, _ = runSuite(t, "suite", one, "--shard", string(rune('0'+empty))+"/2", "--results", t.TempDir(), "--junit", junit)
	if code != exitInvalid || !strings.Contains(out, "ran nothing") || !strings.Contains(strings.Join(readJUnit(t, junit), ""), "FAILED: the suite ran nothing") {
		t.Fatalf("an empty shard: exit %d %q; want 1, said, and a failing JUnit testcase", code, out)
	}
}

// Ctrl-C stops the suite: the run in flight tears down (no process left), suite.json keeps what finished,
// exit 2 (the rest is unknown).
func TestSuiteInterrupted(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	file := writeSuite(t, "entries:\n  - name: short\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n  - name: long\n    lock: reentrant\n    time: 60s\n")
	dir := filepath.Join(t.TempDir(), "s")
	cmd := exec.Command(buildBinary(t), "suite", file, "--results", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(strings.Join(processesUnder(filepath.Join(dir, "runs", "long")), " "), "redis-server") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // until the second run's node is up: the first has a verdict
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUnknown {
		t.Fatalf("exit %v, want %d", err, exitUnknown)
	}
	if left := processesUnder(dir); len(left) > 0 {
		t.Fatalf("left running: %v", left)
	}
	if r, err := suite.ReadReport(filepath.Join(dir, "suite.json")); err != nil || r.Stopped != "interrupted" {
		t.Fatalf("suite.json: %v %+v", err, r)
	}
}

// The nightly workflow and the Kubernetes Job run the shipped nightly suite, in as many shards as they say,
// with flags the suite command takes.
func TestNightlyManifests(t *testing.T) {
	// Sequential: t.Setenv.
	var wf struct {
		Jobs map[string]struct {
			Needs    any `yaml:"needs"`
			Strategy struct {
				Matrix struct {
					Shard  []int    `yaml:"shard"`
					Server []string `yaml:"server"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run  string            `yaml:"run"`
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	readYAML(t, filepath.Join("..", "..", ".github", "workflows", "nightly.yml"), &wf)
	shard, merge := wf.Jobs["shard"], wf.Jobs["merge"]
	n := len(shard.Strategy.Matrix.Shard)
	if n < 2 || merge.Needs != "shard" {
		t.Fatalf("workflow: %d shards, merge needs %v", n, merge.Needs)
	}
	// Issue 32: the server is a matrix dimension of the shards and of the merges, each value one --server
	// takes, passed to the suite; the artifacts are named by server, and each merge takes its server's only.
	servers := shard.Strategy.Matrix.Server
	if len(servers) < 2 || !slices.Equal(servers, merge.Strategy.Matrix.Server) || !slices.Contains(servers, "valkey@8.1.8") {
		t.Fatalf("workflow: servers %v for the shards, %v for the merges: want the same, valkey@8.1.8 among them",
			servers, merge.Strategy.Matrix.Server)
	}
	for _, v := range servers {
		if _, err := server.Parse(v, ""); err != nil {
			t.Errorf("workflow: matrix server %q: %v", v, err)
		}
	}
	var ran, merged, uploaded, downloaded bool
	for _, s := range shard.Steps {
		if strings.HasPrefix(s.Run, "bin/lockcheck suite ") {
			for _, v := range servers {
				run := strings.NewReplacer("${{ matrix.shard }}", "1", "${{ matrix.server }}", v).Replace(s.Run)
				args := strings.Fields(run)[1:]
				checkSuiteArgs(t, args, n)
				if i := slices.Index(args, "--server"); i < 0 || args[i+1] != v {
					t.Errorf("workflow: the suite step %q does not pass --server %s", s.Run, v)
				}
			}
			ran = true
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			uploaded = strings.Contains(s.With["name"], "${{ matrix.server }}") && strings.Contains(s.With["name"], "${{ matrix.shard }}")
		}
	}
	for _, s := range merge.Steps {
		merged = merged || strings.HasPrefix(s.Run, "bin/lockcheck merge ")
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			downloaded = strings.Contains(s.With["pattern"], "${{ matrix.server }}")
		}
	}
	if !ran || !merged {
		t.Fatal("workflow: no suite step or no merge step")
	}
	if !uploaded || !downloaded {
		t.Errorf("workflow: artifacts named by server and shard %v, a merge downloading its server's only %v: want both", uploaded, downloaded)
	}
	var job struct {
		Kind string `yaml:"kind"`
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, filepath.Join("..", "..", "deploy", "k8s", "nightly-job.yaml"), &job)
	if job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("k8s: %+v", job)
	}
	args := slices.Clone(job.Spec.Template.Spec.Containers[0].Args)
	for i, a := range args {
		args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "0"), "/examples/", "../../examples/")
	}
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	checkSuiteArgs(t, args, job.Spec.Completions)
	// The merge Job's --out lies apart from its inputs, as merge requires, and its inputs hold the shards.
	readYAML(t, filepath.Join("..", "..", "deploy", "k8s", "merge-job.yaml"), &job)
	mcmd := newMergeCmd()
	if err := mcmd.ParseFlags(job.Spec.Template.Spec.Containers[0].Args[1:]); err != nil {
		t.Fatal(err)
	}
	out, _ := mcmd.Flags().GetString("out")
	apart := func(a, b string) bool { r, err := filepath.Rel(a, b); return err == nil && !filepath.IsLocal(r) }
	for _, in := range mcmd.Flags().Args() {
		if !apart(in, out) || !apart(out, in) || apart(in, strings.TrimSuffix(args[slices.Index(args, "--results")+1], "/shard-0")) {
			t.Errorf("k8s merge: --out %s and input %s: want them apart, the input holding the shards", out, in)
		}
	}
}

// checkSuiteArgs parses `suite ARGS` with the suite command's own flags and checks the shard count.
func checkSuiteArgs(t *testing.T, args []string, shards int) {
	t.Helper()
	if args[0] != "suite" {
		t.Fatalf("%v: not a suite command", args)
	}
	cmd := newSuiteCmd()
	if err := cmd.ParseFlags(args[1:]); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	f := cmd.Flags()
	count := 0
	if s, _ := f.GetString("shard"); s != "" {
		_, n, err := suite.ParseShard(s)
		if err != nil {
			t.Fatal(err)
		}
		count = n
	} else {
		count, _ = f.GetInt("shard-count")
	}
	if count != shards {
		t.Fatalf("%v: %d shards, the manifest runs %d", args, count, shards)
	}
	file := f.Arg(0)
	if strings.HasPrefix(file, "examples/") {
		file = filepath.Join("..", "..", file)
	}
	if _, err := suite.Load(file); err != nil {
		t.Fatal(err)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Every shipped suite loads and every one of its runs passes `run --dry-run`.
func TestShippedSuitesAreValid(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "suites", "*.yaml"))
	if len(files) < 3 {
		t.Fatalf("%d suites shipped", len(files))
	}
	for _, f := range files {
		code, out, errs := runSuite(t, "suite", f, "--list")
		if code != exitValid || strings.Count(out, "\n") == 0 {
			t.Fatalf("%s: exit %d %s", f, code, errs)
		}
	}
}
