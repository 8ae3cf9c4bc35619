// Package suite runs a matrix of lockcheck runs from a YAML file: entries (a lock, a client or a lock spec)
// crossed with topologies, nemeses and seeds, each with the verdict it is expected to get. It shards the
// matrix stably, repeats it, writes JUnit and a suite page, and merges the results of many shards.
package suite

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"gopkg.in/yaml.v3"
)

// MaxRuns bounds the runs one suite file expands to (entries × topologies × nemeses × seeds, before
// --repeat): a seeds count, and each entry's product, is checked against it before anything is allocated.
const MaxRuns = 10000

// maxFlags bounds an entry's flags (defaults included): more than lockcheck run has.
const maxFlags = 100

// maxID bounds a run id, which names the run's directory (a path element is at most 255 bytes).
const maxID = 200

// File is a suite file as written.
type File struct {
	Name     string  `yaml:"name"`
	Defaults Entry   `yaml:"defaults"`
	Entries  []Entry `yaml:"entries"`
	Repro    *Repro  `yaml:"repro"` // a catalog entry (lockcheck repro): what bug its entries reproduce
}

// Repro describes a reproduced bug: its entries are named buggy (the affected version) and fixed (the fix,
// or for a design limit the mitigation).
type Repro struct {
	Issue    string `yaml:"issue"`    // the upstream issue or pull request
	Library  string `yaml:"library"`  // redisson, redsync, ... or "design" for a limit no version fixes
	Summary  string `yaml:"summary"`  // one line
	Affected string `yaml:"affected"` // versions
	FixedIn  string `yaml:"fixed"`    // version, or the mitigation
	Kind     string `yaml:"kind"`     // safety, liveness or api
	Checker  string `yaml:"checker"`  // the checker that must catch it
	// Quick marks an entry that decides both sides in seconds on one seed: `lockcheck repro --quick`
	// (part of make test) runs these.
	Quick bool `yaml:"quick"`
	// Match says what an invalid run's finding looks like when it is this entry (package known); unset
	// fields take the buggy side's own.
	Match *Match `yaml:"match"`
}

// Match is what a catalog entry's finding looks like, beyond what its buggy side already says (the
// checkers in checker:, the buggy side's faults, lock family and library), which it may widen or narrow.
type Match struct {
	Kind      string    `yaml:"kind"`      // the story's kind of violation (overlap, lost-lock, ...)
	Checkers  []string  `yaml:"checkers"`  // other checkers whose finding is this bug too, beside checker:
	Faults    *[]string `yaml:"faults"`    // faults in force at the violation, all of them; [] for any; [none] for no fault at all
	AnyFault  []string  `yaml:"any-fault"` // one of these faults at least in force at the violation
	Lease     string    `yaml:"lease"`     // past or within: the side of the first owner's lease it fell on
	Shortened *bool     `yaml:"shortened"` // a re-entry had (true) or had not (false) shortened the first owner's lease
	// Stopped: the unlock of a re-entry with a lease of its own had (true) or had not (false) stopped the
	// watchdog that kept the first owner's hold.
	Stopped *bool `yaml:"watchdog-stopped"`
	// Outlived: the first owner had (true) or had not (false) held on past a fixed lease of its own.
	Outlived *bool `yaml:"outlived"`
	// GaveUp: the first owner's watchdog had (true) or had not (false) renewed no more after a renewal
	// that got no answer.
	GaveUp *bool `yaml:"watchdog-gave-up"`
	// Late: the first owner's grant had (true) or had not (false) come back after the fixed lease it asked
	// for could have ended.
	Late     *bool    `yaml:"late-grant"`
	AnyLock  bool     `yaml:"any-lock"` // a limit of every lock of its family, whatever the library
	Families []string `yaml:"families"` // the lock families it is found on, where not only the buggy side's
	Limit    string   `yaml:"limit"`    // what a design limit is a limit of, in words
	As       string   `yaml:"as"`       // this entry plays another's bug: its runs are named as that one
}

// FixRelease is the release that fixed the bug when the catalog names one (its fixed: starts with a
// release number: 3.16.7, v4.0.4); ok is false for a design limit, whose fixed: names a mitigation.
func (r *Repro) FixRelease() (string, bool) {
	f := strings.Fields(r.FixedIn)
	if len(f) == 0 {
		return "", false
	}
	v := strings.TrimSuffix(f[0], ",")
	n := strings.TrimPrefix(v, "v")
	if n == "" || n[0] < '0' || n[0] > '9' || !strings.Contains(n, ".") {
		return "", false
	}
	return v, true
}

// Entry is one row of the matrix. Unset fields take the file's defaults.
type Entry struct {
	Name       string            `yaml:"name"`
	Lock       string            `yaml:"lock"`
	Client     string            `yaml:"client"`
	LockSpec   string            `yaml:"lock-spec"`
	Schedule   string            `yaml:"schedule"` // --schedule FILE, relative to the suite file
	Topologies []string          `yaml:"topologies"`
	Nemeses    []string          `yaml:"nemeses"`
	Seeds      Seeds             `yaml:"seeds"`
	Time       string            `yaml:"time"`
	Flags      map[string]string `yaml:"flags"`
	Expect     Expect            `yaml:"expect"`
}

// Seeds is a list of seeds, or a count n meaning 1..n.
type Seeds []int64

func (s *Seeds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c, err := strconv.Atoi(n.Value)
		if err != nil || c < 1 {
			return fmt.Errorf("line %d: seeds: want a count of at least 1 or a list of seeds, got %q", n.Line, n.Value)
		}
		if c > MaxRuns { // before the list is made: a count is not a size anyone checked
			return fmt.Errorf("line %d: seeds: %d is more than the %d runs a suite may have", n.Line, c, MaxRuns)
		}
		for i := 1; i <= c; i++ {
			*s = append(*s, int64(i))
		}
		return nil
	}
	var l []int64
	if err := n.Decode(&l); err != nil {
		return fmt.Errorf("line %d: seeds: want a count or a list of integers", n.Line)
	}
	// A seed given twice is the same run twice: one id, one directory, the second run deleting the first's.
	seen := make(map[int64]bool, len(l))
	for _, v := range l {
		if seen[v] {
			return fmt.Errorf("line %d: seeds: %d appears twice", n.Line, v)
		}
		seen[v] = true
	}
	*s = l
	return nil
}

// Expect is the set of verdicts an entry may get: one (valid) or a list ([valid, unknown]).
type Expect []checker.Validity

func (e *Expect) UnmarshalYAML(n *yaml.Node) error {
	var words []string
	if n.Kind == yaml.ScalarNode {
		words = []string{n.Value}
	} else if err := n.Decode(&words); err != nil {
		return fmt.Errorf("line %d: expect: want valid, invalid, unknown or a list of them", n.Line)
	}
	for _, w := range words {
		v, ok := verdicts[w]
		if !ok {
			return fmt.Errorf("line %d: expect: %q is not valid, invalid or unknown", n.Line, w)
		}
		if !slices.Contains(*e, v) { // a set: each outcome in suite.json carries it
			*e = append(*e, v)
		}
	}
	return nil
}

var verdicts = map[string]checker.Validity{"valid": checker.Valid, "invalid": checker.Invalid, "unknown": checker.Unknown}

func (e Expect) String() string {
	var s []string
	for _, v := range e {
		s = append(s, v.String())
	}
	return strings.Join(s, " or ")
}

// Case is one run of the matrix.
type Case struct {
	ID     string   `json:"id"` // entry/topology/nemesis/seed: stable, and the shard key
	Entry  string   `json:"entry"`
	Args   []string `json:"args"` // lockcheck run's arguments (without --results)
	Seed   int64    `json:"seed"`
	Expect []string `json:"expect"`
	expect Expect
	env    []string // secret flags' values (redact.Flags) as VAR=value: the child run's, never in Args
}

// Suite is a parsed, expanded suite.
type Suite struct {
	Name  string
	Path  string
	Cases []Case
	Repro *Repro
}

var entryName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load reads and expands a suite file. Paths in it (lock-spec, schedule) are relative to the file. Every error names
// the file and, where it has one, the entry. Only a regular file up to safefile.SuiteMax is read (a
// device or a FIFO is refused at once).
func Load(path string) (*Suite, error) {
	b, err := safefile.Read(path, safefile.SuiteMax)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	return Parse(path, b, filepath.Dir(path))
}

// Parse reads a suite from its text; base is the directory its relative paths start from. Its errors are
// one line, with any control character in the text escaped.
func Parse(path string, b []byte, base string) (*Suite, error) {
	s, err := parse(path, b, base)
	if err != nil {
		return nil, errors.New(printable(err.Error()))
	}
	return s, nil
}

func parse(path string, b []byte, base string) (*Suite, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) { // no document at all: yaml says only "EOF"
			return nil, fmt.Errorf("suite %s: the file is empty (a suite has a name and entries)", path)
		}
		return nil, fmt.Errorf("suite %s: %s", path, yamlError(err))
	}
	what := "name"
	if f.Name == "" {
		f.Name, what = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), "name (from the file's name)"
	}
	// The name becomes a directory under results/suites: one path element, no "..".
	if err := safefile.Name(what, f.Name); err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, err)
	}
	if f.Repro != nil && (len(f.Entries) != 2 || f.Entries[0].Name != "buggy" || f.Entries[1].Name != "fixed") {
		return nil, fmt.Errorf("suite %s: a repro entry has two entries, buggy and fixed", path)
	}
	if len(f.Entries) == 0 {
		return nil, fmt.Errorf("suite %s: no entries", path)
	}
	s := &Suite{Name: f.Name, Path: path, Repro: f.Repro}
	seen := map[string]bool{}
	for i, e := range f.Entries {
		if e.Name == "" {
			return nil, fmt.Errorf("suite %s: entry %d has no name", path, i+1)
		}
		if !entryName.MatchString(e.Name) {
			return nil, fmt.Errorf("suite %s: entry %q: a name is letters, digits, '.', '_' and '-'", path, e.Name)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("suite %s: entry %q appears twice", path, e.Name)
		}
		seen[e.Name] = true
		cases, err := expand(f.Defaults, e, base, MaxRuns-len(s.Cases))
		if err != nil {
			return nil, fmt.Errorf("suite %s: entry %q: %w", path, e.Name, err)
		}
		s.Cases = append(s.Cases, cases...)
	}
	if err := distinct(s.Cases); err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, err)
	}
	return s, nil
}

// distinct checks that every run has its own id and its own directory under runs/: the same one twice
// would count a run twice, and the second would delete the first's directory.
func distinct(cases []Case) error {
	dirs := make(map[string]string, len(cases))
	for _, c := range cases {
		d := runDirName(Outcome{Case: c})
		prev, ok := dirs[d]
		switch {
		case d == "." || d == "..":
			return fmt.Errorf("entry %q: run id %q names no directory of its own", c.Entry, c.ID)
		case ok && prev == c.ID:
			return fmt.Errorf("entry %q: run %s appears twice", c.Entry, c.ID)
		case ok:
			return fmt.Errorf("runs %s and %s would share the directory runs/%s", prev, c.ID, d)
		}
		dirs[d] = c.ID
	}
	return nil
}

// yamlError is a decoding error as one line, in the suite's words rather than Go's types.
func yamlError(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	var out []string
	for _, e := range te.Errors {
		if m := unknownField.FindStringSubmatch(e); m != nil {
			t := goTypes[m[3]]
			if t.words == "" {
				t.words = m[3]
			}
			out = append(out, fmt.Sprintf("line %s: field %s not found in %s (fields: %s)", m[1], fieldName(m[2]), t.words, t.fields))
		} else if m := wrongType.FindStringSubmatch(e); m != nil {
			got := yamlKinds[m[2]]
			if got == "" {
				got = "a value"
			}
			if m[3] != "" {
				got += " " + m[3]
			}
			want := goTypes[m[4]].words
			if want == "" {
				want = m[4]
			}
			out = append(out, fmt.Sprintf("line %s: want %s, got %s", m[1], want, got))
		} else {
			out = append(out, e)
		}
	}
	return strings.Join(out, "; ")
}

var (
	unknownField = regexp.MustCompile("(?s)^line ([0-9]+): field (.*) not found in type (\\S+)$")
	wrongType    = regexp.MustCompile("(?s)^line ([0-9]+): cannot unmarshal (!!\\w+)(?: (`.*`))? into (\\S+)$")
	plainField   = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	yamlKinds    = map[string]string{"!!int": "an integer", "!!str": "a string", "!!seq": "a list", "!!map": "a map",
		"!!bool": "a boolean", "!!float": "a number", "!!null": "nothing", "!!timestamp": "a date"}
	// The Go types a suite file decodes into, in its own words, with the fields a map of that kind takes.
	goTypes = map[string]struct{ words, fields string }{
		"suite.File":        {"the suite", fieldsOf(File{})},
		"suite.Entry":       {"an entry", fieldsOf(Entry{})},
		"[]suite.Entry":     {"a list of entries", ""},
		"suite.Repro":       {"repro", fieldsOf(Repro{})},
		"string":            {"a string", ""},
		"[]string":          {"a list of strings", ""},
		"map[string]string": {"a map of flag: value", ""},
		"bool":              {"true or false", ""},
		"int64":             {"an integer", ""},
	}
)

// fieldName shows a field as written when it is a plain word, quoted otherwise.
func fieldName(s string) string {
	if plainField.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// fieldsOf lists a struct's yaml keys, for an unknown field's message.
func fieldsOf(v any) string {
	t := reflect.TypeOf(v)
	var names []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" {
			names = append(names, k)
		}
	}
	return strings.Join(names, ", ")
}

// printable escapes control characters (a newline, a terminal escape) a hostile file may have put in a
// message, which must stay one plain line.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// expand makes an entry's runs; room is how many more the suite may have (MaxRuns in all).
func expand(d, e Entry, base string, room int) ([]Case, error) {
	or := func(a, b []string) []string {
		if len(a) > 0 {
			return a
		}
		return b
	}
	// Each of lock, client and lock-spec falls back to the defaults on its own (a default lock kind under an
	// entry's client), except across the two ways of naming the lock: an entry's lock-spec takes neither the
	// default lock nor client, an entry's lock or client not the default lock-spec.
	if e.LockSpec == "" {
		if e.Lock == "" {
			e.Lock = d.Lock
		}
		if e.Client == "" {
			e.Client = d.Client
		}
		if e.Lock == "" && e.Client == "" {
			e.LockSpec = d.LockSpec
		}
	}
	if e.Lock != "" && e.LockSpec != "" {
		return nil, errors.New("give lock or lock-spec, not both")
	}
	topos, nems := or(e.Topologies, d.Topologies), or(e.Nemeses, d.Nemeses)
	if len(topos) == 0 {
		topos = []string{""} // the lock's own
	}
	if len(nems) == 0 {
		nems = []string{"none"}
	}
	seeds := e.Seeds
	if len(seeds) == 0 {
		seeds = d.Seeds
	}
	if len(seeds) == 0 {
		seeds = Seeds{1}
	}
	// Counted before anything is made: each list may hold as many items as a 1 MiB file has lines.
	if n := len(topos) * len(nems); n > room || len(seeds) > room || n*len(seeds) > room {
		left := ""
		if room < MaxRuns {
			left = fmt.Sprintf(" (%d left after the entries before it)", room)
		}
		return nil, fmt.Errorf("%d topologies × %d nemeses × %d seeds: more than the %d runs a suite may have%s", len(topos), len(nems), len(seeds), MaxRuns, left)
	}
	expect := e.Expect
	if len(expect) == 0 {
		expect = d.Expect
	}
	if len(expect) == 0 {
		expect = Expect{checker.Valid}
	}
	tm := e.Time
	if tm == "" {
		tm = d.Time
	}
	flags := map[string]string{}
	for k, v := range d.Flags {
		flags[k] = v
	}
	for k, v := range e.Flags {
		flags[k] = v
	}
	if len(flags) > maxFlags {
		return nil, fmt.Errorf("flags: %d of them, more than lockcheck run has", len(flags))
	}
	for _, k := range []string{"lock", "client", "lock-spec", "schedule", "topology", "nemesis", "seed", "time", "results"} {
		if _, ok := flags[k]; ok {
			return nil, fmt.Errorf("flags: %s is a field of its own (not a flag)", k)
		}
	}
	var common []string
	if e.Lock != "" {
		common = append(common, "--lock", e.Lock)
	}
	if e.Client != "" {
		common = append(common, "--client", e.Client)
	}
	if e.LockSpec != "" {
		p := e.LockSpec
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		common = append(common, "--lock-spec", p)
	}
	if e.Schedule == "" {
		e.Schedule = d.Schedule
	}
	if e.Schedule != "" {
		if len(nems) != 1 || nems[0] != "none" {
			return nil, errors.New("schedule: its faults are its steps: give no nemeses")
		}
		p := e.Schedule
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		common = append(common, "--schedule", p)
	}
	if tm != "" {
		if _, err := time.ParseDuration(tm); err != nil {
			return nil, fmt.Errorf("time: %v", err)
		}
		common = append(common, "--time", tm)
	}
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		if v, ok := redact.Flags[k]; ok { // suite.json, junit.xml and --list show Args (issue 29, item 3)
			common = append(common, "--"+k+"="+redact.Mark)
			env = append(env, v+"="+flags[k])
			continue
		}
		common = append(common, "--"+k+"="+flags[k])
	}
	var words []string
	for _, v := range expect {
		words = append(words, v.String())
	}
	var out []Case
	for _, t := range topos {
		for _, n := range nems {
			// The id names the run's directory: bounded before it is made.
			if l := len(e.Name) + len(or1(t, "default")) + len(n) + 23; l > maxID {
				return nil, fmt.Errorf("topology %.40q with nemesis %.40q: a run id of %d bytes, more than %d", t, n, l, maxID)
			}
			for _, seed := range seeds {
				args := slices.Clone(common)
				if t != "" {
					args = append(args, "--topology", t)
				}
				args = append(args, "--nemesis", n, "--seed", strconv.FormatInt(seed, 10))
				id := fmt.Sprintf("%s/%s/%s/%d", e.Name, or1(t, "default"), strings.ReplaceAll(n, ",", "+"), seed)
				out = append(out, Case{ID: id, Entry: e.Name, Args: args, Seed: seed, Expect: words, expect: expect, env: env})
			}
		}
	}
	return out, nil
}

func or1(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// child is the case's run as the suite starts it: its arguments without the secret flags' placeholders,
// the variables that carry their values instead (kept out of the process list too), and a redactor of
// those values for what the suite keeps of its output.
func (c Case) child() (args, env []string, red *redact.Redactor) {
	if len(c.env) == 0 {
		return c.Args, nil, nil
	}
	for _, a := range c.Args {
		name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, ok := redact.Flags[name]; !ok || v != redact.Mark {
			args = append(args, a)
		}
	}
	var secrets []string
	for _, e := range c.env {
		_, v, _ := strings.Cut(e, "=")
		secrets = append(secrets, v)
	}
	return args, c.env, redact.New(secrets...)
}

// SetServer makes every case run on server (lockcheck run --server; "" leaves the cases as they are), as
// a CI matrix's server dimension does; a case whose entry names its own server refuses it, naming the entry.
func (s *Suite) SetServer(server string) error {
	if server == "" {
		return nil
	}
	for i, c := range s.Cases {
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--server=") || strings.HasPrefix(a, "--server-bin=") {
				return fmt.Errorf("--server %s: entry %q names its own server (%s): give one", server, c.Entry, a)
			}
		}
		s.Cases[i].Args = append(slices.Clone(c.Args), "--server="+server)
	}
	return nil
}

// Shard keeps the cases of shard i of n (1-based), split by a hash of each case's id: every case lands in
// exactly one shard, and adding an entry moves no other case to another shard.
func (s *Suite) Shard(i, n int) {
	var keep []Case
	for _, c := range s.Cases {
		if ShardOf(c.ID, n) == i {
			keep = append(keep, c)
		}
	}
	s.Cases = keep
}

// ShardOf is the 1-based shard of a case id among n.
func ShardOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32()%uint32(n)) + 1
}

// ParseShard reads "i/n".
func ParseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 1 <= i <= n", s)
	}
	return i, n, nil
}

// Met reports whether a verdict is one the case expects.
func (c Case) Met(v checker.Validity) bool {
	if len(c.expect) == 0 { // read back from suite.json
		for _, w := range c.Expect {
			if verdicts[w] == v {
				return true
			}
		}
		return false
	}
	return slices.Contains(c.expect, v)
}

// NewCase is a case made in code (lockcheck compare) rather than from a file; it expects any verdict: its
// outcome is a finding, not a pass or a failure.
func NewCase(id, entry string, seed int64, args []string) Case {
	return Case{ID: id, Entry: entry, Args: args, Seed: seed, Expect: []string{"valid", "invalid", "unknown"},
		expect: Expect{checker.Valid, checker.Invalid, checker.Unknown}}
}

// WithSeed is the case for another seed of the same run.
func (c Case) WithSeed(seed int64) Case {
	c.Args = slices.Clone(c.Args)
	if i := slices.Index(c.Args, "--seed"); i >= 0 && i+1 < len(c.Args) {
		c.Args[i+1] = strconv.FormatInt(seed, 10)
	}
	c.ID = strings.TrimSuffix(c.ID, "/"+strconv.FormatInt(c.Seed, 10)) + "/" + strconv.FormatInt(seed, 10)
	c.Seed = seed
	return c
}
