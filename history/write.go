package history

import (
	"io"
	"sort"
)

// Write writes h as a history file that Read reads back: its meta record, every other record in time
// order (an invoke before its completion), its end record. A proof's excerpt (checker.Proof) is written so.
func (h *History) Write(w io.Writer) error {
	var recs []Record
	for _, o := range h.Ops {
		recs = append(recs, o.Invoke.Record())
		if c := o.CompleteRecord(); c != nil {
			recs = append(recs, *c)
		}
	}
	recs = append(append(append(recs, h.Faults...), h.Sections...), h.Events...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time < recs[j].Time })
	r := NewRecorder(w, Clock{})
	if h.Meta != nil {
		r.Write(*h.Meta)
	}
	for _, rec := range recs {
		r.Write(rec)
	}
	if h.Ended != nil {
		r.Write(*h.Ended)
	}
	return r.Err()
}
