package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/suite"
)

// Cell is one lock under one scenario over the seeds.
type Cell struct {
	Lock       string `json:"lock"`
	Scenario   string `json:"scenario"`
	Seeds      int    `json:"seeds"`
	Violations int    `json:"violations"`
	Unknown    int    `json:"unknown"`
	Errors     int    `json:"errors"`
	// Missed counts valid runs in which no fault of the scenario was ever applied (a trigger that found no
	// event in its window): they held without being tested, so they are left out like undecided runs.
	Missed     int      `json:"missed,omitempty"`
	MedianTTFV float64  `json:"median_first_violation_s,omitempty"` // seconds after the workload began
	Measured   string   `json:"measured"`                           // violates, safe, undecided, n/a
	Predicted  string   `json:"predicted,omitempty"`
	Agrees     *bool    `json:"agrees,omitempty"`
	Runs       []string `json:"runs,omitempty"` // each seed's run directory, relative to the report
	// Ran is what the cell's first run did, in its own results' words (report.WhatRan): the workload and
	// faults that ran, not the scenario's flags.
	Ran string `json:"ran,omitempty"`
}

// Cost is what a lock costs, over all its runs: acquire latency, throughput and availability under faults.
type Cost struct {
	Lock        string  `json:"lock"`
	AcquireP50  float64 `json:"acquire_p50_ms"`
	AcquireP99  float64 `json:"acquire_p99_ms"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	Available   float64 `json:"acquires_ok_during_faults"` // share of acquires invoked inside a fault window that were granted
	HealToGrant float64 `json:"heal_to_first_grant_s"`     // median, after each fault's end, until the next grant
}

// Table is the comparison: compare.json.
type Table struct {
	Seeds      int               `json:"seeds"`
	Settings   Settings          `json:"settings"`
	Conclusion string            `json:"answer"`            // Answer's paragraph
	Servers    string            `json:"servers,omitempty"` // ServersAnswer's paragraph (--servers)
	Locks      []Lock            `json:"-"`
	Scenarios  []Scenario        `json:"-"`
	Cells      []Cell            `json:"cells"`
	Costs      []Cost            `json:"costs"`
	Unmeasured map[string]string `json:"unmeasured"`
}

// Build reads each outcome's run and fills the table.
func Build(dir string, rep *suite.Report, ls []Lock, ss []Scenario, seeds int, set Settings) *Table {
	t := &Table{Seeds: seeds, Settings: set, Locks: ls, Scenarios: ss, Unmeasured: Unmeasured}
	type acc struct {
		p50, p99, rate, avail, heal []float64
	}
	costs := map[string]*acc{}
	for _, l := range ls {
		costs[l.Name] = &acc{}
		for _, sc := range ss {
			c := Cell{Lock: l.Name, Scenario: sc.ID, Predicted: sc.Prediction(l)}
			if !sc.Applies(l) {
				c.Measured = NotApplicable
				if len(l.Only) > 0 && !slices.Contains(l.Only, sc.ID) {
					c.Predicted = "" // a row made for other scenarios: the reference's column says nothing of it here
				}
				t.Cells = append(t.Cells, c)
				continue
			}
			var ttfv []float64
			for _, o := range rep.Outcomes {
				if o.Entry != l.Name || !strings.HasPrefix(o.ID, l.Name+"/"+sc.ID+"/") {
					continue
				}
				c.Seeds++
				c.Runs = append(c.Runs, o.Dir)
				r := readResults(filepath.Join(dir, o.Dir))
				if r != nil && c.Ran == "" {
					c.Ran = r.Ran
				}
				h, _ := history.ReadFile(filepath.Join(dir, o.Dir, "history.jsonl"))
				verdict, at := judge(o, r, l.Judge)
				switch verdict {
				case "invalid":
					c.Violations++
					ttfv = append(ttfv, float64(at-h.WorkloadStart())/1e9)
				case "unknown":
					c.Unknown++
				case "valid":
					if !faultApplied(h) {
						c.Missed++
					}
				default:
					c.Errors++
				}
				a := costs[l.Name]
				if r != nil {
					if p50, p99, rate, ok := statsOf(r); ok {
						a.p50, a.p99, a.rate = append(a.p50, p50), append(a.p99, p99), append(a.rate, rate)
					}
				}
				if av, heal, ok := availability(h); ok {
					a.avail = append(a.avail, av)
					if heal >= 0 {
						a.heal = append(a.heal, heal)
					}
				}
			}
			switch {
			case c.Seeds == 0:
				c.Measured = "not run"
			case c.Violations > 0:
				c.Measured = Violates
				c.MedianTTFV = median(ttfv)
			case c.Unknown > 0 || c.Errors > 0 || c.decided() == 0:
				c.Measured = "undecided"
			default:
				c.Measured = Safe
			}
			if c.Predicted != "" && c.Predicted != NotApplicable && (c.Measured == Violates || c.Measured == Safe) {
				agree := c.Measured == c.Predicted || (c.Predicted == Mitigated && c.Measured == Safe)
				c.Agrees = &agree
			}
			t.Cells = append(t.Cells, c)
		}
	}
	for _, l := range ls {
		a := costs[l.Name]
		t.Costs = append(t.Costs, Cost{Lock: l.Name, AcquireP50: median(a.p50), AcquireP99: median(a.p99),
			OpsPerSec: median(a.rate), Available: median(a.avail), HealToGrant: median(a.heal)})
	}
	t.Conclusion, t.Servers = t.Answer(), t.ServersAnswer()
	return t
}

// faultApplied reports whether any fault of the run started (a plan's step, a triggered one, a schedule's).
func faultApplied(h *history.History) bool {
	if h == nil {
		return true // no history to tell: the run's verdict stands
	}
	for _, w := range h.Windows() {
		if w.Kind != "" {
			return true
		}
	}
	return false
}

// judge is a run's verdict for the table: the run's own, or, for a lock judged by some checkers only, the
// worst of those; and the time of the first violation that counts.
func judge(o suite.Outcome, r *report.Results, only []string) (string, int64) {
	if r == nil {
		return o.Verdict, o.FirstNs
	}
	v := checker.Valid
	at := int64(-1)
	for _, c := range r.Checkers {
		if len(only) > 0 && !slices.Contains(only, c.Checker) {
			continue
		}
		v = checker.Worst(v, c.Valid)
		if c.Valid == checker.Invalid && (at < 0 || c.At < at) {
			at = c.At
		}
	}
	if len(only) == 0 { // the run's own verdict, and its first violation as every output gives it (the story's)
		v, at = r.Valid, r.FirstViolation()
	}
	return v.String(), max(at, 0)
}

// Complete reports whether every cell that ran was decided.
func (t *Table) Complete() bool {
	for _, c := range t.Cells {
		if c.Measured == "undecided" || c.Measured == "not run" {
			return false
		}
	}
	return true
}

func readResults(dir string) *report.Results {
	r, _ := report.ReadResults(dir) // a run that wrote none (it failed) has no results: nil
	return r
}

// statsOf reads the stats checker's acquire latency and rate.
func statsOf(r *report.Results) (p50, p99, rate float64, ok bool) {
	for _, c := range r.Checkers {
		if c.Checker != "stats" {
			continue
		}
		b, _ := json.Marshal(c.Details)
		var d struct {
			Rate float64                    `json:"ops_per_sec"`
			ByF  map[string]checker.OpStats `json:"by_f"`
		}
		if json.Unmarshal(b, &d) != nil {
			return 0, 0, 0, false
		}
		for _, f := range []string{"tryLock", "lock", "acquire"} {
			if s, ok := d.ByF[f]; ok {
				return s.P50ms, s.P99ms, d.Rate, true
			}
		}
		return 0, 0, d.Rate, true
	}
	return 0, 0, 0, false
}

// availability is the share of application acquires invoked inside a fault window that were granted, and
// the median time from each window's end to the next grant (-1 when no window ended before a grant).
func availability(h *history.History) (float64, float64, bool) {
	if h == nil {
		return 0, 0, false
	}
	ws := h.Windows()
	var in, ok int
	var grants []int64
	for _, o := range h.Ops {
		if o.Invoke.Src != "" || o.Invoke.F != "tryLock" {
			continue
		}
		granted := o.Outcome() == history.Ok // a refused tryLock is a fail
		if granted {
			grants = append(grants, o.Complete.Time)
		}
		for _, w := range ws {
			if o.Invoke.Time >= w.Start && o.Invoke.Time < w.End {
				in++
				if granted {
					ok++
				}
				break
			}
		}
	}
	if len(ws) == 0 || in == 0 {
		return 0, 0, false
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i] < grants[j] })
	var heals []float64
	for _, w := range ws {
		if i, _ := slices.BinarySearch(grants, w.End); i < len(grants) {
			heals = append(heals, float64(grants[i]-w.End)/1e9)
		}
	}
	heal := -1.0
	if len(heals) > 0 {
		heal = median(heals)
	}
	return float64(ok) / float64(in), heal, true
}

// workloadStart is when the workload and the fault plan began: the meta record, written once every client
// answered. History times count from before the topology and the clients started, and a JVM worker takes
// 15-25 s to start here, so times to first violation are taken from this moment to compare rows alike.

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// cellText is a cell in words: "3/5 at 2.1s" or "0/5", with the prediction and a mark where they disagree.
func (c Cell) text() string {
	var m string
	switch c.Measured {
	case Violates:
		m = fmt.Sprintf("%d/%d at %.1fs", c.Violations, c.Seeds, c.MedianTTFV)
	case Safe:
		m = fmt.Sprintf("0/%d", c.Seeds)
	case "undecided":
		m = fmt.Sprintf("%d/%d, %d unknown", c.Violations, c.Seeds, c.Unknown+c.Errors)
	default:
		return c.Measured
	}
	if c.Missed > 0 {
		m += fmt.Sprintf(", %d missed", c.Missed)
	}
	if c.Predicted != "" {
		m += " (ref: " + c.Predicted + ")"
	}
	if c.Agrees != nil && !*c.Agrees {
		m += " ≠"
	}
	return m
}

func num(f float64, format string) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf(format, f)
}

// setup says the settings every cell ran with and, per row, its topology and what it is.
func (t *Table) setup(w io.Writer, md bool) {
	set := "each row's default lease (2 s)"
	if a := t.Settings.Shown(); len(a) > 0 {
		set = strings.Join(a, " ") + " (a row takes the lease or the watchdog its lock is timed by)"
	}
	fmt.Fprintf(w, "Settings passed to every cell: %s; %d seed(s) per cell.\n\n", set, t.Seeds)
	if md {
		fmt.Fprint(w, "| lock | topology | server | what |\n| --- | --- | --- | --- |\n")
		for _, l := range t.Locks {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", l.Name, l.Topology(), serverName(l.Server()), l.What)
		}
		fmt.Fprintln(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tTOPOLOGY\tSERVER\tWHAT")
	for _, l := range t.Locks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Name, l.Topology(), serverName(l.Server()), l.What)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// Text prints the terminal table.
func (t *Table) Text(w io.Writer) {
	t.setup(w, false)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"LOCK"}
	for _, s := range t.Scenarios {
		head = append(head, s.ID+" "+s.Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range t.rows() {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tACQUIRE P50\tP99\tOPS/S\tGRANTED DURING FAULTS\tHEAL TO GRANT")
	for _, c := range t.Costs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Lock, num(c.AcquireP50, "%.1fms"), num(c.AcquireP99, "%.1fms"),
			num(c.OpsPerSec, "%.0f"), num(c.Available*100, "%.0f%%"), num(c.HealToGrant, "%.2fs"))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncells: violations/seeds, median time to first violation after the workload began (start-up not counted); (ref: ...) the reference's prediction, ≠ where the measurement disagrees\n")
	var ids []string
	for id := range t.Unmeasured {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
	for _, id := range ids {
		fmt.Fprintf(w, "%s not measured: %s\n", id, t.Unmeasured[id])
	}
	fmt.Fprintf(w, "\n%s\n", t.Conclusion)
	if t.Servers != "" {
		fmt.Fprintf(w, "\n%s\n", t.Servers)
	}
}

func (t *Table) rows() [][]string {
	var out [][]string
	for _, l := range t.Locks {
		row := []string{l.Name}
		for _, s := range t.Scenarios {
			for _, c := range t.Cells {
				if c.Lock == l.Name && c.Scenario == s.ID {
					row = append(row, c.text())
				}
			}
		}
		out = append(out, row)
	}
	return out
}

// Markdown writes the table for a design document.
func (t *Table) Markdown(w io.Writer, when time.Time) {
	fmt.Fprintf(w, "# lockcheck compare, %d seed(s), %s\n\n", t.Seeds, when.Format("2006-01-02"))
	t.setup(w, true)
	fmt.Fprintf(w, "Cells: violations/seeds, and the median time to first violation after the workload began (start-up not counted).\n\n")
	head := []string{"lock"}
	for _, s := range t.Scenarios {
		head = append(head, s.ID+" "+s.Name)
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, row := range t.rows() {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintf(w, "\n| lock | acquire p50 | p99 | ops/s | granted during faults | heal to grant |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, c := range t.Costs {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", c.Lock, num(c.AcquireP50, "%.1f ms"), num(c.AcquireP99, "%.1f ms"),
			num(c.OpsPerSec, "%.0f"), num(c.Available*100, "%.0f%%"), num(c.HealToGrant, "%.2f s"))
	}
	fmt.Fprintln(w, "\nScenarios as lockcheck runs them:")
	for _, s := range t.Scenarios {
		fmt.Fprintf(w, "- %s, %s: %s (`%s`)", s.ID, s.Name, s.Why, strings.Join(s.Args, " "))
		if c, ok := t.firstRan(s.ID); ok {
			fmt.Fprintf(w, "; what ran in %s's cell: %s", c.Lock, c.Ran)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n%s\n", t.Conclusion)
	if t.Servers != "" {
		fmt.Fprintf(w, "\n%s\n", t.Servers)
	}
}

// JSON writes compare.json (NaN figures as null).
func (t *Table) JSON(path string) error {
	clean := *t
	clean.Costs = nil
	for _, c := range t.Costs {
		for _, f := range []*float64{&c.AcquireP50, &c.AcquireP99, &c.OpsPerSec, &c.Available, &c.HealToGrant} {
			if math.IsNaN(*f) {
				*f = -1
			}
		}
		clean.Costs = append(clean.Costs, c)
	}
	for i := range clean.Cells {
		if math.IsNaN(clean.Cells[i].MedianTTFV) {
			clean.Cells[i].MedianTTFV = 0
		}
	}
	b, err := json.MarshalIndent(clean, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// firstRan is the first row's cell of a scenario that says what ran (one run's own description).
func (t *Table) firstRan(id string) (Cell, bool) {
	for _, c := range t.Cells {
		if c.Scenario == id && c.Ran != "" {
			return c, true
		}
	}
	return Cell{}, false
}
