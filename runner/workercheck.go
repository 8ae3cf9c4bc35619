package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// CheckItem is one thing worker-check tried.
type CheckItem struct {
	Name string
	OK   bool
	Why  string
}

// WorkerCheck tries a worker as lockcheck will use it: the handshake, a short fault-free run on one
// Redis (valid expected) and a client pause (the worker frozen by SIGSTOP after a grant must answer again
// after SIGCONT), each run lasting o.Time. o names the worker and the lock; runs go under o.Results.
// Unless lockGiven, the worker is asked for its kinds first (ProbeKinds) and tried on the first that
// lockcheck knows.
func WorkerCheck(ctx context.Context, o Options, lockGiven bool, stderr io.Writer) []CheckItem {
	noHandshake := func(why string) []CheckItem {
		return []CheckItem{{"handshake", false, why}, {"fault-free run", false, "no handshake"}, {"client pause", false, "no handshake"}}
	}
	picked := ""
	if !lockGiven {
		p, err := ProbeKinds(ctx, o, stderr)
		if err != nil {
			return noHandshake(err.Error())
		}
		o.Lock, picked = p.Lock, "; "+p.Text()
	}
	base := o
	base.Nemesis, base.Topology = "none", "single"
	res, err := Run(ctx, base, stderr)
	if res == nil {
		why := "no run"
		if err != nil {
			why = err.Error()
		}
		return noHandshake(why)
	}
	items := []CheckItem{{"handshake", true, handshakeText(res.Files["history"]) + picked}}
	switch {
	case err != nil:
		items = append(items, CheckItem{"fault-free run", false, err.Error()})
	case res.Valid != checker.Valid:
		items = append(items, CheckItem{"fault-free run", false, "verdict " + res.Valid.String() + ": " + firstViolation(res.Checkers)})
	default:
		items = append(items, CheckItem{"fault-free run", true, fmt.Sprintf("valid in %s, %s", base.Time, opsText(res.Checkers))})
	}
	pause := pauseRun(base)
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
		items = append(items, CheckItem{"client pause", ok, why + fmt.Sprintf("; a %s pause fired by a grant after about %s, in a %s run",
			pause.NemesisDuration, pause.NemesisInterval, pause.Time)})
	}
	return items
}

// pauseRun is worker-check's client-pause run, fitted into o.Time (--time): a pause of up to 3 s fired
// by the first grant after up to 1 s, then a quiet end in which the resumed worker must answer. Fired by a
// grant (--nemesis-trigger), it freezes whichever client was just granted: armed on one client drawn in
// advance, it froze nobody when that client was granted nothing in its 750 ms (a 2 s check on a loaded
// machine). Several keys give grants to fire at.
func pauseRun(o Options) Options {
	o.Nemesis, o.Keys, o.NemesisTrigger = "client-pause", max(o.Keys, 3), true
	o.Quiet = min(o.Quiet, o.Time/4)
	left := o.Time - o.Quiet // the fault waits up to its interval +25%, then lasts its duration
	o.NemesisDuration = min(3*time.Second, left/2)
	o.NemesisInterval = min(time.Second, (left-o.NemesisDuration)*4/5)
	return o
}

func handshakeText(path string) string {
	h, err := history.ReadFile(path)
	if err != nil || h.Run == nil || h.Run.Client == nil {
		return "init_ok"
	}
	m := h.Run
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
