// Package report writes what a run found: results.json for CI, an HTML timeline for people, a verdict table
// for the terminal, and the live status line while it runs.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/safefile"
)

// Results is results.json.
type Results struct {
	Valid       checker.Validity  `json:"valid"`
	Lock        string            `json:"lock"`
	Topology    string            `json:"topology"`
	Nemesis     []string          `json:"nemesis"`
	Seed        int64             `json:"seed"`
	Interrupted bool              `json:"interrupted,omitempty"`
	Truncated   bool              `json:"truncated_history,omitempty"`
	Notes       []string          `json:"notes,omitempty"`
	Checkers    []checker.Result  `json:"checkers"`
	Faults      []history.Window  `json:"faults"`
	Coverage    []FaultCoverage   `json:"coverage,omitempty"` // what each fault window touched (coverage.go)
	MissedLock  bool              `json:"missed_lock,omitempty"`
	Verdict     string            `json:"verdict,omitempty"` // the verdict in words, when it says more than valid
	Options     json.RawMessage   `json:"options,omitempty"`
	Plan        json.RawMessage   `json:"plan,omitempty"`
	Versions    map[string]string `json:"versions,omitempty"`
	StartupMs   int64             `json:"startup_ms,omitempty"`
	// ReadyMs is the whole start-up (deployment and clients), before the run's clock starts with the
	// workload. WorkloadNs is when the workload began on the clock: 0, except in histories recorded before
	// the clock started there. Every time in every output is on that clock.
	ReadyMs    int64             `json:"ready_ms,omitempty"`
	WorkloadNs int64             `json:"workload_start_ns,omitempty"`
	Story      *Story            `json:"story,omitempty"` // the run in one or two sentences (story.go)
	Known      *Known            `json:"known,omitempty"` // an invalid run against the catalog (known.go)
	Steps      []StepOutcome     `json:"steps,omitempty"` // a schedule run's steps, each with its outcome (steps.go)
	Ran        string            `json:"ran,omitempty"`   // what ran, in words (WhatRan): every output says this one
	Files      map[string]string `json:"files"`

	// ModelCoverage is the run's transitions of its lock's model, and Breaking the one at its first
	// violation (package coverage, docs/coverage.md).
	ModelCoverage *coverage.Map        `json:"model_coverage,omitempty"`
	Breaking      *coverage.Transition `json:"breaking_transition,omitempty"`
}

// ClockText says once where the run's clock starts, and start-up as its own figure.
func (r *Results) ClockText() string {
	if r.WorkloadNs > 0 { // an older history: its clock started before the deployment
		return fmt.Sprintf("times are on the run's clock, which started before the deployment; the workload began at %s",
			checker.Secs(r.WorkloadNs))
	}
	t := "times are seconds since the workload began"
	if r.ReadyMs > 0 {
		t += fmt.Sprintf("; start-up (deployment and clients) took %s before it", checker.Secs(r.ReadyMs*int64(time.Millisecond)))
	}
	return t
}

// FirstViolation is the run's first violation on the run clock (-1: none): when the finding the story
// leads with began, else the earliest invalid checker's. Every output that gives a time to the first
// violation (the verdict table, suite and compare cells, repro lines) takes it from here, so that it is the
// moment the story tells: porcupine dates an illegal command from its call, which may be long before the
// overlap that made it illegal.
func (r *Results) FirstViolation() int64 {
	if r.Story != nil && r.Story.Kind != NoViolation {
		return r.Story.At
	}
	at := int64(-1)
	for _, c := range r.Checkers {
		if c.Valid == checker.Invalid && c.Violation != "" && (at < 0 || c.At < at) {
			at = c.At
		}
	}
	return at
}

// StoryText is the run's story, or "" for results written before stories.
func (r *Results) StoryText() string {
	if r.Story == nil {
		return ""
	}
	return r.Story.Text
}

// ReadResults reads dir's results.json (a regular file, bounded: internal/safefile).
func ReadResults(dir string) (*Results, error) {
	b, err := safefile.Read(filepath.Join(dir, "results.json"), safefile.ResultsMax)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("results.json: %v", err)
	}
	return &r, nil
}

// WriteJSON writes results.json into dir.
func (r *Results) WriteJSON(dir string) error { return r.WriteFile(filepath.Join(dir, "results.json")) }

// Table prints the verdict table.
func (r *Results) Table(w io.Writer) {
	on := r.Topology
	if s, _, _ := strings.Cut(r.Versions["server"], " ("); s != "" { // the server the nodes ran, where lockcheck started them
		on += ", server " + s
	}
	fmt.Fprintf(w, "\nlockcheck: lock %s on %s, nemesis %s, seed %d\n", r.Lock, on, nemesisText(r.Nemesis), r.Seed)
	if t := r.StoryText(); t != "" {
		fmt.Fprintf(w, "%s\n", t)
	}
	for _, l := range r.KnownLines() {
		fmt.Fprintf(w, "%s\n", l)
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(w, "steps:\n")
		for _, l := range r.StepLines() {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "(%s)\n", r.ClockText())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECKER\tVERDICT\tSUMMARY")
	for _, c := range r.Checkers {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Checker, c.Valid, c.Summary)
	}
	tw.Flush()
	healed := 0
	for _, f := range r.Faults {
		if f.Healed {
			healed++
		}
	}
	if len(r.Faults) > 0 {
		fmt.Fprintf(w, "faults: %d applied, %d healed in the plan (a final heal follows every run)\n", len(r.Faults), healed)
	}
	for _, c := range r.Coverage {
		fmt.Fprintf(w, "  %s\n", c.Text())
	}
	if r.ModelCoverage != nil {
		fmt.Fprintf(w, "model coverage: %d distinct transitions of the lock's model\n", r.ModelCoverage.Len())
	}
	if r.Breaking != nil {
		fmt.Fprintf(w, "the transition at the first violation: %s\n", r.Breaking)
	}
	for _, c := range r.Checkers {
		if c.Violation != "" {
			fmt.Fprintf(w, "%s, first violation: %s\n", c.Checker, c.Violation)
		}
	}
	if first := r.FirstViolation(); first >= 0 {
		line := fmt.Sprintf("time to first violation: %s after the workload began (start-up not counted)", checker.Secs(first-r.WorkloadNs))
		switch {
		case len(r.Faults) == 0:
		case first >= r.Faults[0].Start:
			line += fmt.Sprintf(", %s after the first fault began", checker.Secs(first-r.Faults[0].Start))
		default:
			line += ", before any fault"
		}
		fmt.Fprintln(w, line)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	verdict := strings.ToUpper(r.Valid.String())
	switch {
	case r.MissedLock:
		verdict = strings.ToUpper(MissedLock[:5]) + MissedLock[5:]
	case r.Verdict != "":
		verdict += ": " + r.Verdict
	}
	fmt.Fprintf(w, "VERDICT: %s", verdict)
	if dir := r.Files["dir"]; dir != "" {
		fmt.Fprintf(w, "   (details: %s)", dir)
	}
	fmt.Fprintln(w)
}

func nemesisText(n []string) string {
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ",")
}

// Annotations turns fault windows, each checker's first violation and the critical sections into
// timeline annotations; sections that overlap another owner's are drawn red.
func Annotations(h *history.History, results []checker.Result) []checker.Annotation {
	var out []checker.Annotation
	for _, r := range results {
		if r.Violation != "" {
			out = append(out, checker.Annotation{Tag: "violation: " + r.Checker, Start: r.At, End: r.End, Color: "#ff5c5c",
				Description: r.Violation})
		}
	}
	for _, w := range h.Windows() {
		out = append(out, checker.Annotation{Tag: "nemesis", Start: w.Start, End: w.End, Color: "#f5c6c6",
			Description: fmt.Sprintf("%s %s", w.Kind, strings.Join(w.Targets, " "))})
	}
	bad := map[[2]int64]bool{}
	for _, o := range checker.Overlaps(h.Sections) {
		bad[[2]int64{o.HeldFrom, o.HeldTo}] = true
		bad[[2]int64{o.Entered, o.IntruderOut}] = true
	}
	for _, s := range h.Sections {
		color, desc := "#d5f0d5", "critical section "+s.Key
		if bad[[2]int64{s.Enter, s.Exit}] {
			color, desc = "#ff8a8a", "OVERLAPPING critical section "+s.Key
		}
		if s.Rejected {
			color, desc = "#ffd27f", fmt.Sprintf("stale token %d rejected on %s", s.Token, s.Key)
		}
		out = append(out, checker.Annotation{Client: s.Client, Start: s.Enter, End: s.Exit, Color: color, Description: desc})
	}
	return out
}

// Status prints one live line: elapsed time, ops/s, outcomes, overlaps seen and the fault in force. On a
// terminal it rewrites one line every second; elsewhere it prints a line every 5 seconds.
type Status struct {
	w    io.Writer
	rec  *history.Recorder
	tty  bool
	stop chan struct{}
	done chan struct{}
}

// StartStatus begins printing to w (usually stderr).
func StartStatus(w io.Writer, rec *history.Recorder) *Status {
	s := &Status{w: w, rec: rec, stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			s.tty = true
		}
	}
	go s.loop()
	return s
}

func (s *Status) loop() {
	defer close(s.done)
	every := 5 * time.Second
	if s.tty {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last history.Counts
	var err error
	lastAt := time.Now()
	for {
		select {
		case <-s.stop:
			if s.tty {
				fmt.Fprint(s.w, "\r\033[K")
			}
			return
		case now := <-t.C:
			c := s.rec.Counts()
			done := (c.Ok + c.Fail + c.Unknown) - (last.Ok + last.Fail + last.Unknown)
			rate := float64(done) / now.Sub(lastAt).Seconds()
			last, lastAt = c, now
			fault := s.rec.CurrentFault()
			if fault == "" {
				fault = "-"
			}
			line := statusLine(time.Duration(s.rec.Clock.Now()), rate, c, fault)
			if s.tty {
				_, err = fmt.Fprint(s.w, "\r\033[K"+line)
			} else {
				_, err = fmt.Fprintln(s.w, line)
			}
			if err != nil { // stderr closed (| head): the status line is a courtesy, the run goes on
				return
			}
		}
	}
}

// statusLine is one status line at t on the run's clock (the clock of the fault list and every verdict),
// with the clients' own operations counted as the final stats count them.
func statusLine(t time.Duration, rate float64, c history.Counts, fault string) string {
	return fmt.Sprintf("%6.1fs  %6.0f ops/s  operations ok %d  fail %d  unknown %d  sections %d  overlaps %d  fault %s",
		t.Seconds(), rate, c.Ok, c.Fail, c.Unknown, c.Sections, c.Overlaps, fault)
}

// Stop ends the status line.
func (s *Status) Stop() {
	close(s.stop)
	<-s.done
}
