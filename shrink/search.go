package shrink

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Trial is a command run on some seeds.
type Trial struct {
	Seeds  []int64
	Runs   int     // runs that gave a verdict (an early stop leaves the others out)
	Caught []int64 // the seeds that failed the same way
	// CaughtDirs are their run directories, in Caught's order.
	CaughtDirs []string
	Firsts     []time.Duration // their times to the signature's first violation
	Other      string          // what the first run that was not caught did instead
	// NoVerdict counts the runs that ended without a verdict (they never started, or failed before the
	// check), Error the first one's error line.
	NoVerdict int
	Error     string
	Took      time.Duration
}

// NeverStarted says that every run of the trial ended without a verdict: it says nothing of the command
// but why its runs do not start.
func (t Trial) NeverStarted() bool { return t.Runs > 0 && t.NoVerdict == t.Runs }

// Median is the median time to the first violation over the caught runs.
func (t Trial) Median() time.Duration {
	if len(t.Firsts) == 0 {
		return 0
	}
	s := slices.Clone(t.Firsts)
	slices.Sort(s)
	return s[len(s)/2]
}

// Oracle runs a command on the seeds, its runs under the name given, and says which failed the same way.
// It stops early when the ctx ends.
type Oracle func(ctx context.Context, c Cmd, seeds []int64, name string) Trial

// Outcome of a step.
const (
	Accepted    = "accepted"
	Rejected    = "rejected"
	Interrupted = "interrupted"
)

// Step is one candidate tried.
type Step struct {
	N        int      `json:"n"`
	Reducer  string   `json:"reducer"`
	Change   string   `json:"change"` // --time 30s -> 15s
	Args     []string `json:"args"`
	Seeds    []int64  `json:"seeds"`
	Runs     int      `json:"runs"` // runs judged: a step stops at its first run not caught
	Caught   int      `json:"caught"`
	MedianNs int64    `json:"median_first_violation_ns,omitempty"`
	Other    string   `json:"other,omitempty"`
	// NoVerdict runs ended without a verdict (they never started, or failed before the check).
	NoVerdict int     `json:"no_verdict,omitempty"`
	Seconds   float64 `json:"seconds"`
	Outcome   string  `json:"outcome"`
}

// Line is the step as the progress line and the steps table print it.
func (s Step) Line() string {
	what := fmt.Sprintf("caught %d/%d", s.Caught, s.Runs)
	if s.Caught > 0 {
		what += fmt.Sprintf(", median %.1fs", time.Duration(s.MedianNs).Seconds())
	}
	if s.Other != "" {
		what += "; otherwise " + s.Other
	}
	return fmt.Sprintf("%3d  %-40s %-11s %s (%s)", s.N, s.Change, s.Outcome, what, time.Duration(s.Seconds*float64(time.Second)).Round(time.Second))
}

// Search is one shrink: its settings and what it found.
type Search struct {
	Confirm  int // seeds each candidate must all fail on to be accepted
	Reducers []Reducer
	Oracle   Oracle
	Progress io.Writer
	// Reserve is how many runs of the best command, one after another, the time left must still hold
	// after the next candidate (the final measurement): a candidate that cannot finish in time is not begun.
	Reserve int
	Seed    int64 // the first seed; every run gets the next one

	Best    Cmd
	BestRun time.Duration // how long the best command's last trial took
	Steps   []Step
	Stopped string // budget, interrupted or not started; "" when no reducer found anything more
	// Error is why no run started, when Stopped is NotStarted.
	Error string
}

// NotStarted is a search stopped because its first steps' runs never started: no candidate can be
// judged, and the rest of the budget would only say so again (issue 36, item 12).
const NotStarted = "runs never started"

// notStartedSteps is how many steps in a row, from the first, must have had no run start to stop.
const notStartedSteps = 2

// NextSeeds are n fresh seeds: no two runs of a shrink share one, so an accepted step is not one seed's luck.
func (s *Search) NextSeeds(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		s.Seed++
		out[i] = s.Seed
	}
	return out
}

// Run shrinks from s.Best: each reducer in turn, again while it is accepted, in passes until a pass
// accepts nothing, the budget (ctx's deadline) would be passed, or ctx ends. s.Best is the smallest
// command accepted so far whenever it returns.
func (s *Search) Run(ctx context.Context) {
	tried := map[string]bool{strings.Join(s.Best.Args(), " "): true}
	for more := true; more; {
		more = false
		for _, r := range s.Reducers {
			for s.reduce(ctx, r, tried) {
				more = true
			}
			if s.Stopped != "" {
				return
			}
		}
	}
}

// reduce tries r's candidates from the best command; the first accepted becomes the best.
func (s *Search) reduce(ctx context.Context, r Reducer, tried map[string]bool) bool {
	for _, v := range r.Next(s.Best) {
		c := s.Best.With(r.Flag, v)
		if r.Then != nil {
			c = r.Then(c)
		}
		key := strings.Join(c.Args(), " ")
		if tried[key] {
			continue
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < time.Duration(1+s.Reserve)*s.BestRun {
			s.Stopped = "budget"
			return false
		}
		tried[key] = true
		st := Step{N: len(s.Steps) + 1, Reducer: r.Name, Args: c.Args(),
			Change: fmt.Sprintf("--%s %s -> %s", r.Flag, orNone(s.Best.Get(r.Flag)), v)}
		t := s.Oracle(ctx, c, s.NextSeeds(s.Confirm), fmt.Sprintf("step-%03d", st.N))
		st.Seeds, st.Runs, st.Caught, st.MedianNs, st.Other, st.Seconds = t.Seeds, t.Runs, len(t.Caught), int64(t.Median()), t.Other, t.Took.Seconds()
		st.NoVerdict = t.NoVerdict
		switch {
		case ctx.Err() != nil:
			st.Outcome = Interrupted
			s.Stopped = "interrupted"
			if context.Cause(ctx) == context.DeadlineExceeded {
				s.Stopped = "budget"
			}
		case len(t.Caught) == s.Confirm:
			st.Outcome = Accepted
		default:
			st.Outcome = Rejected
		}
		s.Steps = append(s.Steps, st)
		if s.Progress != nil {
			fmt.Fprintln(s.Progress, st.Line())
		}
		if st.Outcome == Interrupted {
			return false
		}
		if t.NeverStarted() && len(s.Steps) == notStartedSteps && s.noneStarted() {
			s.Stopped, s.Error = NotStarted, t.Error
			return false
		}
		if st.Outcome == Accepted {
			s.Best, s.BestRun = c, t.Took
			return true
		}
	}
	return false
}

// noneStarted says that no step so far had a run that gave a verdict.
func (s *Search) noneStarted() bool {
	for _, st := range s.Steps {
		if st.Runs > st.NoVerdict {
			return false
		}
	}
	return true
}

func orNone(v string) string {
	if v == "" {
		return `""`
	}
	return v
}
