// Package repro is the catalog of reproduced lock bugs: each entry a suite file (catalog/*.yaml) whose two
// entries run the buggy and the fixed version on the same seeds and schedule.
package repro

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"

	lockcheck "github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/known"
	"github.com/lockcheck/lockcheck/suite"
)

// catalog is the catalog's files (the module root embeds them: the known package reads them too).
var catalog, _ = fs.Sub(lockcheck.Catalog, "repro")

// List returns every catalog entry, by name.
func List() ([]*suite.Suite, error) {
	files, err := fs.ReadDir(catalog, "catalog")
	if err != nil {
		return nil, err
	}
	var out []*suite.Suite
	for _, f := range files {
		s, err := Get(strings.TrimSuffix(f.Name(), ".yaml"))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Quick returns the entries marked quick: both sides decided in seconds on one seed.
func Quick() ([]*suite.Suite, error) {
	all, err := List()
	if err != nil {
		return nil, err
	}
	var out []*suite.Suite
	for _, s := range all {
		if s.Repro.Quick {
			out = append(out, s)
		}
	}
	return out, nil
}

// Get loads one entry.
func Get(name string) (*suite.Suite, error) {
	b, err := fs.ReadFile(catalog, path.Join("catalog", name+".yaml"))
	if err != nil {
		var names []string
		files, _ := fs.ReadDir(catalog, "catalog")
		for _, f := range files {
			names = append(names, strings.TrimSuffix(f.Name(), ".yaml"))
		}
		return nil, fmt.Errorf("no repro %q (lockcheck repro list: %s)", name, strings.Join(names, ", "))
	}
	base := "."
	if bytes.Contains(b, []byte("schedule:")) { // its schedule is embedded: written out for the runs to read
		if base, err = schedules(); err != nil {
			return nil, fmt.Errorf("repro %s: %v", name, err)
		}
	}
	s, err := suite.Parse("repro "+name, b, base)
	if err != nil {
		return nil, err
	}
	if s.Repro == nil {
		return nil, fmt.Errorf("repro %s: no repro block", name)
	}
	return s, nil
}

// Reseed gives both sides seeds 1..n.
func Reseed(s *suite.Suite, n int) {
	var cases []suite.Case
	for _, c := range s.Cases {
		if c.Seed != 1 {
			continue
		}
		for seed := 1; seed <= n; seed++ {
			cases = append(cases, c.WithSeed(int64(seed)))
		}
	}
	s.Cases = cases
}

// WithVersion runs only the buggy side, with the library at version v: "is mine affected?".
func WithVersion(s *suite.Suite, v string) error {
	var cases []suite.Case
	for _, c := range s.Cases {
		if c.Entry != "buggy" {
			continue
		}
		i := slices.Index(c.Args, "--client")
		if i < 0 {
			return fmt.Errorf("--version: repro %s does not run a library's worker", s.Name)
		}
		lib, _, _ := strings.Cut(c.Args[i+1], "@")
		c.Args = slices.Clone(c.Args)
		c.Args[i+1] = lib + "@" + v
		cases = append(cases, c)
	}
	s.Cases = cases
	return nil
}

// Side is one side's tally.
type Side struct {
	Entry, What      string
	Runs, Caught     int
	Unknown          int
	Errors           int // runs with no verdict (the run itself failed): never a pass
	MedianFirst      float64
	Expected, Passed bool
	Why              string // the first failed run's last line (a build's error), when a run failed
	Story            string // the first caught run's story (report.Story)
	Known            string // the first caught run's known-or-new line (report.Known)
	// Strays counts the caught runs not known as the entry they reproduce: its catalog rule (package known)
	// does not describe what its own buggy side finds.
	Strays int
}

// Tally sums the outcomes per side. The buggy side passes when at least 80% of its seeds were caught (4 of
// 5); the fixed side when every seed was valid (a run that ended in an error is not).
//
// The buggy side passes only when every caught run is known as the entry (known.As): the catalog's rule
// describes what its own buggy side finds, so that a user's run of the same bug is named by it.
func Tally(rep *suite.Report) []Side {
	as := known.As(rep.Name)
	by := map[string]*Side{}
	firsts := map[string][]float64{}
	for _, o := range rep.Outcomes {
		s := by[o.Entry]
		if s == nil {
			s = &Side{Entry: o.Entry, What: describe(o.Args), Expected: true}
			by[o.Entry] = s
		}
		s.Runs++
		switch o.Verdict {
		case "invalid":
			s.Caught++
			firsts[o.Entry] = append(firsts[o.Entry], float64(o.FirstNs)/1e9)
			if s.Story == "" {
				s.Story, s.Known = o.Story, o.Known
			}
			if o.Entry == "buggy" && o.KnownAs != as {
				s.Strays++
			}
		case "unknown":
			s.Unknown++
		case "error":
			s.Errors++
			if s.Why == "" { // a build's output may color its lines: no escape reaches the terminal
				s.Why = strings.Map(func(r rune) rune {
					if unicode.IsControl(r) {
						return -1
					}
					return r
				}, o.Violation)
			}
		}
	}
	var out []Side
	for name, s := range by {
		f := firsts[name]
		sort.Float64s(f)
		s.MedianFirst = math.NaN()
		if len(f) > 0 {
			s.MedianFirst = f[len(f)/2]
		}
		if name == "buggy" {
			s.Passed = s.Caught*5 >= s.Runs*4 && s.Strays == 0
		} else {
			s.Passed = s.Caught == 0 && s.Unknown == 0 && s.Errors == 0
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entry < out[j].Entry })
	return out
}

// Answer is what the buggy side run at one version (--version) says about that version.
type Answer struct {
	Decided      bool   // false: the runs cannot tell (none decided, or some failed or ended unknown)
	Affected     bool   // when decided
	Why          string // when not decided
	Caught, Runs int    // seeds caught, seeds run
}

// Answer judges a side run at one version: affected when a run caught the bug; not affected when every
// run was valid, as a fixed side must be; else undetermined, since a run that failed (a build that
// failed, a worker that did not start) or ended unknown has shown nothing, and "not affected" would be
// believed.
func (s Side) Answer() Answer {
	a := Answer{Caught: s.Caught, Runs: s.Runs}
	switch {
	case s.Caught > 0:
		a.Decided, a.Affected = true, true
	case s.Runs > 0 && s.Errors == 0 && s.Unknown == 0:
		a.Decided = true
	case s.Errors == s.Runs:
		a.Why = fmt.Sprintf("no run reached a verdict (%d of %d failed): %s", s.Errors, s.Runs, s.Why)
	case s.Errors > 0:
		a.Why = fmt.Sprintf("%d of %d runs failed, %d unknown, none caught it: %s", s.Errors, s.Runs, s.Unknown, s.Why)
	default:
		a.Why = fmt.Sprintf("%d of %d runs unknown, none caught it", s.Unknown, s.Runs)
	}
	return a
}

// String says the answer in words: not being affected is good news and reads as such.
func (a Answer) String() string {
	switch {
	case !a.Decided:
		return "affected=undetermined: " + a.Why
	case a.Affected:
		return fmt.Sprintf("affected: caught on %d of %d seeds", a.Caught, a.Runs)
	}
	return fmt.Sprintf("not affected on %d of %d seeds", a.Runs, a.Runs)
}

func describe(args []string) string {
	for _, f := range []string{"--client", "--lock"} {
		if i := slices.Index(args, f); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "?"
}

// Print writes one line per side. Judged says whether each side is held to its entry's expectation; a
// side run at a user's version (--version) is not, and its line ends with what it measured.
func Print(w io.Writer, sides []Side, judged bool) {
	for _, s := range sides {
		mark := ": as expected"
		switch {
		case !judged:
			mark = ""
		case !s.Passed:
			mark = ": NOT as expected"
		}
		first := "-"
		if !math.IsNaN(s.MedianFirst) {
			first = fmt.Sprintf("%.1fs", s.MedianFirst)
		}
		errs := ""
		if s.Errors > 0 {
			errs = fmt.Sprintf(", error %d", s.Errors)
		}
		fmt.Fprintf(w, "%-6s %-22s caught %d/%d (unknown %d%s), median first violation %s%s\n",
			s.Entry, s.What, s.Caught, s.Runs, s.Unknown, errs, first, mark)
		if s.Story != "" {
			fmt.Fprintf(w, "       %s%s\n", suite.StoryPrefix, s.Story)
		}
		if s.Known != "" {
			fmt.Fprintf(w, "       %s\n", s.Known)
		}
		if s.Strays > 0 {
			fmt.Fprintf(w, "       %d caught run(s) not known as this entry: its match: rule (package known) misses them\n", s.Strays)
		}
	}
}

// schedules writes the binary's shipped schedules (examples/schedules) out under the cache, as the
// workers' sources are, and returns the directory a catalog entry's schedule: path starts from. An entry
// names its schedule as examples/schedules/NAME.yaml, so the same file also runs from a checkout.
func schedules() (string, error) { return worker.Extract(lockcheck.Schedules, "schedules") }
