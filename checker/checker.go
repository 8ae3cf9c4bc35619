// Package checker decides whether a history is safe: porcupine models for the lock state, interval checkers
// for what the locks promise the application, and statistics. Each verdict is valid, invalid or unknown.
package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Validity is a tri-state verdict.
type Validity int

// Verdicts, ordered so that the worst wins when combined.
const (
	Valid Validity = iota
	Unknown
	Invalid
)

func (v Validity) String() string {
	return [...]string{"valid", "unknown", "invalid"}[v]
}

// MarshalJSON writes true, false or "unknown", as Jepsen's results do.
func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	}
	return []byte(`"unknown"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = Valid
	case "false":
		*v = Invalid
	case `"unknown"`:
		*v = Unknown
	default:
		return fmt.Errorf("validity %s: want true, false or \"unknown\"", b)
	}
	return nil
}

// ExitCode is Jepsen's: 0 valid, 1 invalid, 2 unknown.
func (v Validity) ExitCode() int { return [...]int{0, 2, 1}[v] }

// Worst combines verdicts: any invalid is invalid, else any unknown is unknown.
func Worst(vs ...Validity) Validity {
	w := Valid
	for _, v := range vs {
		w = max(w, v)
	}
	return w
}

// Result is what one checker said.
type Result struct {
	Checker string   `json:"checker"`
	Valid   Validity `json:"valid"`
	// Summary is one line a person reads first; Violation spells out the first violation, if any.
	Summary   string `json:"summary"`
	Violation string `json:"violation,omitempty"`
	// At and End span the first violation on the run clock, so the timeline can mark it.
	At      int64 `json:"violation_at_ns,omitempty"`
	End     int64 `json:"violation_end_ns,omitempty"`
	Details any   `json:"details,omitempty"`
	// Levels counts, by what porcupine read (LevelWire, LevelClient or LevelAPI: apilevel.go), the keys
	// it judged so.
	Levels map[string]int `json:"levels,omitempty"`

	// Stall names what [At, End] is when it is a span with no progress (a waiter left on a free lock): the
	// summary page draws it as a band.
	Stall string `json:"stall,omitempty"`
}

// Checker judges one history.
type Checker interface {
	Name() string
	Check(ctx context.Context, h *history.History) Result
}

// Run runs every checker and returns their results and the combined verdict.
func Run(ctx context.Context, h *history.History, cs ...Checker) ([]Result, Validity) {
	var out []Result
	var vs []Validity
	for _, c := range cs {
		r := checkOne(ctx, h, c)
		r.Checker = c.Name()
		out = append(out, r)
		vs = append(vs, r.Valid)
	}
	return out, Worst(vs...)
}

// checkOne runs one checker; a checker that panics gives unknown for its own row, with the panic in its
// summary, and the other checkers still run: a bug in one checker must neither crash the check nor pass
// for a verdict.
func checkOne(ctx context.Context, h *history.History, c Checker) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Valid: Unknown, Summary: fmt.Sprintf("the checker failed (a bug in lockcheck, please report it): %v", p)}
		}
	}()
	return c.Check(ctx, h)
}

// Secs formats a run-clock time (ns) as seconds for people.
func Secs(t int64) string { return fmt.Sprintf("%.3fs", time.Duration(t).Seconds()) }

// Count is n things in words, singular for one: "1 critical section", "3 critical sections".
func Count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

var _ json.Marshaler = Valid
