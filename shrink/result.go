package shrink

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/report"
)

// Result is shrink.json: what was shrunk, to what, how often the result fails, and every step tried.
type Result struct {
	Run       string    `json:"run"` // the original run's directory
	Signature Signature `json:"signature"`
	Original  string    `json:"original"` // the original command, with its seed
	Minimal   string    `json:"minimal"`  // the smallest command found, with a seed it failed on
	Args      []string  `json:"args"`     // its arguments, without the seed
	Confirm   int       `json:"confirm"`  // seeds each step was confirmed on
	// Repeats runs of the minimal command on fresh seeds, Caught of them failing the same way, with the
	// median time to the first violation over those (0 repeats: interrupted before the measurement).
	Repeats  int    `json:"repeats"`
	Caught   int    `json:"caught"`
	MedianNs int64  `json:"median_first_violation_ns,omitempty"`
	Steps    []Step `json:"steps"`
	// Schedule is the caught run's first violation as a schedule, and how often it fails so (nil: the
	// final measurement caught nothing, or did not run).
	Schedule *ScheduleResult `json:"schedule,omitempty"`
	Stopped  string          `json:"stopped,omitempty"` // budget or interrupted: the search ended early
	Seconds  float64         `json:"seconds"`
}

// Write writes shrink.json and steps.txt (the table of steps, one line each) into dir.
func (r *Result) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := report.WriteAtomic(filepath.Join(dir, "shrink.json"), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return err
	}
	return report.WriteAtomic(filepath.Join(dir, "steps.txt"), r.Table)
}

// Table writes the steps, one line each, under a header.
func (r *Result) Table(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%3s  %-40s %-11s %s\n", "#", "change", "outcome", "result (time)"); err != nil {
		return err
	}
	for _, s := range r.Steps {
		if _, err := fmt.Fprintln(w, s.Line()); err != nil {
			return err
		}
	}
	return nil
}

// ScheduleResult is a shrink's result as a schedule (AsSchedule): its file, the command that plays it, and
// how many of its runs failed the same way.
type ScheduleResult struct {
	Run     string `json:"run"`            // the caught run it was read from
	File    string `json:"file,omitempty"` // schedule.yaml; empty when none could be made (Note says why)
	Command string `json:"command,omitempty"`
	Runs    int    `json:"runs"`
	Caught  int    `json:"caught"`
	Note    string `json:"note,omitempty"`
}

// Print says the schedule, its file and command, and how often it failed by sig; nothing when r is nil.
func (r *ScheduleResult) Print(w io.Writer, sig Signature) {
	switch {
	case r == nil:
		return
	case r.File == "":
		fmt.Fprintf(w, "no schedule of the caught run %s: %s\n", r.Run, r.Note)
		return
	case r.Caught == 0: // it showed nothing: one line, the file kept, before the command that matters
		fmt.Fprintf(w, "as a schedule (%s), the caught run's steps did not reproduce it: 0 of %d runs failed", r.File, r.Runs)
		if r.Note != "" {
			fmt.Fprintf(w, " (%s)", r.Note)
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "as a schedule, the steps that led to the first violation of %s at their times (%s):\n", r.Run, r.File)
	if b, err := os.ReadFile(r.File); err == nil {
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintf(w, "it fails by %s in %d of %d runs", sig, r.Caught, r.Runs)
	if r.Note != "" {
		fmt.Fprintf(w, " (not caught: %s)", r.Note)
	}
	fmt.Fprintf(w, ":\n%s\n\n", r.Command)
}
