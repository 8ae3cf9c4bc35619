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
// cell once its last seed is in.
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
	verdict, _ := judge(o, readResults(filepath.Join(p.dir, o.Dir)), p.locks[lock].Judge)
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
		fmt.Fprintf(p.w, "cell %s × %s %s: %s\n", lock, sc, p.names[sc], strings.Join(out, ", "))
	}
}

// rowScore is one row over its measured cells.
type rowScore struct {
	name             string
	runs, violations int
	violated         []string // scenarios with a violation
}

func (r rowScore) rate() float64 { return float64(r.violations) / float64(r.runs) }

// Answer is the closing paragraph: which row is safer for these settings, under which faults, by how much,
// from the measured cells, with the caveats they show.
func (t *Table) Answer() string {
	name := map[string]string{}
	for _, s := range t.Scenarios {
		name[s.ID] = s.ID + " " + s.Name
	}
	cells := map[[2]string]Cell{}
	var rows []rowScore
	var oneSeed, undecided, na, missed []string
	first, twins := "", false // with --servers: the rows ranked are the first server's; ServersAnswer sets the others beside them
	for _, l := range t.Locks {
		if l.Base != "" {
			twins = true
		} else if first == "" {
			first = l.Server()
		}
	}
	for _, l := range t.Locks {
		r := rowScore{name: l.Name}
		for _, c := range t.Cells {
			if c.Lock != l.Name {
				continue
			}
			cells[[2]string{c.Lock, c.Scenario}] = c
			switch c.Measured {
			case NotApplicable:
				if len(l.Only) == 0 && l.Base == "" { // a twin lacks what its base row lacks
					na = append(na, l.Name+" "+c.Scenario)
				}
				continue
			case "undecided", "not run":
				undecided = append(undecided, l.Name+" "+c.Scenario)
			}
			if c.Missed > 0 {
				missed = append(missed, fmt.Sprintf("%s %s (%d of %d)", l.Name, c.Scenario, c.Missed, c.Seeds))
			}
			// Only decided runs count: a run that failed to start or could not be judged says nothing of safety.
			decided := c.decided()
			if decided <= 0 {
				continue
			}
			if decided == 1 {
				oneSeed = append(oneSeed, l.Name+" "+c.Scenario)
			}
			r.runs += decided
			r.violations += c.Violations
			if c.Violations > 0 {
				r.violated = append(r.violated, c.Scenario)
			}
		}
		if r.runs > 0 && l.Base == "" {
			rows = append(rows, r)
		}
	}
	var b strings.Builder
	settings := "the default leases"
	if a := t.Settings.Args(); len(a) > 0 {
		settings = strings.Join(a, " ")
	}
	if twins {
		settings += " on " + serverName(first)
	}
	fmt.Fprintf(&b, "Answer for %s: ", settings)
	switch {
	case len(rows) == 0:
		b.WriteString("no cell was measured, so there is no answer.")
	case len(rows) == 1:
		r := rows[0]
		fmt.Fprintf(&b, "only %s was measured: it violated in %d of %d runs%s.", r.name, r.violations, r.runs, under(r.violated, name))
	default:
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
		if tied == len(rows) {
			if best.violations == 0 {
				fmt.Fprintf(&b, "no row violated in any run (%s), so none is safer by these faults.", runsOf(rows))
			} else {
				fmt.Fprintf(&b, "no row is safer: every row violated in the same share of its runs (%s).", runsOf(rows))
			}
			break
		}
		fmt.Fprintf(&b, "%s is the safer: it violated in %d of %d runs%s", best.name, best.violations, best.runs, under(best.violated, name))
		for _, r := range rows[1:tied] {
			fmt.Fprintf(&b, "; %s alike, %d of %d%s", r.name, r.violations, r.runs, under(r.violated, name))
		}
		for _, r := range rows[tied:] {
			fmt.Fprintf(&b, "; %s in %d of %d%s", r.name, r.violations, r.runs, under(r.violated, name))
		}
		b.WriteString(".")
		for _, r := range rows[tied:] {
			var held, both []string
			for _, s := range t.Scenarios {
				bc, ok1 := cells[[2]string{best.name, s.ID}]
				rc, ok2 := cells[[2]string{r.name, s.ID}]
				if !ok1 || !ok2 || bc.decided() <= 0 || rc.decided() <= 0 || rc.Violations == 0 {
					continue
				}
				pair := fmt.Sprintf("%s (%d/%d against %d/%d)", name[s.ID], bc.Violations, bc.decided(), rc.Violations, rc.decided())
				if bc.Violations < rc.Violations {
					held = append(held, pair)
				} else {
					both = append(both, pair)
				}
			}
			if len(held) > 0 {
				fmt.Fprintf(&b, " Against %s it did better under %s.", r.name, strings.Join(held, ", "))
			}
			if len(both) > 0 {
				fmt.Fprintf(&b, " It did no better than %s under %s.", r.name, strings.Join(both, ", "))
			}
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
