package checker

import (
	"context"
	"fmt"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// Exclusion checks, in real time, that no two owners were inside the critical section of one key at once,
// using the protected resource's own records (which sit outside every fault).
type Exclusion struct{}

// Name is the checker's stable name.
func (Exclusion) Name() string { return "mutual-exclusion" }

// Overlap is two critical sections of different owners on one key that intersect in time.
type Overlap struct {
	Key           string `json:"key"`
	Holder        string `json:"holder"`
	Intruder      string `json:"intruder"`
	HolderOwner   string `json:"holder_owner"`
	IntruderOwner string `json:"intruder_owner"`
	HeldFrom      int64  `json:"held_from_ns"`
	HeldTo        int64  `json:"held_to_ns"`
	Entered       int64  `json:"entered_ns"`
	IntruderOut   int64  `json:"intruder_left_ns"`
}

// Check sweeps each key's sections in order of entry.
func (Exclusion) Check(_ context.Context, h *history.History) Result {
	overlaps := Overlaps(h.Sections)
	n := len(h.Sections)
	switch {
	case len(overlaps) > 0:
		first := overlaps[0]
		return Result{Valid: Invalid,
			Summary:   fmt.Sprintf("%d overlapping pairs among %d critical sections", len(overlaps), n),
			Violation: first.String(),
			Details:   map[string]any{"sections": n, "overlaps": len(overlaps), "first": first}}
	case n == 0:
		return Result{Valid: Unknown, Summary: "no critical section completed, so exclusion was never tested"}
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf("%d critical sections, none overlapping", n),
		Details: map[string]any{"sections": n, "overlaps": 0}}
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s held %s from %s to %s; %s entered at %s, %s before the holder left",
		o.Holder, o.Key, Secs(o.HeldFrom), Secs(o.HeldTo), o.Intruder, Secs(o.Entered),
		Secs(min(o.HeldTo, o.IntruderOut)-o.Entered))
}

// Overlaps returns every pair of intersecting sections of different owners on one key, earliest first.
// Sections of one owner never count against each other.
func Overlaps(sections []history.Record) []Overlap {
	byKey := map[string][]history.Record{}
	for _, s := range sections {
		byKey[s.Key] = append(byKey[s.Key], s)
	}
	var out []Overlap
	for key, ss := range byKey {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Enter < ss[j].Enter })
		var open []history.Record // sections still inside at the current entry
		for _, s := range ss {
			kept := open[:0]
			for _, o := range open {
				if o.Exit > s.Enter {
					kept = append(kept, o)
				}
			}
			open = kept
			for _, o := range open {
				if o.Owner != s.Owner {
					out = append(out, Overlap{Key: key, Holder: o.Client, Intruder: s.Client, HolderOwner: o.Owner,
						IntruderOwner: s.Owner, HeldFrom: o.Enter, HeldTo: o.Exit, Entered: s.Enter, IntruderOut: s.Exit})
				}
			}
			open = append(open, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entered < out[j].Entered })
	return out
}
