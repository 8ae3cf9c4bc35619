package shrink

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

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
	Repeats  int     `json:"repeats"`
	Caught   int     `json:"caught"`
	MedianNs int64   `json:"median_first_violation_ns,omitempty"`
	Steps    []Step  `json:"steps"`
	Stopped  string  `json:"stopped,omitempty"` // budget or interrupted: the search ended early
	Seconds  float64 `json:"seconds"`
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
