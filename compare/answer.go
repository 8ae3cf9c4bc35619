package compare

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/suite"
)

// runOverhead is a run's time beside its workload and its client's start-up: the topology's start, the
// quiet second, judging (measured here: 3-6 s a run on the emulated rows).
const runOverhead = 5 * time.Second

// Estimate is how long the suite's runs take, par at a time: each run's length, its row's start-up and the
// run's overhead, spread over the parallel slots.
func Estimate(s *suite.Suite, ls []Lock, par int) time.Duration {
	startup := map[string]time.Duration{}
	for _, l := range ls {
		startup[l.Name] = l.Startup
	}
	var total time.Duration
	for _, c := range s.Cases {
		d := runOverhead + startup[c.Entry]
		if i := slices.Index(c.Args, "--time"); i >= 0 && i+1 < len(c.Args) {
			if t, err := time.ParseDuration(c.Args[i+1]); err == nil {
				d += t
			}
		}
		total += d
	}
	return (total / time.Duration(max(par, 1))).Round(time.Second)
}

// Progress prints, as runs end, one line per run with its outcome in words and its story, and one line per
// cell once its last seed is in, with what ran in the cell's runs' own words (results.json's "ran").
type Progress struct {
	w     io.Writer
	dir   string
	locks map[string]Lock
	names map[string]string // scenario ID → name
	want  map[string]int    // cell → seeds
	got   map[string]*Cell
}

// NewProgress follows the suite s, whose runs are kept under dir.
func NewProgress(w io.Writer, dir string, s *suite.Suite, ls []Lock, ss []Scenario) *Progress {
	p := &Progress{w: w, dir: dir, locks: map[string]Lock{}, names: map[string]string{}, want: map[string]int{}, got: map[string]*Cell{}}
	for _, l := range ls {
		p.locks[l.Name] = l
	}
	for _, sc := range ss {
		p.names[sc.ID] = sc.Name
	}
	for _, c := range s.Cases {
		p.want[cellOf(c.ID)]++
	}
	return p
}

// cellOf is "lock/scenario" of a case ID "lock/scenario/seed".
func cellOf(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		return id[:i]
	}
	return id
}

// Words says a run's verdict for a reader: whether the lock held.
func Words(verdict string) string {
	switch verdict {
	case "invalid":
		return "violated"
	case "valid":
		return "held"
	case "unknown":
		return "undecided"
	}
	return "failed to run"
}

// Each takes one finished run (suite.Config.Each).
func (p *Progress) Each(o suite.Outcome) {
	key := cellOf(o.ID)
	lock, sc, _ := strings.Cut(key, "/")
	r := readResults(filepath.Join(p.dir, o.Dir))
	verdict, _ := judge(o, r, p.locks[lock].Judge)
	missed := false
	if verdict == "valid" {
		h, _ := history.ReadFile(filepath.Join(p.dir, o.Dir, "history.jsonl"))
		missed = !faultApplied(h)
	}
	line := fmt.Sprintf("%s × %s seed %d: %s (%.0f s)", lock, sc, o.Seed, Words(verdict), o.Seconds)
	if missed {
		line += ", but its fault never fired: untested"
	}
	if o.Story != "" {
		line += ": " + o.Story
	} else if verdict != "valid" && o.Violation != "" {
		line += ": " + o.Violation
	}
	fmt.Fprintln(p.w, line)
	c := p.got[key]
	if c == nil {
		c = &Cell{Lock: lock, Scenario: sc}
		p.got[key] = c
	}
	c.Seeds++
	if r != nil && c.Ran == "" { // every seed of a cell runs the same flags: its first run's own words
		c.Ran = r.Ran
	}
	switch verdict {
	case "invalid":
		c.Violations++
	case "valid":
		if missed {
			c.Missed++
		}
	default:
		c.Unknown++
	}
	if c.Seeds == p.want[key] {
		held := c.Seeds - c.Violations - c.Unknown - c.Missed
		var out []string
		if c.Violations > 0 {
			out = append(out, fmt.Sprintf("violated on %d of %d seeds", c.Violations, c.Seeds))
		}
		if held > 0 {
			out = append(out, fmt.Sprintf("held on %d of %d", held, c.Seeds))
		}
		if c.Unknown > 0 {
			out = append(out, fmt.Sprintf("undecided on %d of %d (see its runs)", c.Unknown, c.Seeds))
		}
		if c.Missed > 0 {
			out = append(out, fmt.Sprintf("untested on %d of %d (its fault never fired)", c.Missed, c.Seeds))
		}
		line := fmt.Sprintf("cell %s × %s %s: %s", lock, sc, p.names[sc], strings.Join(out, ", "))
		if c.Ran != "" { // what ran, as results.json's "ran" says it (report.WhatRan), not the scenario's flags
			line += ". What ran: " + c.Ran
		}
		fmt.Fprintln(p.w, line)
	}
}

// rowScore is one row over the shared scenarios' cells.
type rowScore struct {
	name, label      string // label: the name and its topology
	runs, violations int
	violated         []string // scenarios with a violation
	fenced           bool
}

func (r rowScore) rate() float64 { return float64(r.violations) / float64(r.runs) }

// fencedFinding is where a fenced row's violations are explained: its token can regress on a failover.
const fencedFinding = "finding H5, RFencedLock's token regression on failover (docs/findings.md)"

// Answer is the closing paragraph: which row is safer for these settings, on which server, under which
// faults, by how much and within what noise, from the measured cells, with the caveats they show. It ranks
// rows only on the scenarios every ranked row was decided in (a row's n/a or undecided column would
// otherwise count for it), and says on how many runs each share rests and when two shares are within the
// noise of that many seeds.
func (t *Table) Answer() string {
	name := map[string]string{}
	for _, s := range t.Scenarios {
		name[s.ID] = s.ID + " " + s.Name
	}
	cells := map[[2]string]Cell{}
	for _, c := range t.Cells {
		cells[[2]string{c.Lock, c.Scenario}] = c
	}
	var oneSeed, undecided, na, missed []string
	first := "" // with --servers: the rows ranked are the first server's; ServersAnswer sets the others beside them
	var ranked []Lock
	for _, l := range t.Locks {
		if l.Base != "" {
			continue
		}
		if first == "" {
			first = l.Server()
		}
		measured := false
		for _, s := range t.Scenarios {
			c, ok := cells[[2]string{l.Name, s.ID}]
			if !ok {
				continue
			}
			switch c.Measured {
			case NotApplicable:
				if len(l.Only) == 0 {
					na = append(na, l.Name+" "+s.ID)
				}
				continue
			case "undecided", "not run":
				undecided = append(undecided, l.Name+" "+s.ID)
			}
			if c.Missed > 0 {
				missed = append(missed, fmt.Sprintf("%s %s (%d of %d)", l.Name, s.ID, c.Missed, c.Seeds))
			}
			switch d := c.decided(); {
			case d == 1:
				oneSeed = append(oneSeed, l.Name+" "+s.ID)
				measured = true
			case d > 1:
				measured = true
			}
		}
		if measured {
			ranked = append(ranked, l)
		}
	}
	// A row there for one scenario (Only) is ranked only among its own kind: beside the others it would
	// leave no scenario shared.
	if slices.ContainsFunc(ranked, func(l Lock) bool { return len(l.Only) == 0 }) {
		ranked = slices.DeleteFunc(ranked, func(l Lock) bool { return len(l.Only) > 0 })
	}
	var shared, left []string
	for _, s := range t.Scenarios {
		every := len(ranked) > 0
		for _, l := range ranked {
			c, ok := cells[[2]string{l.Name, s.ID}]
			every = every && ok && c.Measured != NotApplicable && c.decided() > 0
		}
		if every {
			shared = append(shared, s.ID)
		} else {
			for _, l := range ranked {
				if c, ok := cells[[2]string{l.Name, s.ID}]; ok && c.Measured != NotApplicable && c.decided() > 0 {
					left = append(left, s.ID)
					break
				}
			}
		}
	}
	var rows []rowScore
	for _, l := range ranked {
		r := rowScore{name: l.Name, label: l.Name + " (" + l.Topology() + ")", fenced: l.Class == Fenced}
		for _, id := range shared {
			c := cells[[2]string{l.Name, id}]
			r.runs += c.decided()
			r.violations += c.Violations
			if c.Violations > 0 {
				r.violated = append(r.violated, id)
			}
		}
		rows = append(rows, r)
	}
	var b strings.Builder
	settings := "the default leases"
	if a := t.Settings.Shown(); len(a) > 0 {
		settings = strings.Join(a, " ")
	}
	fmt.Fprintf(&b, "Answer for %s on %s: ", settings, serverName(first))
	switch {
	case len(rows) == 0:
		b.WriteString("no cell was measured, so there is no answer.")
	case len(shared) == 0:
		b.WriteString("no scenario was decided on every row, so no row is ranked (run the rows on the same scenarios, or more seeds).")
	case len(rows) == 1:
		r := rows[0]
		fmt.Fprintf(&b, "only %s was measured: it violated in %d of %d runs%s.", r.label, r.violations, r.runs, under(r.violated, name))
	default:
		t.rank(&b, rows, shared, cells, name)
	}
	if len(left) > 0 && len(rows) > 1 && len(shared) > 0 {
		fmt.Fprintf(&b, " Not ranked on %s: not every ranked row was decided there (its cells are in the table).", strings.Join(left, ", "))
	}
	for _, r := range rows {
		if r.fenced && r.violations > 0 {
			fmt.Fprintf(&b, " %s's violations are %s.", r.name, fencedFinding)
		}
	}
	if len(oneSeed) > 0 {
		fmt.Fprintf(&b, " Caveat: %s ran one seed only, an outcome, not a rate.", strings.Join(oneSeed, ", "))
	}
	if len(undecided) > 0 {
		fmt.Fprintf(&b, " Cells with runs undecided or failed, those runs left out: %s.", strings.Join(undecided, ", "))
	}
	if len(na) > 0 {
		fmt.Fprintf(&b, " Not measured (the fault needs what the row lacks): %s.", strings.Join(na, ", "))
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, " The fault never fired on some seeds, whose runs held untested and are left out: %s.", strings.Join(missed, ", "))
	}
	return b.String()
}

// rank writes the ranking of two or more rows over the shared scenarios: the safer, the others with
// whether their share is within the noise of its seeds, and scenario by scenario where it did better, no
// better or worse.
func (t *Table) rank(b *strings.Builder, rows []rowScore, shared []string, cells map[[2]string]Cell, name map[string]string) {
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].rate() != rows[j].rate() {
			return rows[i].rate() < rows[j].rate()
		}
		return len(rows[i].violated) < len(rows[j].violated)
	})
	best := rows[0]
	tied := 1 // rows as safe as the first
	for tied < len(rows) && rows[tied].rate() == best.rate() {
		tied++
	}
	on := "on " + strings.Join(shared, ", ") + ", the scenarios every row was decided in"
	if tied == len(rows) {
		if best.violations == 0 {
			fmt.Fprintf(b, "no row violated in any run %s (%s), so none is safer by these faults.", on, runsOf(rows))
		} else {
			fmt.Fprintf(b, "no row is safer: every row violated in the same share of its runs %s (%s).", on, runsOf(rows))
		}
		return
	}
	p := make([]float64, len(rows)) // each row's share against the best's: the chance of seeds alone
	beyond, all := false, true
	for i, r := range rows[tied:] {
		p[tied+i] = fisher(best.violations, best.runs-best.violations, r.violations, r.runs-r.violations)
		beyond = beyond || p[tied+i] < noise
		all = all && p[tied+i] < noise
	}
	lead := "is the safer"
	if !all { // a difference these seeds could give by chance: the least, not the safer
		lead = "violated least"
	}
	fmt.Fprintf(b, "%s %s %s: in %d of %d runs%s", best.label, lead, on, best.violations, best.runs, under(best.violated, name))
	for _, r := range rows[1:tied] {
		fmt.Fprintf(b, "; %s alike, %d of %d%s", r.label, r.violations, r.runs, under(r.violated, name))
	}
	for i, r := range rows[tied:] {
		fmt.Fprintf(b, "; %s in %d of %d%s", r.label, r.violations, r.runs, under(r.violated, name))
		if q := p[tied+i]; q >= noise {
			fmt.Fprintf(b, ", within the noise of these runs (two-sided Fisher exact p %.2f)", q)
		} else {
			fmt.Fprintf(b, ", beyond the noise of these runs (p %.2f)", q)
		}
	}
	b.WriteString(".")
	if !beyond {
		fmt.Fprintf(b, " No difference is beyond the noise of these seeds (p < %.2f): more seeds (--seeds) would tell.", noise)
	}
	for _, r := range rows[tied:] {
		var better, same, worse []string
		for _, id := range shared {
			bc, rc := cells[[2]string{best.name, id}], cells[[2]string{r.name, id}]
			bn, rn := bc.decided(), rc.decided()
			pair := fmt.Sprintf("%s (%d/%d against %d/%d)", name[id], bc.Violations, bn, rc.Violations, rn)
			switch x, y := bc.Violations*rn, rc.Violations*bn; {
			case x < y:
				better = append(better, pair)
			case x > y:
				worse = append(worse, pair)
			case rc.Violations > 0:
				same = append(same, pair)
			}
		}
		if len(better) > 0 {
			fmt.Fprintf(b, " Against %s it did better under %s.", r.name, strings.Join(better, ", "))
		}
		if len(same) > 0 {
			fmt.Fprintf(b, " It did no better than %s under %s.", r.name, strings.Join(same, ", "))
		}
		if len(worse) > 0 {
			fmt.Fprintf(b, " It did worse than %s under %s.", r.name, strings.Join(worse, ", "))
		}
	}
}

// noise is the p-value under which a server's difference in a cell is more than its seeds would give.
const noise = 0.05

// ServersAnswer is the paragraph of a table run with --servers: for each server after the first, the cells
// where a row and its twin there (Lock.Base) differ in their share of violating runs, each with the two-sided
// Fisher exact p of the seeds alone giving such a difference, or that they do not differ. "" without twins.
// A difference within seed noise does not tell the servers apart: that cell wants more seeds (--locks, --scenarios).
func (t *Table) ServersAnswer() string {
	base := map[string]Lock{}
	cells := map[[2]string]Cell{}
	for _, l := range t.Locks {
		if l.Base == "" {
			base[l.Name] = l
		}
	}
	for _, c := range t.Cells {
		cells[[2]string{c.Lock, c.Scenario}] = c
	}
	type server struct {
		name, against  string
		compared       int
		differ, beyond []string
	}
	var out []*server
	for _, l := range t.Locks {
		b, ok := base[l.Base]
		if l.Base == "" || !ok {
			continue
		}
		i := slices.IndexFunc(out, func(s *server) bool { return s.name == l.Server() })
		if i < 0 {
			out = append(out, &server{name: l.Server(), against: b.Server()})
			i = len(out) - 1
		}
		srv := out[i]
		for _, s := range t.Scenarios {
			bc, tc := cells[[2]string{b.Name, s.ID}], cells[[2]string{l.Name, s.ID}]
			bn, tn := bc.decided(), tc.decided()
			if bn <= 0 || tn <= 0 || bc.Measured == NotApplicable || tc.Measured == NotApplicable {
				continue
			}
			srv.compared++
			if bc.Violations*tn == tc.Violations*bn {
				continue
			}
			p := fisher(tc.Violations, tn-tc.Violations, bc.Violations, bn-bc.Violations)
			d := fmt.Sprintf("%s %s (%d/%d against %d/%d, p %.2f)", b.Name, s.ID, tc.Violations, tn, bc.Violations, bn, p)
			srv.differ = append(srv.differ, d)
			if p < noise {
				srv.beyond = append(srv.beyond, d)
			}
		}
	}
	var b strings.Builder
	for _, s := range out {
		if b.Len() > 0 {
			b.WriteString(" ")
		} else {
			b.WriteString("Servers: ")
		}
		fmt.Fprintf(&b, "on %s against %s, ", serverName(s.name), serverName(s.against))
		switch {
		case s.compared == 0:
			b.WriteString("no cell was decided on both.")
		case len(s.differ) == 0:
			fmt.Fprintf(&b, "they do not differ: every cell decided on both (%d) violated on the same share of its runs on each.", s.compared)
		default:
			fmt.Fprintf(&b, "%d of the %d cells decided on both differ in their share of violating runs: %s", len(s.differ), s.compared, strings.Join(s.differ, ", "))
			if len(s.beyond) == 0 {
				fmt.Fprintf(&b, "; none beyond seed noise (two-sided Fisher exact p < %.2f), so by these seeds the servers do not differ.", noise)
			} else {
				fmt.Fprintf(&b, "; beyond seed noise (p < %.2f): %s.", noise, strings.Join(s.beyond, ", "))
			}
		}
	}
	return b.String()
}

// serverName is a --server value for a reader ("" is the run's default).
func serverName(s string) string {
	if s == "" {
		return "the host's redis-server"
	}
	return s
}

// fisher is the two-sided p-value of Fisher's exact test on the 2×2 table [a b; c d] (violating and held
// runs of two cells): the probability, with the margins fixed, of a table no more likely than this one.
func fisher(a, b, c, d int) float64 {
	n, row, col := a+b+c+d, a+b, a+c
	lchoose := func(n, k int) float64 {
		x, _ := math.Lgamma(float64(n + 1))
		y, _ := math.Lgamma(float64(k + 1))
		z, _ := math.Lgamma(float64(n - k + 1))
		return x - y - z
	}
	prob := func(x int) float64 { return math.Exp(lchoose(row, x) + lchoose(n-row, col-x) - lchoose(n, col)) }
	seen, p := prob(a), 0.0
	for x := max(0, col-(n-row)); x <= min(row, col); x++ {
		if q := prob(x); q <= seen*(1+1e-9) {
			p += q
		}
	}
	return min(p, 1)
}

// decided is the cell's runs that were judged valid or invalid.
func (c Cell) decided() int { return c.Seeds - c.Unknown - c.Errors - c.Missed }

func under(ids []string, name map[string]string) string {
	if len(ids) == 0 {
		return ""
	}
	var out []string
	for _, id := range ids {
		out = append(out, name[id])
	}
	return " (under " + strings.Join(out, ", ") + ")"
}

func runsOf(rows []rowScore) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.name+" "+strconv.Itoa(r.violations)+"/"+strconv.Itoa(r.runs))
	}
	return strings.Join(out, ", ")
}
