package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks/worker"
)

// CheckItem is one thing worker-check tried.
type CheckItem struct {
	Name string
	OK   bool
	Why  string
}

// WorkerCheck tries a worker as lockcheck will use it: the handshake, a short fault-free run on one
// Redis (valid expected) and a client pause (the worker frozen by SIGSTOP after a grant must answer again
// after SIGCONT). o names the worker and the lock; runs go under o.Results. Unless lockGiven, a worker
// that cannot drive o.Lock is tried on the first kind it names.
func WorkerCheck(ctx context.Context, o Options, lockGiven bool, stderr io.Writer) []CheckItem {
	base := o
	base.Nemesis, base.Topology = "none", "single"
	res, err := Run(ctx, base, stderr)
	var refused worker.RefusedError
	if res == nil && !lockGiven && errors.As(err, &refused) && len(refused.Kinds) > 0 {
		if _, lerr := kinds.Lookup(refused.Kinds[0]); lerr == nil {
			base.Lock = refused.Kinds[0]
			res, err = Run(ctx, base, stderr)
		}
	}
	if res == nil {
		why := "no run"
		if err != nil {
			why = err.Error()
		}
		return []CheckItem{{"handshake", false, why}, {"fault-free run", false, "no handshake"}, {"client pause", false, "no handshake"}}
	}
	items := []CheckItem{{"handshake", true, handshakeText(res.Files["history"])}}
	switch {
	case err != nil:
		items = append(items, CheckItem{"fault-free run", false, err.Error()})
	case res.Valid != checker.Valid:
		items = append(items, CheckItem{"fault-free run", false, "verdict " + res.Valid.String() + ": " + firstViolation(res.Checkers)})
	default:
		items = append(items, CheckItem{"fault-free run", true, fmt.Sprintf("valid, %s", opsText(res.Checkers))})
	}
	// The fault freezes its client at that client's next grant: several keys and windows give it grants
	// to freeze at even on a loaded machine.
	pause := base
	pause.Nemesis, pause.NemesisInterval, pause.NemesisDuration = "client-pause", time.Second, 3*time.Second
	pause.Time, pause.Keys = max(pause.Time, 10*time.Second), max(pause.Keys, 3)
	res, err = Run(ctx, pause, stderr)
	switch {
	case err != nil:
		items = append(items, CheckItem{"client pause", false, err.Error()})
	case res == nil:
		items = append(items, CheckItem{"client pause", false, "no run"})
	default:
		ok, why := resumedAfterPause(res.Files["history"])
		if ok {
			why += fmt.Sprintf(" (verdict %s: a lease shorter than the pause may be overrun)", res.Valid)
		}
		items = append(items, CheckItem{"client pause", ok, why})
	}
	return items
}

func handshakeText(path string) string {
	h, err := history.ReadFile(path)
	if err != nil || h.Meta == nil {
		return "init_ok"
	}
	var m Meta
	if json.Unmarshal(h.Meta.Data, &m) != nil || m.Client == nil {
		return "init_ok"
	}
	return fmt.Sprintf("%s %s (%s), kinds %s, caps [%s]", m.Client.Library, m.Client.Version, m.Client.Runtime,
		strings.Join(m.Client.Kinds, ","), strings.Join(m.Client.Caps, ","))
}

func firstViolation(rs []checker.Result) string {
	for _, r := range rs {
		if r.Valid != checker.Valid && r.Summary != "" {
			return r.Checker + ": " + r.Summary
		}
	}
	return "see results.json"
}

func opsText(rs []checker.Result) string {
	for _, r := range rs {
		if r.Checker == "mutual-exclusion" || r.Checker == "stats" {
			return r.Checker + ": " + r.Summary
		}
	}
	return "no violation"
}

// resumedAfterPause looks for a client frozen inside its critical section that completed an operation
// after the pause ended: the worker survived SIGSTOP and SIGCONT.
func resumedAfterPause(path string) (bool, string) {
	h, err := history.ReadFile(path)
	if err != nil {
		return false, err.Error()
	}
	frozen := map[string]int64{}
	for _, f := range h.Faults {
		if f.F == "client-pause" && f.Phase == "frozen" && len(f.Targets) > 0 {
			if _, ok := frozen[f.Targets[0]]; !ok {
				frozen[f.Targets[0]] = f.Time
			}
		}
	}
	if len(frozen) == 0 {
		return false, "no client was frozen after a grant (no acquire was granted while the fault was armed)"
	}
	for _, w := range h.Windows() {
		if w.Kind != "client-pause" {
			continue
		}
		for _, o := range h.OnlySrc("").Ops { // the worker's answers, not its commands on the wire
			at, ok := frozen[o.Invoke.Client]
			if ok && at >= w.Start && o.Complete != nil && o.Complete.Type == history.Ok && o.Invoke.Time >= w.End {
				return true, fmt.Sprintf("%s froze after a grant and answered again after the pause", o.Invoke.Client)
			}
		}
	}
	return false, "the frozen worker never completed an operation after the pause"
}
