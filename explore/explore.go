package explore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// Trial is one run to make: the genome, the run's seed, its number in the exploration (from 1).
type Trial struct {
	N      int
	Seed   int64
	Genome *Genome
}

// Outcome is what a run showed, as the caller's Runner read it from the run's directory.
type Outcome struct {
	Dir     string // the run's directory
	Verdict string // valid, invalid, unknown, or error (no verdict)
	Note    string // an error's line, or the run's story
	// Transitions are the run's coverage: each abstract transition's stable key, with how often it happened.
	Transitions map[string]int
	// Signature is an invalid run's finding signature (its stable key); "" for a run that is not invalid.
	Signature string
	// Known names the catalog entry an invalid run's signature matches ("" for none: new): a known finding
	// is kept but does not count toward MaxFindings, so a base lock's design limit cannot end the search
	// before what is new.
	Known string
	// FirstNs is the time to the first violation, on the run's clock.
	FirstNs int64
	Seconds float64
	// Refused: the run refused its input (a fault the deployment cannot have): not a genome to keep.
	Refused bool
}

// Runner plays a trial and reads what it showed. It must stop soon when ctx ends.
type Runner func(ctx context.Context, t Trial) Outcome

// Entry is a corpus entry: a genome that reached a transition no earlier run had.
type Entry struct {
	ID     string   `json:"id"`
	Run    int      `json:"run"`
	New    []string `json:"new"` // the transitions it reached first
	Origin string   `json:"origin"`
	File   string   `json:"file,omitempty"` // its schedule, where the caller wrote it
	Args   []string `json:"args,omitempty"` // the settings it ran with
	genome *Genome
	picks  int
}

// Finding is every run of one signature.
type Finding struct {
	ID        string `json:"id"`
	Signature string `json:"signature"`
	// Known is the catalog entry its first run matched ("" for new); Settled.Known is the settled word.
	Known    string   `json:"known_at_find,omitempty"`
	Runs     []int    `json:"runs"` // the runs that showed it
	FirstRun int      `json:"first_run"`
	FoundS   float64  `json:"found_after_s"` // since the exploration began
	Dir      string   `json:"dir"`           // its first run's directory
	Story    string   `json:"story,omitempty"`
	File     string   `json:"schedule,omitempty"` // the first run's schedule, where the caller wrote it
	Args     []string `json:"args,omitempty"`
	Seed     int64    `json:"seed"`
	// Settle's verdict on it, filled by the caller (Settle): shrunk, confirmed, matched, reported.
	Settled *Settled `json:"settled,omitempty"`
	genome  *Genome
}

// Genome is the finding's first run's genome.
func (f *Finding) Genome() *Genome { return f.genome }

// Settled is what became of a finding once the search ended: its smallest schedule or command, how often
// that fails again on fresh seeds, whether the catalog knows it, and its report.
type Settled struct {
	// Widened are the moves of steps that raced a lease (Widen) kept before shrinking; Run is the run that
	// was shrunk (the last widened one's, or the finding's first).
	Widened []string `json:"widened,omitempty"`
	// Trimmed are the cuts of steps the failure does without (Trim), kept after widening.
	Trimmed  []string `json:"trimmed,omitempty"`
	Run      string   `json:"run,omitempty"`
	Shrink   string   `json:"shrink,omitempty"`  // the shrink's directory
	Minimal  string   `json:"minimal,omitempty"` // the smallest command, with a seed it failed on
	Schedule string   `json:"schedule_file,omitempty"`
	Caught   int      `json:"caught"` // k of n fresh seeds that failed the same way
	Of       int      `json:"of"`
	// ScheduleCaught of ScheduleOf: the shrunk run written as a schedule, on fresh seeds
	ScheduleCaught int    `json:"schedule_caught,omitempty"`
	ScheduleOf     int    `json:"schedule_of,omitempty"`
	Known          string `json:"known,omitempty"` // the catalog entry it matches; "" for new
	About          string `json:"about,omitempty"` // the entry's summary
	Report         string `json:"report,omitempty"`
	Note           string `json:"note,omitempty"` // what went wrong settling it
	// As is the earlier finding that settled the catalog entry this one's first run matched too: it was
	// not shrunk again (`lockcheck shrink` on its run settles it alone).
	As string `json:"settled_as,omitempty"`
}

// Changes says how the finding's schedule was changed before it was confirmed ("" for not at all):
// "widened: ...; trimmed: ...".
func (s *Settled) Changes() string {
	var out []string
	if len(s.Widened) > 0 {
		out = append(out, "widened: "+strings.Join(s.Widened, ", "))
	}
	if len(s.Trimmed) > 0 {
		out = append(out, "trimmed: "+strings.Join(s.Trimmed, ", "))
	}
	return strings.Join(out, "; ")
}

// Status is the progress line's figures.
type Status struct {
	Runs, Invalid, Errors int
	Coverage, Corpus      int
	Findings              int
	Elapsed               time.Duration
	LastNew               int // transitions the last run added
}

// Line is the progress line.
func (s Status) Line() string {
	return fmt.Sprintf("explore %s: %d runs (%d invalid, %d errors), coverage %d transitions, corpus %d, findings %d",
		s.Elapsed.Round(time.Second), s.Runs, s.Invalid, s.Errors, s.Coverage, s.Corpus, s.Findings)
}

// Explorer is one exploration's settings and state.
type Explorer struct {
	Caps     Caps
	Seed     int64
	Run      Runner
	Parallel int
	// MaxRuns and MaxFindings stop the search early (0: no bound); the budget is the ctx's deadline.
	// MaxFindings counts new findings only (Outcome.Known empty) that failed again: a new finding's genome
	// runs again at once on the next seeds (up to Recheck times), and one that never fails the same way
	// again (a machine's hiccup lined it up) is kept, unconfirmed, but does not end the search.
	MaxRuns, MaxFindings int
	// Progress is told the status after every run (outside the explorer's lock); NewFinding and NewEntry
	// as they happen (under it: keep them short, and call neither Status nor View).
	Progress   func(Status, Outcome)
	NewFinding func(*Finding)
	NewEntry   func(*Entry)

	mu       sync.Mutex
	rng      *rand.Rand
	began    time.Time
	runs     int
	status   Status
	Coverage map[string]int // transition -> how many runs showed it
	Corpus   []*Entry
	Findings []*Finding
	Growth   []Point
	Stopped  string // budget, interrupted, max-findings, max-runs
	refused  int
	seeds    []*Genome  // the shapes' genomes, run first (Seeds)
	rechecks []*Finding // new findings, whose genomes run again before anything else
}

// Recheck is how many times a new finding's genome runs again, at once, before a MaxFindings bound counts
// it or not.
const Recheck = 2

// Again says whether the finding failed in more than one run.
func (f *Finding) Again() bool { return len(f.Runs) > 1 }

// newFindings counts the findings no catalog entry names that failed again.
func (e *Explorer) newFindings() int {
	n := 0
	for _, f := range e.Findings {
		if f.Known == "" && f.Again() {
			n++
		}
	}
	return n
}

// Point is the coverage after a run that added to it.
type Point struct {
	Run      int     `json:"run"`
	S        float64 `json:"s"`
	Coverage int     `json:"coverage"`
}

// Seed adds genomes to the corpus before the search (a merge's, or a previous shard's): their coverage is
// not known, so they count as having reached nothing.
func (e *Explorer) SeedCorpus(gs []*Genome) {
	for _, g := range gs {
		e.Corpus = append(e.Corpus, &Entry{ID: "seed-" + strconv.Itoa(len(e.Corpus)+1), Origin: "merged", genome: g})
	}
}

// next is the next trial: one genome of each shape first (Seeds), a fresh genome while the corpus is empty
// and now and then, otherwise a mutation of a corpus entry (the less picked and the more it reached, the
// likelier).
func (e *Explorer) next() Trial {
	t := e.draw()
	t.Genome = t.Genome.forCaps(e.Caps)
	return t
}

func (e *Explorer) draw() Trial {
	e.runs++
	t := Trial{N: e.runs, Seed: e.Seed*1_000_003 + int64(e.runs)}
	if len(e.rechecks) > 0 { // a new finding's genome again (a copy: a run writes its schedule's about)
		t.Genome, e.rechecks = e.rechecks[0].genome.clone(), e.rechecks[1:]
		t.Genome.Origin += ", again"
		return t
	}
	if len(e.seeds) > 0 { // the shapes first
		t.Genome, e.seeds = e.seeds[0], e.seeds[1:]
		return t
	}
	if len(e.Corpus) == 0 || e.rng.IntN(8) == 0 {
		t.Genome = Generate(e.rng, e.Caps)
		return t
	}
	for range 5 {
		ent := e.choose()
		var other *Genome
		if len(e.Corpus) > 1 {
			other = e.Corpus[e.rng.IntN(len(e.Corpus))].genome
		}
		if m := Mutate(e.rng, e.Caps, ent.genome, other); m != nil {
			m.Origin = m.Origin + " of " + ent.ID
			ent.picks++
			t.Genome = m
			return t
		}
	}
	t.Genome = Generate(e.rng, e.Caps)
	return t
}

// choose draws a corpus entry, weighted toward the rare: each transition it reached first counts 1/(runs
// that have shown it since), so an entry whose news every run now shows fades and one that still holds a
// rarity stays likely (AFL's favoured entries, in a sum); divided by 1 + the times it was picked.
func (e *Explorer) choose() *Entry {
	w := make([]float64, len(e.Corpus))
	sum := 0.0
	for i, c := range e.Corpus {
		rare := 0.0
		for _, t := range c.New {
			rare += 1 / float64(max(e.Coverage[t], 1))
		}
		w[i] = (0.1 + rare) / float64(1+c.picks)
		sum += w[i]
	}
	x := e.rng.Float64() * sum
	for i := range w {
		if x < w[i] {
			return e.Corpus[i]
		}
		x -= w[i]
	}
	return e.Corpus[len(e.Corpus)-1]
}

// Search runs trials, Parallel at a time, until ctx ends (the budget or Ctrl-C) or a bound is reached.
// Everything it kept stays in e when it returns.
func (e *Explorer) Search(ctx context.Context) {
	e.rng = rand.New(rand.NewPCG(uint64(e.Seed), 0x6578706c6f7265))
	e.seeds = Seeds(e.rng, e.Caps)
	e.began = time.Now()
	if e.Coverage == nil {
		e.Coverage = map[string]int{}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for range max(e.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				e.mu.Lock()
				if ctx.Err() != nil || e.Stopped != "" || e.MaxRuns > 0 && e.runs >= e.MaxRuns {
					e.mu.Unlock()
					return
				}
				t := e.next()
				e.mu.Unlock()
				out := e.Run(ctx, t)
				if ctx.Err() != nil && out.Verdict != "invalid" { // cut short: says nothing
					return
				}
				e.mu.Lock()
				e.record(t, out)
				if e.MaxFindings > 0 && e.newFindings() >= e.MaxFindings {
					e.Stopped = "max-findings"
					stop()
				}
				st := e.status
				e.mu.Unlock()
				if e.Progress != nil { // outside the lock: it may write what View shows
					e.Progress(st, out)
				}
			}
		}()
	}
	wg.Wait()
	if e.Stopped == "" {
		switch {
		case e.MaxRuns > 0 && e.runs >= e.MaxRuns:
			e.Stopped = "max-runs"
		case context.Cause(ctx) == context.DeadlineExceeded:
			e.Stopped = "budget"
		case ctx.Err() != nil:
			e.Stopped = "interrupted"
		}
	}
}

// record adds a run's coverage, keeps its genome when it reached something new, and files it under its
// finding when it was invalid.
func (e *Explorer) record(t Trial, out Outcome) {
	s := &e.status
	s.Runs++
	s.Elapsed = time.Since(e.began)
	switch {
	case out.Refused:
		e.refused++
	case out.Verdict == "error":
		s.Errors++
	case out.Verdict == "invalid":
		s.Invalid++
	}
	var added []string
	for k := range out.Transitions {
		if e.Coverage[k] == 0 {
			added = append(added, k)
		}
		e.Coverage[k]++ // runs that showed it: how rare it is
	}
	slices.Sort(added)
	s.LastNew = len(added)
	if len(added) > 0 {
		ent := &Entry{ID: "e" + strconv.Itoa(len(e.Corpus)+1), Run: t.N, New: added, Origin: t.Genome.Origin,
			Args: t.Genome.Args(), genome: t.Genome}
		e.Corpus = append(e.Corpus, ent)
		e.Growth = append(e.Growth, Point{Run: t.N, S: s.Elapsed.Seconds(), Coverage: len(e.Coverage)})
		if e.NewEntry != nil {
			e.NewEntry(ent)
		}
	}
	if out.Verdict == "invalid" && out.Signature != "" {
		var f *Finding
		for _, g := range e.Findings {
			if g.Signature == out.Signature {
				f = g
			}
		}
		if f == nil {
			f = &Finding{ID: "f" + strconv.Itoa(len(e.Findings)+1), Signature: out.Signature, Known: out.Known, FirstRun: t.N,
				FoundS: s.Elapsed.Seconds(), Dir: out.Dir, Story: out.Note, Args: t.Genome.Args(), Seed: t.Seed, genome: t.Genome}
			e.Findings = append(e.Findings, f)
			if e.NewFinding != nil {
				e.NewFinding(f)
			}
			if f.Known == "" && e.MaxFindings > 0 {
				for range Recheck {
					e.rechecks = append(e.rechecks, f)
				}
			}
		}
		f.Runs = append(f.Runs, t.N)
		if f.Again() { // no more rechecks of it
			e.rechecks = slices.DeleteFunc(e.rechecks, func(g *Finding) bool { return g == f })
		}
	}
	s.Coverage, s.Corpus, s.Findings = len(e.Coverage), len(e.Corpus), len(e.Findings)
}

// Status is the figures so far.
func (e *Explorer) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// View calls f with the figures while no run's outcome is being recorded: f may read Coverage, Corpus,
// Findings and Growth (and must not call Status).
func (e *Explorer) View(f func(Status)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.status
	if !e.began.IsZero() {
		s.Elapsed = time.Since(e.began)
	}
	f(s)
}

// FromSchedule makes a genome of a schedule read from a file (a corpus to merge): its step names stay, and
// new ones do not collide with them.
func FromSchedule(s *schedule.Schedule, settings []Setting) *Genome {
	g := &Genome{Schedule: s, Settings: settings, Origin: "merged"}
	for _, st := range s.Steps {
		if n, err := strconv.Atoi(strings.TrimPrefix(st.Name, "s")); err == nil && strings.HasPrefix(st.Name, "s") {
			g.names = max(g.names, n)
		}
	}
	for i := range s.Steps { // an unnamed step gets a name, so that a mutation can follow it
		if s.Steps[i].Name == "" {
			s.Steps[i].Name = g.name()
		}
	}
	return g
}
