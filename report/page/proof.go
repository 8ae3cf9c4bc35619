package page

import (
	"strconv"

	"github.com/lockcheck/lockcheck/history"
)

// proof is the proof excerpt's own small timeline (checker.Proof): its operations, a row per client
// thread (the page shades the run's fault windows on it as on every plot).
type proof struct {
	Checker string    `json:"checker"`
	Rows    []string  `json:"rows"`
	Ops     []proofOp `json:"ops"`
	Total   int       `json:"total"` // operations in the whole history
}

type proofOp struct {
	Row   int     `json:"r"`
	Start float64 `json:"s"`
	End   float64 `json:"e"`
	Text  string  `json:"text"`
	Type  string  `json:"type"` // ok, fail, unknown (never answered: drawn to the excerpt's end), or cs: a critical section
}

func proofOf(x *history.History, by string, total int) *proof {
	if x == nil {
		return nil
	}
	p := &proof{Checker: by, Total: total}
	end := x.End()
	rows := map[string]int{}
	for _, o := range x.Ops {
		label := threadLabel(o.Invoke.Client, o.Invoke.Thread)
		r, ok := rows[label]
		if !ok {
			r = len(p.Rows)
			rows[label] = r
			p.Rows = append(p.Rows, label)
		}
		op := proofOp{Row: r, Start: secs(o.Invoke.Time), End: secs(end), Type: string(o.Outcome()),
			Text: o.Invoke.F + " → " + string(o.Outcome())}
		if c := o.Complete; c != nil {
			op.End = secs(c.Time)
			if c.Value != nil {
				op.Text += " " + strconv.FormatInt(*c.Value, 10)
			}
		}
		p.Ops = append(p.Ops, op)
	}
	for _, c := range x.Sections {
		label := threadLabel(c.Client, c.Thread)
		r, ok := rows[label]
		if !ok {
			r = len(p.Rows)
			rows[label] = r
			p.Rows = append(p.Rows, label)
		}
		p.Ops = append(p.Ops, proofOp{Row: r, Start: secs(c.Enter), End: secs(c.Exit), Type: "cs", Text: "critical section"})
	}
	return p
}
