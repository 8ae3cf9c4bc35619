// Package known tells an invalid run's finding by its signature and matches it against lockcheck repro's
// catalog (repro/catalog/*.yaml): a design limit or a library's known bug, or nothing known. Each catalog
// entry says what its finding looks like: its checkers, its buggy side's faults, lock family and library,
// and a match: block for what those do not say (which side of the lease, a shortened lease).
package known

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	lockcheck "github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/suite"
)

// Signature is what a finding looks like, whoever's run it was: the kind of violation and the checker
// that found it, the lock family, the faults in force from the first grant to the violation, and the
// breaking transition (Shape, from package coverage when it has one).
type Signature struct {
	Kind    report.ViolationKind `json:"kind"`
	Checker string               `json:"checker"`
	Family  string               `json:"family"`
	Faults  []string             `json:"faults,omitempty"`
	Shape   string               `json:"shape,omitempty"`
	// Lease is which side of the first owner's lease an overlap fell on; Shortened that a re-entry had
	// shortened that lease (report.Story).
	Lease     report.LeaseSide `json:"lease,omitempty"`
	Shortened bool             `json:"shortened,omitempty"`
	// Stopped is that a re-entry's unlock had stopped the watchdog that kept that lease (report.Story).
	Stopped bool `json:"watchdog_stopped,omitempty"`
	// Outlived is that the first owner held on past a fixed lease of its own (report.Story).
	Outlived bool `json:"outlived,omitempty"`
	// GaveUp is that the first owner's watchdog renewed no more after a renewal got no answer (report.Story).
	GaveUp bool `json:"watchdog_gave_up,omitempty"`
	// Late is that the first owner's grant came back after its fixed lease could have ended (report.Story).
	Late bool `json:"late_grant,omitempty"`
	// Also are the other checkers that found the run invalid: a known bug may be what one of them found
	// (redsync's Extend answering ok on a lost lock is porcupine's, beside the overlap the story leads with).
	Also []string `json:"also,omitempty"`
}

// String is the signature in one line: "overlap by mutual-exclusion on a mutex, under client-pause, past
// the lease".
func (s Signature) String() string {
	t := fmt.Sprintf("%s by %s on a %s", s.Kind, s.Checker, s.Family)
	if len(s.Faults) == 0 {
		t += ", with no fault in force"
	} else {
		t += ", under " + strings.Join(s.Faults, "+")
	}
	switch s.Lease {
	case report.PastLease:
		t += ", past the first owner's lease"
		if s.Shortened {
			t += " (shortened by a re-entry)"
		}
		if s.Stopped {
			t += " (its watchdog stopped by a re-entry's unlock)"
		}
		switch {
		case s.Late:
			t += " (its grant came back after its own fixed lease could end)"
		case s.Outlived:
			t += " (held past its own fixed lease)"
		}
		if s.GaveUp {
			t += " (its watchdog gave up after a renewal got no answer)"
		}
	case report.WithinLease:
		t += ", within the first owner's lease"
	}
	if s.Shape != "" {
		t += ", at " + s.Shape
	}
	if len(s.Also) > 0 {
		t += "; also invalid: " + strings.Join(s.Also, ", ")
	}
	return t
}

// SignatureOf is an invalid run's signature, from its story; false when the run is not invalid (or its
// results have no story).
func SignatureOf(h *history.History, r *report.Results) (Signature, bool) {
	st := r.Story
	if r.Valid != checker.Invalid || st == nil || st.Kind == report.NoViolation {
		return Signature{}, false
	}
	s := Signature{Kind: st.Kind, Checker: st.Checker, Lease: st.Lease, Shortened: st.Shortened, Stopped: st.Stopped,
		Outlived: st.Outlived, GaveUp: st.GaveUp, Late: st.Late}
	if r.Breaking != nil { // the transition at the first violation (package coverage)
		s.Shape = r.Breaking.String()
	}
	for _, c := range r.Checkers {
		if c.Valid == checker.Invalid && c.Checker != st.Checker && !slices.Contains(s.Also, c.Checker) {
			s.Also = append(s.Also, c.Checker)
		}
	}
	sort.Strings(s.Also)
	if h != nil && h.Run != nil {
		s.Family = h.Run.Checks.Family
	}
	faults := st.Faults
	if faults == nil && st.Kind == report.OtherViolation { // such a story names no fault: those in force then
		for _, w := range r.Faults {
			if w.Start <= st.At && w.End >= st.At {
				faults = append(faults, report.StoryFault{Fault: w.Kind})
			}
		}
	}
	for _, f := range faults {
		if !slices.Contains(s.Faults, f.Fault) {
			s.Faults = append(s.Faults, f.Fault)
		}
	}
	sort.Strings(s.Faults)
	return s, true
}

// Entry is a catalog entry a finding matched.
type Entry = report.KnownEntry

// rule is what a catalog entry's finding looks like.
type rule struct {
	entry     Entry
	as        string
	checkers  []string
	kind      report.ViolationKind
	faults    []string // every one in force
	anyFault  []string // one of them at least in force
	noFault   bool     // match: faults: [none]: no fault in force at all
	families  []string // the buggy side's family, or the match: line's families
	lock      string   // the buggy side's lock, and its library ("" with any-lock)
	library   string
	fixed     string // the release that fixed it: a run of it or later is not this bug
	lease     report.LeaseSide
	shortened *bool  // nil: either
	stopped   *bool  // nil: either
	outlived  *bool  // nil: either
	gaveUp    *bool  // nil: either
	late      *bool  // nil: either
	client    string // the buggy side's --client (lib@version), to confirm an emulation's finding with
}

var (
	once     sync.Once
	rules    []rule
	rulesErr error
)

// Rules loads the catalog's rules once (the catalog is embedded: an error is a broken build).
func load() ([]rule, error) {
	once.Do(func() {
		files, err := fs.Glob(lockcheck.Catalog, "repro/catalog/*.yaml")
		if err != nil {
			rulesErr = err
			return
		}
		for _, f := range files {
			b, err := fs.ReadFile(lockcheck.Catalog, f)
			if err != nil {
				rulesErr = err
				return
			}
			r, err := ruleOf(strings.TrimSuffix(path.Base(f), ".yaml"), b)
			if err != nil {
				rulesErr = fmt.Errorf("catalog %s: %w", f, err)
				return
			}
			rules = append(rules, r)
		}
	})
	return rules, rulesErr
}

// ruleOf reads one catalog file: its repro block and its buggy side.
func ruleOf(name string, b []byte) (rule, error) {
	var f suite.File
	if err := yaml.Unmarshal(b, &f); err != nil {
		return rule{}, err
	}
	rp := f.Repro
	if rp == nil || len(f.Entries) != 2 {
		return rule{}, fmt.Errorf("no repro block with a buggy and a fixed side")
	}
	bug, fix := merged(f.Defaults, f.Entries[0]), merged(f.Defaults, f.Entries[1])
	r := rule{entry: Entry{Name: name, Summary: rp.Summary, Issue: rp.Issue, Design: rp.Library == "design"},
		lock: orDefault(bug.Lock, "reentrant"), client: bug.Client}
	for _, c := range strings.Split(rp.Checker, ",") {
		if c = strings.TrimSpace(c); c != "" {
			r.checkers = append(r.checkers, c)
		}
	}
	k, err := kinds.Lookup(r.lock)
	if err != nil {
		return rule{}, err
	}
	r.families = []string{k.Family.Name}
	if bug.Lock == "" { // the default lock: any lock of its family (a worker's run names the lock it served)
		r.lock = ""
	}
	r.library = libraryOf(bug.Client, k)
	for _, n := range bug.Nemeses {
		for _, one := range strings.Split(n, ",") {
			if one = strings.TrimSpace(one); one != "" && one != "none" {
				r.faults = append(r.faults, one)
			}
		}
	}
	if r.entry.Design {
		r.entry.Mitigation, _, _ = strings.Cut(rp.FixedIn, " (")
		r.entry.Mitigation = strings.TrimPrefix(r.entry.Mitigation, "the mitigation ") // "mitigation: the mitigation ..."
		r.entry.Of = "a design limit"
	} else {
		if v, ok := rp.FixRelease(); ok {
			r.fixed, r.entry.Fixed = v, v
		} else if v, ok := fixedBy(bug.Client, fix.Client); ok {
			r.fixed, r.entry.Fixed = v, v
		} else {
			r.entry.Fixed = rp.FixedIn
		}
		r.entry.Of = "a bug of " + rp.Library
		if rp.Affected != "" {
			r.entry.Of += " (" + rp.Affected + ")"
		}
	}
	if m := rp.Match; m != nil {
		r.kind, r.lease, r.shortened, r.stopped, r.outlived, r.as = report.ViolationKind(m.Kind), report.LeaseSide(m.Lease), m.Shortened, m.Stopped, m.Outlived, m.As
		r.gaveUp, r.late = m.GaveUp, m.Late
		if len(m.Families) > 0 {
			r.families = m.Families
		}
		r.checkers = append(r.checkers, m.Checkers...)
		if m.Faults != nil {
			r.faults = *m.Faults
			if len(r.faults) == 1 && r.faults[0] == "none" {
				r.faults, r.noFault = nil, true
			}
		}
		r.anyFault = m.AnyFault
		if m.AnyLock {
			r.lock, r.library = "", ""
		}
		if m.Limit != "" {
			r.entry.Of = "a design limit of " + m.Limit
		}
	}
	return r, nil
}

// fixedBy is the fixed side's version of the buggy side's library, where the sides differ only by it.
func fixedBy(bug, fix string) (string, bool) {
	lb, _, _ := strings.Cut(bug, "@")
	lf, v, ok := strings.Cut(fix, "@")
	return v, ok && lb == lf && bug != fix
}

// merged is a side with the file's defaults under it.
func merged(d, e suite.Entry) suite.Entry {
	if e.Lock == "" {
		e.Lock = d.Lock
	}
	if e.Client == "" {
		e.Client = d.Client
	}
	if e.Nemeses == nil {
		e.Nemeses = d.Nemeses
	}
	return e
}

// libraryOf names whose lock code ran: a worker's library (--client NAME[@VERSION]), or for lockcheck's
// own clients the script set they run (Redisson's) or the lock itself (naive).
func libraryOf(client string, k *kinds.Kind) string {
	if client != "" {
		lib, _, _ := strings.Cut(client, "@")
		return lib
	}
	if k.Scripts != "" {
		return k.Scripts
	}
	return k.Name
}

// runLibrary is libraryOf for a run: its worker's registered name, else the script set its Go clients
// ran (a set whose scripts --scripts replaced is nobody's library), else its lock.
func runLibrary(run history.RunMeta) (lib, version string) {
	if c := run.Client; c != nil && c.Go == nil {
		if c.Name != "" && c.Name != "cmd" {
			return c.Name, c.Version
		}
		return c.Library, c.Version
	}
	switch {
	case run.Spec != "":
		return "spec:" + run.Spec, ""
	case run.Options.Scripts != "":
		return "scripts:" + run.Options.Scripts, ""
	case run.ScriptSet != "":
		return run.ScriptSet, ""
	}
	return run.Lock, ""
}

// As is the entry a catalog entry's runs are known as: itself, or the entry it plays (match: as:).
func As(name string) string {
	rs, _ := load()
	for _, r := range rs {
		if r.entry.Name == name && r.as != "" {
			return r.as
		}
	}
	return name
}

// Match finds the catalog entry a finding is, for a run: the most specific entry whose rule it meets.
func Match(s Signature, run history.RunMeta) (Entry, bool) {
	rs, err := load()
	if err != nil {
		return Entry{}, false
	}
	r, ok := best(rs, s, run)
	if !ok {
		return Entry{}, false
	}
	return r.entry, true
}

func best(rs []rule, s Signature, run history.RunMeta) (rule, bool) {
	var found rule
	score := -1
	for _, r := range rs {
		n, ok := r.meets(s, run)
		if ok && r.fixed != "" { // a bug of the run's very version, fixed later: above any design limit
			n += 100
		}
		if ok && n > score {
			found, score = r, n
		}
	}
	if score < 0 {
		return rule{}, false
	}
	if found.as != "" {
		for _, r := range rs {
			if r.entry.Name == found.as {
				return r, true
			}
		}
	}
	return found, true
}

// meets says whether a finding meets the rule, and how specific the rule is (how many conditions it set).
func (r rule) meets(s Signature, run history.RunMeta) (int, bool) {
	n := 0
	cond := func(set, ok bool) bool {
		if set {
			n++
		}
		return !set || ok
	}
	lib, version := runLibrary(run)
	found := slices.Contains(r.checkers, s.Checker) || slices.ContainsFunc(s.Also, func(c string) bool { return slices.Contains(r.checkers, c) })
	ok := cond(len(r.checkers) > 0, found) &&
		cond(r.kind != "", r.kind == s.Kind) &&
		cond(len(r.families) > 0, slices.Contains(r.families, s.Family)) &&
		cond(r.lease != "", r.lease == s.Lease) &&
		cond(r.shortened != nil, r.shortened != nil && *r.shortened == s.Shortened) &&
		cond(r.stopped != nil, r.stopped != nil && *r.stopped == s.Stopped) &&
		cond(r.outlived != nil, r.outlived != nil && *r.outlived == s.Outlived) &&
		cond(r.gaveUp != nil, r.gaveUp != nil && *r.gaveUp == s.GaveUp) &&
		cond(r.late != nil, r.late != nil && *r.late == s.Late) &&
		cond(r.lock != "", r.lock == run.Lock) &&
		cond(r.library != "", r.library == lib) &&
		// A bug a release fixed is the runs' of a version before it: lockcheck's Go emulation (no version) plays
		// the library as it is now, fixed (a drop-reply that starved its watchdog was named #2515 of 3.12.0).
		cond(r.fixed != "", version != "" && Older(version, r.fixed)) &&
		cond(r.noFault, len(s.Faults) == 0) &&
		cond(len(r.anyFault) > 0, slices.ContainsFunc(r.anyFault, func(f string) bool { return slices.Contains(s.Faults, f) }))
	for _, f := range r.faults {
		ok = ok && cond(true, slices.Contains(s.Faults, f))
	}
	return n, ok
}

// Older says whether version a comes before b, by their dotted numbers ("3.43.0" < "3.44.0", "v4.0.3" <
// "v4.0.4"); a part that is not a number compares as 0.
func Older(a, b string) bool {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := range max(len(pa), len(pb)) {
		x, y := part(pa, i), part(pb, i)
		if x != y {
			return x < y
		}
	}
	return false
}

func part(p []string, i int) int {
	if i >= len(p) {
		return 0
	}
	digits := strings.TrimRightFunc(p[i], func(r rune) bool { return r < '0' || r > '9' })
	n, _ := strconv.Atoi(digits)
	return n
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Of is an invalid run's known-or-new line for results.json (nil for a run that is not invalid): the
// entry it matched or that nothing known matches, how to confirm an emulation's finding on the real
// library, and whose scripts ran where they were not the library's.
func Of(h *history.History, r *report.Results) *report.Known {
	s, ok := SignatureOf(h, r)
	if !ok || h == nil || h.Run == nil {
		return nil
	}
	run := *h.Run
	k := &report.Known{Signature: s.String(), Scripts: scriptsOf(run)}
	rs, _ := load()
	m, matched := best(rs, s, run)
	if matched {
		e := m.entry
		k.Entry = &e
		k.Text = Text(e)
	} else {
		k.Text = "new: nothing in lockcheck's catalog matches this finding (" + k.Signature + ")"
	}
	k.Confirm = confirm(run, m, matched)
	return k
}

// Text is the known line for an entry: "known: `kleppmann-pause`, a design limit of every lease lock;
// mitigation: fencing tokens".
func Text(e Entry) string {
	t := fmt.Sprintf("known: `%s`, %s", e.Name, e.Of)
	switch {
	case e.Design && e.Mitigation != "":
		t += "; mitigation: " + e.Mitigation
	case e.Fixed != "":
		t += "; fixed: " + e.Fixed
	}
	return t
}

// confirm says how to confirm on the real library a finding of lockcheck's Go clients that run a
// library's scripts (Redisson's): the same command with --client and the version to try.
func confirm(run history.RunMeta, m rule, matched bool) string {
	if run.Client != nil || run.Spec != "" || run.Options.Scripts != "" || run.ScriptSet == "" {
		return ""
	}
	client := run.BaseScriptSet() + "@VERSION"
	if matched && strings.HasPrefix(m.client, run.BaseScriptSet()+"@") {
		client = m.client
	}
	return fmt.Sprintf("lockcheck's Go emulation of %s's scripts ran: confirm on the real library with the same command and `--client %s`", run.BaseScriptSet(), client)
}

// scriptsOf says whose scripts ran where they were not the library's own: a --lock-spec file's, or a
// set with --scripts replacing some of its files.
func scriptsOf(run history.RunMeta) string {
	switch {
	case run.Spec != "":
		return "the lock spec " + path.Base(run.Spec) + "'s scripts ran (the user's lock, not a library's)"
	case run.Options.Scripts != "" && run.Client == nil:
		return fmt.Sprintf("the %s script set with the files in %s replacing its own ran (--scripts): not %s's own scripts",
			run.BaseScriptSet(), path.Base(run.Options.Scripts), run.BaseScriptSet())
	}
	return ""
}
