package checker

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Stats counts outcomes and measures latencies per operation; it informs and never fails a run.
type Stats struct{}

// Name is the checker's stable name.
func (Stats) Name() string { return "stats" }

// OpStats are the figures for one operation kind.
type OpStats struct {
	Ok      int     `json:"ok"`
	Fail    int     `json:"fail"`
	Unknown int     `json:"unknown"`
	P50ms   float64 `json:"p50_ms"`
	P95ms   float64 `json:"p95_ms"`
	P99ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// Check tallies every operation by its f.
func (Stats) Check(_ context.Context, h *history.History) Result {
	by := map[string]*OpStats{}
	lat := map[string][]time.Duration{}
	total := 0
	var all OpStats // every operation's outcome: what the live status line counted
	for _, o := range h.Ops {
		f := o.Invoke.F
		s := by[f]
		if s == nil {
			s = &OpStats{}
			by[f] = s
		}
		total++
		switch o.Outcome() {
		case history.Ok:
			s.Ok++
			all.Ok++
			lat[f] = append(lat[f], time.Duration(o.Complete.Time-o.Invoke.Time))
		case history.Fail:
			s.Fail++
			all.Fail++
		default:
			s.Unknown++
			all.Unknown++
		}
	}
	for f, ds := range lat {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		q := func(p float64) float64 { return ms(ds[min(len(ds)-1, int(p*float64(len(ds))))]) }
		by[f].P50ms, by[f].P95ms, by[f].P99ms, by[f].MaxMs = q(0.50), q(0.95), q(0.99), ms(ds[len(ds)-1])
	}
	secs := time.Duration(h.End()).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(total) / secs
	}
	// Each application call (tryLock, unlock) and each lock command under it (a worker's acquire, release) is
	// an operation: the summary says so, since "ok 4" for two tryLocks and two releases puzzled readers.
	sum := fmt.Sprintf("%d operations in %.1fs (%.0f/s; ok %d, fail %d, unknown %d: calls and the lock commands under them)",
		total, secs, rate, all.Ok, all.Fail, all.Unknown)
	if s, ok := by["tryLock"]; ok {
		sum += fmt.Sprintf("; tryLock ok %d, fail %d, unknown %d, p50 %.1fms p99 %.1fms", s.Ok, s.Fail, s.Unknown, s.P50ms, s.P99ms)
	}
	return Result{Valid: Valid, Summary: sum, Details: map[string]any{"ops_per_sec": rate, "by_f": by}}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
