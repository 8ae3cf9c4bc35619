// Package lockspec turns a user's own Lua lock, described in a YAML spec file, into a lock kind: its
// scripts, the KEYS and ARGV templates each is called with, how to read each reply, and the client's
// behaviour (retries, watchdog). A spec lock's clients record every script call as a history operation of
// the same shape as the built-in locks', so the family's porcupine model and checkers judge it alike.
package lockspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/kinds"
	"gopkg.in/yaml.v3"
)

// raw is the file as written; yaml's KnownFields makes any other field an error.
type raw struct {
	Name           string            `yaml:"name"`
	About          string            `yaml:"about"`
	Family         string            `yaml:"family"`
	Token          string            `yaml:"token"`
	RetryAmbiguous bool              `yaml:"retry_ambiguous"`
	RetryDelay     string            `yaml:"retry_delay"`
	Watchdog       yaml.Node         `yaml:"watchdog"`
	Control        *rawControl       `yaml:"control"`
	Operations     map[string]*rawOp `yaml:"operations"`
}

type rawControl struct {
	Why   string   `yaml:"why"`
	Flags []string `yaml:"flags"`
}

type rawWatchdog struct {
	Operation string `yaml:"operation"`
	Every     string `yaml:"every"`
	OnError   string `yaml:"on_error"`
}

type rawOp struct {
	Script string    `yaml:"script"`
	File   string    `yaml:"file"`
	Keys   []string  `yaml:"keys"`
	Argv   []string  `yaml:"argv"`
	Reply  yaml.Node `yaml:"reply"`
}

// Spec is a validated lock spec.
type Spec struct {
	Path   string // the file, as the user named it (every error names it)
	Name   string
	About  string
	Family *kinds.Family
	// Token is how {{token}} is made at acquire: "random" (16 random bytes, hex) or "now_ms" (the client's
	// clock in ms, as many hand-written locks do).
	Token          string
	RetryAmbiguous bool          // repeat a command whose outcome is unknown (timeout, broken connection)
	RetryDelay     time.Duration // between acquire attempts, and before repeating an ambiguous command
	// WatchdogEvery renews each hold taken without a lease with WatchdogOp (0: no watchdog).
	WatchdogEvery time.Duration
	WatchdogOp    string
	// WatchdogStopsOnError: a renewal that failed with an error (no answer) ends that hold's renewal, as
	// Redisson's watchdog did before 3.44 (#3194); false (on_error: keep, the default) renews it again next
	// period, and only an extend answered not_held ends it.
	WatchdogStopsOnError bool
	Ops                  map[string]*Op
	// Broken marks a negative control: what is wrong, and the fault-free flags that show it.
	Broken string
	Flags  []string
}

// Op is one operation: its script and how it is called and read.
type Op struct {
	Name   string
	Script string
	Source string // the script's file, or "inline"
	Keys   []template
	Argv   []template
	Reply  replyMap
	class  class
}

// familyOps are each spec family's operations: the ones required, then the optional ones.
var familyOps = map[string]struct {
	family   *kinds.Family
	required []string
	optional []string
	fields   []string // placeholders beyond the common ones
}{
	// A user's semaphore hands out permits by token with a lease (a sorted set of holders, say), which is
	// what the expirable-semaphore family models: permits by id, each reclaimable once its lease ran out.
	"mutex":     {kinds.Mutex, []string{"acquire", "release"}, []string{"extend"}, nil},
	"rwlock":    {kinds.RW, []string{"read_acquire", "read_release", "write_acquire", "write_release"}, nil, nil},
	"semaphore": {kinds.Expirable, []string{"acquire_permits", "release_permits", "available"}, nil, []string{"permits", "n"}},
}

// aliases are other names users give a family or an operation.
var (
	familyAlias = map[string]string{"read-write": "rwlock", "readwrite": "rwlock", "rw": "rwlock"}
	opAlias     = map[string]string{"renew": "extend"}
)

func opClass(name string) class {
	switch name {
	case "release", "write_release", "release_permits":
		return releaseClass
	case "read_release":
		return readReleaseClass
	case "extend":
		return extendClass
	case "available":
		return countClass
	}
	return acquireClass
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Load reads and validates a spec file; every error is one line naming the file (and the operation). The
// spec and its scripts are read as hostile input: regular files of at most safefile.SpecMax bytes, the
// scripts inside the spec's directory.
func Load(path string) (*Spec, error) {
	b, err := safefile.Read(path, safefile.SpecMax)
	if err != nil {
		return nil, fmt.Errorf("lock spec: %v", oneLine(err.Error()))
	}
	return Parse(b, path, filepath.Dir(path))
}

// Parse validates a spec's text; path names it in errors and dir is where file: scripts are found ("" to
// refuse them). A file: is a path inside dir: neither absolute nor leading out of it (by .. or a symlink),
// so a spec from a pull request cannot read, and show in its errors, a file of the machine it runs on.
func Parse(b []byte, path, dir string) (*Spec, error) {
	files := &scriptFiles{dir: dir}
	defer files.close()
	s, err := parse(b, path, files)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	return s, nil
}

func parse(b []byte, path string, files *scriptFiles) (*Spec, error) {
	var r raw
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty lock spec")
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("more than one YAML document")
	}
	s := &Spec{Path: path, Name: r.Name, About: r.About, Token: r.Token, RetryAmbiguous: r.RetryAmbiguous,
		RetryDelay: 50 * time.Millisecond, Ops: map[string]*Op{}}
	if !nameRE.MatchString(s.Name) {
		return nil, fmt.Errorf("name %q: want lower-case letters, digits, '.', '_' or '-' (it names the results directory)", s.Name)
	}
	if _, err := kinds.Lookup(s.Name); err == nil && !registered(s.Name) {
		return nil, fmt.Errorf("name %q is a built-in lock: choose another", s.Name)
	}
	fam := strings.ToLower(r.Family)
	if a, ok := familyAlias[fam]; ok {
		fam = a
	}
	fo, ok := familyOps[fam]
	if !ok {
		return nil, fmt.Errorf("family %q: want mutex, rwlock (read-write) or semaphore", r.Family)
	}
	s.Family = fo.family
	switch s.Token {
	case "":
		s.Token = "random"
	case "random", "now_ms":
	default:
		return nil, fmt.Errorf("token %q: want random or now_ms", s.Token)
	}
	if r.RetryDelay != "" {
		d, err := time.ParseDuration(r.RetryDelay)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("retry_delay %q: want a positive duration such as 50ms", r.RetryDelay)
		}
		s.RetryDelay = d
	}
	if err := printable("about", &s.About); err != nil {
		return nil, err
	}
	if r.Control != nil {
		if r.Control.Why == "" {
			return nil, errors.New("control: say why it is broken (why:)")
		}
		if err := printable("control: why", &r.Control.Why); err != nil {
			return nil, err
		}
		if err := CheckControlFlags(r.Control.Flags); err != nil {
			return nil, fmt.Errorf("control: %v", err)
		}
		s.Broken, s.Flags = r.Control.Why, r.Control.Flags
	}
	if len(r.Operations) == 0 {
		return nil, fmt.Errorf("operations: none given (a %s needs %s)", fam, strings.Join(fo.required, ", "))
	}
	allowedPH := map[string]bool{"key": true, "tag": true, "owner": true, "token": true, "lease_ms": true,
		"lease_s": true, "now_ms": true}
	for _, f := range fo.fields {
		allowedPH[f] = true
	}
	names := make([]string, 0, len(r.Operations))
	for name := range r.Operations {
		names = append(names, name)
	}
	sort.Strings(names) // one error, the same each time
	for _, name := range names {
		ro := r.Operations[name]
		canon := name
		if a, ok := opAlias[name]; ok {
			canon = a
		}
		if !listed(fo.required, canon) && !listed(fo.optional, canon) {
			return nil, fmt.Errorf("operation %s: not an operation of a %s (have: %s)", name, fam,
				strings.Join(append(append([]string{}, fo.required...), fo.optional...), ", "))
		}
		if _, dup := s.Ops[canon]; dup {
			return nil, fmt.Errorf("operation %s: given twice (renew is extend)", name)
		}
		op, err := parseOp(canon, ro, files, allowedPH)
		if err != nil {
			return nil, fmt.Errorf("operation %s: %v", name, err)
		}
		s.Ops[canon] = op
	}
	for _, name := range fo.required {
		if s.Ops[name] == nil {
			return nil, fmt.Errorf("operation %s: missing (a %s needs %s)", name, fam, strings.Join(fo.required, ", "))
		}
	}
	if err := s.watchdog(&r.Watchdog, fam); err != nil {
		return nil, err
	}
	return s, nil
}

// watchdog reads watchdog: none, or {operation: extend, every: 10s}.
func (s *Spec) watchdog(n *yaml.Node, fam string) error {
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && (n.Value == "none" || n.Tag == "!!null")) {
		return nil
	}
	var w rawWatchdog
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("watchdog: want none or {operation: extend, every: 10s}")
	}
	// Decoding a node is not strict, so the fields are checked here.
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "operation" && k != "every" && k != "on_error" {
			return fmt.Errorf("watchdog: unknown field %q (have: operation, every, on_error)", k)
		}
	}
	if err := n.Decode(&w); err != nil {
		return fmt.Errorf("watchdog: %v", yamlError(err))
	}
	if fam != "mutex" {
		return fmt.Errorf("watchdog: only a mutex spec renews its holds (a %s's holds take the run's lease)", fam)
	}
	op := w.Operation
	if a, ok := opAlias[op]; ok {
		op = a
	}
	if op != "extend" {
		return fmt.Errorf("watchdog: operation %q: want extend (or renew)", w.Operation)
	}
	if s.Ops[op] == nil {
		return fmt.Errorf("watchdog: renews with %s, but operation %s is missing", w.Operation, op)
	}
	d, err := time.ParseDuration(w.Every)
	if err != nil || d <= 0 {
		return fmt.Errorf("watchdog: every %q: want a positive duration such as 10s", w.Every)
	}
	switch w.OnError {
	case "", "keep":
	case "stop":
		s.WatchdogStopsOnError = true
	default:
		return fmt.Errorf("watchdog: on_error %q: want keep (renew again next period) or stop", w.OnError)
	}
	s.WatchdogOp, s.WatchdogEvery = op, d
	return nil
}

func parseOp(name string, ro *rawOp, files *scriptFiles, allowed map[string]bool) (*Op, error) {
	if ro == nil {
		return nil, errors.New("empty: give script: or file:, keys:, argv: and reply:")
	}
	op := &Op{Name: name, class: opClass(name), Source: "inline", Script: ro.Script}
	switch {
	case ro.Script != "" && ro.File != "":
		return nil, errors.New("both script: and file: given: choose one")
	case ro.File != "":
		b, p, err := files.read(ro.File)
		if err != nil {
			return nil, errors.New(oneLine(err.Error()))
		}
		op.Script, op.Source = string(b), p
	}
	if strings.TrimSpace(op.Script) == "" {
		return nil, errors.New("no script: give script: (inline Lua) or file: (relative to the spec)")
	}
	if len(ro.Keys) == 0 {
		return nil, errors.New("keys: none given (a lock script needs at least its key, e.g. keys: [\"{{key}}\"])")
	}
	for _, list := range []struct {
		field string
		src   []string
		dst   *[]template
	}{{"keys", ro.Keys, &op.Keys}, {"argv", ro.Argv, &op.Argv}} {
		for i, src := range list.src {
			t, err := parseTemplate(src)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %v", list.field, i+1, err)
			}
			for _, p := range t.parts {
				if p.name != "" && !allowed[p.name] {
					return nil, fmt.Errorf("%s[%d]: {{%s}} has no value in this family's operations", list.field, i+1, p.name)
				}
				if p.name == "token" && op.class == countClass {
					return nil, fmt.Errorf("%s[%d]: {{token}} has no value here: available belongs to no hold", list.field, i+1)
				}
			}
			*list.dst = append(*list.dst, t)
		}
	}
	r, err := parseReply(&ro.Reply, op.class)
	if err != nil {
		return nil, err
	}
	op.Reply = r
	return op, nil
}

func listed(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// yamlError makes the decoder's message one readable line: its unknown-field wording names a Go type.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = regexp.MustCompile(`field (\S+) not found in type \S+`).ReplaceAllString(msg, "unknown field $1")
	msg = regexp.MustCompile(`cannot unmarshal (\S+) `+"`"+`([^`+"`"+`]*)`+"`"+` into \S+`).ReplaceAllString(msg, "$1 $2 is not what this field takes")
	return errors.New(oneLine(msg))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
