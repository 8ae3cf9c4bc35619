package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

// The commands shown in README.md and docs/*.md are tested here (the rule is in docs/testing.md): every
// fenced block must name its language; lines of ```sh blocks are commands, every other block (```text for
// output and synopses, ```yaml, ```json) is not. A lockcheck command runs in this process when it is cheap
// (locks, --help, repro list, check of a committed history); the others are validated without starting
// anything: run through dryRun, and suite, compare, repro, serve and bisect up to the point where they
// would write results or ask a registry, so that every flag, value, catalog entry and file named is checked.

// docCmd is one command of a ```sh block.
type docCmd struct {
	file string
	line int
	text string   // as written, comment removed
	args []string // split as a shell would
}

// knownBroken are documented commands that fail today, each with why; the test reports them and fails once
// one passes, so that it leaves this list.
var knownBroken = map[string]string{}

// generatedFiles are files a documented command names that another documented step writes.
var generatedFiles = map[string]string{
	"docker/compose/run/lockcheck.yml": "written by make compose-up",
	"results/latest":                   "written by lockcheck run",
	"out/explore":                      "written by lockcheck explore --merge",
}

func TestDocsCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKCHECK_WORKERS", filepath.Join(root, "workers")) // the registry reads default versions there
	t.Setenv("LOCKCHECK_CACHE", t.TempDir())                      // nothing should build; if it did, not in ~
	cmds := docCommands(t, root)
	if len(cmds) < 20 {
		t.Fatalf("only %d commands found in README.md and docs/: the extraction is broken", len(cmds))
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if seen[c.text] {
			continue
		}
		seen[c.text] = true
		name := fmt.Sprintf("%s:%d", strings.TrimPrefix(c.file, root+"/"), c.line)
		if prog := c.args[0]; prog == "lockcheck" || prog == "./bin/lockcheck" || prog == "bin/lockcheck" {
			// In this process and one at a time: a lock spec registers its lock in a global.
			t.Run(name, func(t *testing.T) { docReport(t, c, docLockcheck(t, root, c.args[1:])) })
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			docReport(t, c, docOther(root, c.args))
		})
	}
}

// docReport fails a command's subtest with what went wrong, or reports a known failure.
func docReport(t *testing.T, c docCmd, err error) {
	t.Helper()
	why, known := knownBroken[c.text]
	switch {
	case known && err != nil:
		t.Logf("known failure: %s: %v (%s)", c.text, err, why)
	case known:
		t.Errorf("%s now passes: remove it from knownBroken", c.text)
	case err != nil:
		t.Errorf("%s:%d: %s: %v", c.file, c.line, c.text, err)
	}
}

// docCommands reads every ```sh block of README.md and docs/*.md; a block without a language is an error.
func docCommands(t *testing.T, root string) []docCmd {
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []docCmd
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, lang, pending, start := false, "", "", 0
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				if in = !in; in {
					lang = strings.TrimPrefix(trimmed, "```")
					if lang == "" {
						t.Errorf("%s:%d: a code block without a language: mark it sh (commands) or text (output)", f, n)
					}
				}
				continue
			}
			if !in || (lang != "sh" && lang != "console") {
				continue
			}
			if pending == "" {
				start = n
			}
			if s, ok := strings.CutSuffix(trimmed, "\\"); ok { // a continued line
				pending += s + " "
				continue
			}
			text := strings.TrimSpace(stripComment(pending + trimmed))
			pending = ""
			if text == "" {
				continue
			}
			args, err := shellWords(text)
			if err != nil {
				t.Errorf("%s:%d: %s: %v", f, start, text, err)
				continue
			}
			out = append(out, docCmd{file: f, line: start, text: strings.Join(strings.Fields(text), " "), args: args})
		}
	}
	return out
}

// stripComment cuts a shell comment: a # that starts a word, outside quotes.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// shellWords splits a command line as --client-cmd is split (words, single and double quotes). Pipes,
// lists, substitutions and redirections are refused: a command the test cannot check whole is not shown
// as one.
func shellWords(s string) ([]string, error) {
	words, err := runner.SplitCommand(s)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		if i := strings.IndexAny(w, "|&;<>$`()"); i >= 0 {
			return nil, fmt.Errorf("%q: not a simple command (the docs test checks simple commands only)", w[i])
		}
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// errDocsStop ends a command where it would start work: the point the docs test checks up to.
var errDocsStop = errors.New("docs test: stopped before any work")

// docLockcheck runs or validates one lockcheck command (args without the program name).
func docLockcheck(t *testing.T, root string, args []string) error {
	args = absPaths(root, args)
	rootCmd := newRoot()
	cmd, rest, err := rootCmd.Find(args)
	if err != nil {
		return err
	}
	if cmd == rootCmd {
		return fmt.Errorf("no such command: %q", args)
	}
	if slices.Contains(rest, "--help") || slices.Contains(rest, "-h") {
		return docExecute(rootCmd, args)
	}
	// Every flag must exist and take its value, and the arguments must fit, whatever else is checked.
	probe, _, _ := newRoot().Find(args)
	if err := probe.ParseFlags(rest); err != nil {
		return err
	}
	if err := probe.ValidateArgs(probe.Flags().Args()); err != nil {
		return err
	}
	for _, a := range args {
		if why, ok := generatedFiles[strings.TrimPrefix(a, root+"/")]; ok {
			t.Logf("%s: flags checked only: %s is %s", strings.Join(args, " "), a, why)
			return nil
		}
	}
	sentinel := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(sentinel, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stoppedAtResults := func(args []string) error {
		err := docExecute(newRoot(), append(args, "--results", sentinel))
		if err != nil && strings.Contains(err.Error(), sentinel) {
			return nil // every check before the results directory passed
		}
		if err == nil {
			return errors.New("ran to the end: it should have stopped at --results")
		}
		return err
	}
	switch cmd.Name() {
	case "locks", "help":
		return docExecute(rootCmd, args)
	case "repro":
		if len(probe.Flags().Args()) == 1 && probe.Flags().Arg(0) == "list" {
			return docExecute(rootCmd, args)
		}
		return stoppedAtResults(args)
	case "check": // in a copy: check writes its results beside the history
		in := probe.Flags().Args()
		if len(in) != 1 {
			return fmt.Errorf("check takes one history")
		}
		b, err := os.ReadFile(in[0])
		if err != nil {
			return err
		}
		cp := filepath.Join(t.TempDir(), filepath.Base(in[0]))
		if err := os.WriteFile(cp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		i := slices.Index(args, in[0])
		args[i] = cp
		proof, _ := probe.Flags().GetString("proof")
		if proof != "" { // written in the copy's directory too; and re-checked below
			args[slices.Index(args, proof)] = filepath.Join(filepath.Dir(cp), filepath.Base(proof))
			proof = filepath.Join(filepath.Dir(cp), filepath.Base(proof))
		}
		err = docExecute(rootCmd, args)
		var ee exitError
		if errors.As(err, &ee) && ee.code <= exitUnknown {
			if proof == "" {
				return nil // a verdict
			}
			// The proof is a history of its own that checks invalid (exit 1).
			if err := docExecute(newRoot(), []string{"check", proof}); !errors.As(err, &ee) || ee.code != exitInvalid {
				return fmt.Errorf("lockcheck check %s: %v, want the invalid verdict", proof, err)
			}
			return nil
		}
		return err
	case "run":
		return dryRun(rootCmd, rest)
	case "suite", "compare", "explore":
		return stoppedAtResults(args)
	case "serve": // it stops at --results before it binds; the address is checked as serve would, unbound
		if err := stoppedAtResults(args); err != nil {
			return err
		}
		addr, _ := probe.Flags().GetString("addr")
		remote, _ := probe.Flags().GetBool("allow-remote")
		_, err := listenAddr(context.Background(), addr, remote)
		return err
	case "bisect": // no registry is asked: the release list is where it stops
		saved := listReleases
		defer func() { listReleases = saved }()
		listReleases = func(context.Context, worker.Releases) ([]string, error) { return nil, errDocsStop }
		if err := docExecute(rootCmd, args); !errors.Is(err, errDocsStop) {
			return fmt.Errorf("did not get as far as the release list: %v", err)
		}
		return nil
	case "worker-check": // a worker that exists; it is not started (a run of its own, minutes with a build)
		in := probe.Flags().Args()
		if c, _ := probe.Flags().GetString("client"); c != "" {
			_, _, err := worker.Lookup(c)
			return err
		}
		if len(in) == 0 {
			return errors.New("names no worker")
		}
		if in[0] == "./my-worker" { // the reader's own worker: TestWorkerCheckExamples runs worker-check's examples against a stand-in
			for _, l := range strings.Split(newWorkerCheckCmd().Example, "\n") {
				if l, _, _ = strings.Cut(l, " #"); slices.Equal(strings.Fields(l)[min(1, len(strings.Fields(l))):], args) {
					return nil
				}
			}
			return errors.New("./my-worker stands for the reader's worker: the line must be one of worker-check's examples, which a test runs")
		}
		return runnable(root, in[0])
	default: // images, clean, merge: they touch docker or other runs' files; flags and arguments checked
		return nil
	}
}

// docExecute runs a lockcheck command line in this process, its output discarded.
func docExecute(root *cobra.Command, args []string) error {
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	_, err := root.ExecuteContextC(context.Background())
	return err
}

// absPaths makes the arguments that name files of the repository absolute (commands are shown run from
// its root; the test runs in cmd/lockcheck).
func absPaths(root string, args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		flag, val, hasEq := strings.Cut(a, "=")
		if !hasEq || !strings.HasPrefix(flag, "-") {
			flag, val = "", a
		}
		if val == "" || strings.HasPrefix(val, "-") || filepath.IsAbs(val) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, val)); err == nil && (strings.Contains(val, "/") || strings.Contains(val, ".")) {
			val = filepath.Join(root, val)
		}
		if flag != "" {
			out[i] = flag + "=" + val
		} else {
			out[i] = val
		}
	}
	return out
}

// runnable: a path in the repository that can be executed, or a program on PATH.
func runnable(root, prog string) error {
	if !strings.Contains(prog, "/") {
		_, err := exec.LookPath(prog)
		return err
	}
	p := prog
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", prog)
	}
	return nil
}

// docOther checks a command that is not lockcheck's without running it.
func docOther(root string, args []string) error {
	for len(args) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(args[0]) {
		args = args[1:] // VAR=value prefixes
	}
	if len(args) == 0 {
		return errors.New("no command")
	}
	switch args[0] {
	case "make": // the target exists and its recipe parses; nothing runs
		cmd := exec.Command("make", append([]string{"-n", "-s", "--no-print-directory", "-C", root}, args[1:]...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("make -n: %v: %s", err, lastLine(out))
		}
		return nil
	case "go":
		return docGo(root, args[1:])
	default:
		return runnable(root, args[0])
	}
}

// docGo checks a go command: build, test, run or vet of packages of this module that exist, and for a test
// its -run, -bench and -fuzz patterns match a function of those packages.
func docGo(root string, args []string) error {
	const module = "github.com/lockcheck/lockcheck/"
	if len(args) == 2 && args[0] == "install" && strings.HasPrefix(args[1], module) { // this module's command, as a user installs it
		pkg, _, _ := strings.Cut(strings.TrimPrefix(args[1], module), "@")
		return docGo(root, []string{"build", "./" + pkg})
	}
	if len(args) == 0 || !slices.Contains([]string{"build", "test", "run", "vet", "list"}, args[0]) {
		return fmt.Errorf("go %v: no rule to check it", args)
	}
	valued := map[string]bool{"-o": true, "-run": true, "-bench": true, "-fuzz": true, "-fuzztime": true, "-count": true,
		"-timeout": true, "-outputdir": true, "-benchtime": true, "-tags": true, "-parallel": true, "-skip": true}
	var pkgs, patterns []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if args[0] == "run" && len(pkgs) > 0 {
			break // the program's own arguments
		}
		switch {
		case valued[a] && i+1 < len(args):
			if a == "-run" || a == "-bench" || a == "-fuzz" {
				patterns = append(patterns, args[i+1])
			}
			i++
		case strings.HasPrefix(a, "-"):
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		return errors.New("names no package of this module (./...)")
	}
	var funcs []string
	fn := regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz)\w*)\(`)
	for _, p := range pkgs {
		dir := filepath.Join(root, strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/"))
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if strings.HasSuffix(p, "/...") {
			files, _ = filepath.Glob(filepath.Join(dir, "*", "*.go"))
		}
		if len(files) == 0 {
			return fmt.Errorf("%s: no Go package there", p)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				for _, m := range fn.FindAllStringSubmatch(string(b), -1) {
					funcs = append(funcs, m[1])
				}
			}
		}
	}
	for _, pat := range patterns {
		if pat == "^$" {
			continue
		}
		re, err := regexp.Compile(strings.Split(pat, "/")[0])
		if err != nil {
			return fmt.Errorf("pattern %q: %v", pat, err)
		}
		if !slices.ContainsFunc(funcs, re.MatchString) {
			return fmt.Errorf("pattern %q matches no test, benchmark or fuzz target in %v", pat, pkgs)
		}
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// TestDocsIndex: the README stays a five-minute read, and every page of docs/ is reachable from it.
func TestDocsIndex(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines: keep it to 250 and move the rest to docs/", n)
	}
	pages, _ := filepath.Glob("../../docs/*.md")
	for _, p := range pages {
		if link := "](docs/" + filepath.Base(p) + ")"; !strings.Contains(readme, link) {
			t.Errorf("docs/%s is not linked from README.md's index", filepath.Base(p))
		}
	}
}

// TestHelpExamples checks every example of every command's --help as the docs' commands are checked: each
// names real entries, files, flags and values. bisect's examples also run end to end in
// TestBisectEndToEnd (make bisect), which takes them from here.
func TestHelpExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKCHECK_WORKERS", filepath.Join(root, "workers"))
	t.Setenv("LOCKCHECK_CACHE", t.TempDir())
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, args := range helpExamples(t, c) {
			n++
			text := strings.Join(args, " ")
			t.Run(c.Name()+"/"+text, func(t *testing.T) {
				docReport(t, docCmd{file: c.CommandPath() + " --help", text: text, args: args}, docLockcheck(t, root, args[1:]))
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if n < 10 {
		t.Fatalf("only %d examples found in --help: the extraction is broken", n)
	}
}

// helpExamples are the commands of a command's Example, split as a shell would, comments removed.
func helpExamples(t *testing.T, c *cobra.Command) [][]string {
	t.Helper()
	var out [][]string
	for _, l := range strings.Split(c.Example, "\n") {
		l = strings.TrimSpace(stripComment(l))
		if l == "" {
			continue
		}
		args, err := shellWords(l)
		if err != nil || args[0] != "lockcheck" {
			t.Errorf("%s --help: example %q is not a lockcheck command (%v)", c.CommandPath(), l, err)
			continue
		}
		out = append(out, args)
	}
	return out
}

// clean --force is described one way, as its --help says: clean removes what ended runs left, and --force
// also a live run's (issue 31: cli.md showed `clean --force` as if it were the ordinary clean).
func TestDocsCleanForce(t *testing.T) {
	t.Parallel() // reads docs only
	if u := newCleanCmd().Flags().Lookup("force").Usage; !strings.HasPrefix(u, "also ") {
		t.Fatalf("clean --force's help %q: it adds to what clean removes", u)
	}
	files, _ := filepath.Glob("../../docs/*.md")
	for _, f := range append(files, "../../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "lockcheck clean") && strings.Contains(l, "--force") && !strings.Contains(l, "also") {
				t.Errorf("%s:%d: %q: say what --force adds (also a live run's)", f, i+1, l)
			}
		}
	}
}
