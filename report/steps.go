package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// StepOutcome is what one step of a schedule run (--schedule) did, from its records: a valid run shows the
// step that mattered happened, an invalid one which step set it up.
type StepOutcome struct {
	Step    string `json:"step"`
	Client  string `json:"client,omitempty"` // client/thread, or the fault's targets
	Op      string `json:"op"`               // acquire, re-enter, release, or the fault
	Outcome string `json:"outcome"`          // granted, refused, released, not held, unknown; or applied
	At      int64  `json:"at_ns"`            // the call (a fault's start)
	Done    int64  `json:"done_ns"`          // its answer (a fault's end); -1: none
	LeaseMs int64  `json:"lease_ms,omitempty"`
	Text    string `json:"text"` // "other: refused after 3.000s", "reenter: granted at 0.200s, lease 500ms"
}

// StepsOf lists every step of a schedule run that left a record, in the order they began: its lock calls
// (the history's own, not the wire's) and its faults.
func StepsOf(h *history.History) []StepOutcome {
	var out []StepOutcome
	for _, o := range h.Ops {
		c, step := o.Invoke, h.StepOf(o)
		if step == "" || c.Src != "" {
			continue
		}
		s := StepOutcome{Step: step, Client: c.ThreadName(), Op: c.F, At: c.Time, Done: -1, LeaseMs: c.Args["lease_ms"]}
		if o.Complete != nil {
			s.Done = o.Complete.Time
		}
		s.Outcome, s.Text = stepText(o, s)
		out = append(out, s)
	}
	for _, w := range h.Windows() {
		if w.Step == "" {
			continue
		}
		s := StepOutcome{Step: w.Step, Client: strings.Join(w.Targets, " "), Op: w.Kind, Outcome: "applied", At: w.Start, Done: w.End}
		s.Text = fmt.Sprintf("%s: %s from %s to %s", w.Step, StoryFault{Fault: w.Kind, Targets: w.Targets}.name(),
			checker.Secs(w.Start), checker.Secs(w.End))
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// stepText is a lock step's outcome and its line.
func stepText(o history.Operation, s StepOutcome) (outcome, text string) {
	c := o.Invoke
	what := c.F
	switch {
	case c.F == "tryLock" && c.Args["nested"] == 1:
		what = "re-entry"
	case c.F == "tryLock":
		what = "acquire"
	case c.F == "unlock":
		what = "release"
	}
	head := fmt.Sprintf("%s: %s's %s", s.Step, s.Client, what)
	switch o.Outcome() {
	case history.Ok:
		if c.F != "tryLock" {
			return "released", fmt.Sprintf("%s answered ok at %s", head, checker.Secs(s.Done))
		}
		t := fmt.Sprintf("%s granted at %s", head, checker.Secs(s.Done))
		if s.LeaseMs > 0 {
			t += ", lease " + (time.Duration(s.LeaseMs) * time.Millisecond).String()
		}
		return "granted", t
	case history.Fail:
		if c.F != "tryLock" {
			return "not held", fmt.Sprintf("%s answered not held at %s", head, checker.Secs(s.Done))
		}
		return "refused", fmt.Sprintf("%s refused after %s", head, checker.Secs(s.Done-s.At))
	}
	return "unknown", fmt.Sprintf("%s called at %s got no answer that says whether it took effect", head, checker.Secs(s.At))
}

// StepLines are the steps' lines, for the verdict table, the summary page and the bug report.
func (r *Results) StepLines() []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Text)
	}
	return out
}
