package runner

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
)

// CheckItem is one thing worker-check tried.
type CheckItem struct {
	Name string
	OK   bool
	Why  string
}

// WorkerCheck tries a worker as lockcheck will use it: the handshake, a short fault-free run on one
// Redis, or o.Topology when it names one (valid expected) and a client pause (the worker frozen by SIGSTOP after a grant must answer again
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
	base.Nemesis = "none"
	if base.Topology == "" { // one Redis, unless the check is asked for another deployment (--topology)
		base.Topology = "single"
	}
	res, err := Run(ctx, base, stderr)
	if res == nil {
		return noHandshake(runError(err))
	}
	items := []CheckItem{{"handshake", true, handshakeText(res.Files["history"]) + picked}}
	handshake := res.Files["history"]
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
	if !items[1].OK { // the holds past the lease would fail as the fault-free run did
		return items
	}
	return append(items, leaseItems(ctx, base, handshake, stderr)...)
}

// leaseItems are worker-check's holds past the lease, for a lock whose application extends long holds
// (kind mutex: kinds.Kind.AppExtends) driven by a worker without a watchdog; none for other locks. Holds of
// 2 to 3 leases on one key: never extended, another client must be granted the lock once the lease ran
// out (the worker honours lease_ms); extended every third of the lease, where the worker announces
// extend, nobody may be (an extend that answered extended: true did extend). The lease is --lease, else
// 1 s, fitted to the worker's granularity; each run lasts at least 4 leases and the quiet end.
func leaseItems(ctx context.Context, base Options, handshake string, stderr io.Writer) []CheckItem {
	h, err := history.ReadFile(handshake)
	k, kerr := kinds.Lookup(base.Lock)
	if err != nil || kerr != nil || !k.AppExtends || h.Run == nil || h.Run.Client == nil ||
		slices.Contains(h.Run.Client.Caps, "watchdog") {
		return nil
	}
	lease := base.Lease
	if lease <= 0 {
		lease = time.Second
	}
	lease = worker.FitLease(lease, time.Duration(h.Run.Client.LeaseGranularityMs)*time.Millisecond)
	o := base
	o.Keys, o.Lease, o.LeaseTo, o.Hold = 1, lease, 0, fmt.Sprintf("%s-%s", 2*lease, 3*lease)
	o.Time = max(o.Time, 4*lease+o.Quiet)
	holds := fmt.Sprintf("holds of %s on a %s lease", o.Hold, lease)
	plain := o
	plain.NoExtend = true
	items := []CheckItem{leaseItem(ctx, holds, plain, stderr)}
	if slices.Contains(h.Run.Client.Caps, "extend") {
		items = append(items, extendItem(ctx, holds, lease, o, stderr))
	}
	return items
}

// leaseItem runs holds past the lease, never extended: the run must show another owner granted the lock
// while the holder still wrote (mutual-exclusion's overlaps, expected here), in an order porcupine accepts.
func leaseItem(ctx context.Context, holds string, o Options, stderr io.Writer) CheckItem {
	const name = "lease"
	res, err := Run(ctx, o, stderr)
	if err != nil || res == nil {
		return CheckItem{name, false, runError(err)}
	}
	excl, lin := result(res.Checkers, checker.Exclusion{}.Name()), result(res.Checkers, "porcupine")
	told := result(res.Checkers, checker.ToldOfLoss{}.Name())
	switch {
	case lin.Valid != checker.Valid && told.Valid != checker.Valid:
		// The worker honoured the lease, but its library answered ok to a holder that had lost the lock (a
		// release or extend after another owner's grant): the library's finding, which no worker can hide.
		return CheckItem{name, false, fmt.Sprintf("%s, never extended: the library answered ok to a holder that had lost the lock "+
			"(told-of-loss %s: %s; porcupine %s)", holds, told.Valid, told.Summary, lin.Valid)}
	case lin.Valid != checker.Valid:
		return CheckItem{name, false, fmt.Sprintf("%s, never extended: porcupine %s: %s", holds, lin.Valid, lin.Summary)}
	case excl.Valid != checker.Invalid:
		return CheckItem{name, false, fmt.Sprintf("%s, never extended: no other client was granted the lock while a hold "+
			"outlived its lease (mutual-exclusion: %s): the worker does not honour lease_ms", holds, excl.Summary)}
	}
	return CheckItem{name, true, fmt.Sprintf("%s, never extended, were taken over once the lease ran out, as they must be "+
		"(mutual-exclusion: %s; porcupine valid)", holds, excl.Summary)}
}

// extendItem runs the same holds extended every third of the lease: valid, with extends answered
// extended: true. A worker whose extend says so without extending lets the lease run out, and another
// client is granted the lock inside the hold.
func extendItem(ctx context.Context, holds string, lease time.Duration, o Options, stderr io.Writer) CheckItem {
	const name = "extend"
	res, err := Run(ctx, o, stderr)
	if err != nil || res == nil {
		return CheckItem{name, false, runError(err)}
	}
	every := fmt.Sprintf("%s, extended every %s", holds, max(lease/3, time.Millisecond).Round(time.Millisecond))
	if res.Valid != checker.Valid {
		why := ""
		if result(res.Checkers, checker.Exclusion{}.Name()).Valid == checker.Invalid { // another holder inside a hold
			why = ": an extend answered extended: true did not keep the lock"
		}
		return CheckItem{name, false, fmt.Sprintf("%s: verdict %s: %s%s", every, res.Valid, firstViolation(res.Checkers), why)}
	}
	h, err := history.ReadFile(res.Files["history"])
	if err != nil {
		return CheckItem{name, false, err.Error()}
	}
	extended, tried := 0, 0
	for _, op := range h.OnlySrc("").Ops { // the worker's answers, not its commands on the wire
		if op.Invoke.F == "renew" {
			tried++
			if op.Complete != nil && op.Complete.Type == history.Ok {
				extended++
			}
		}
	}
	if extended == 0 {
		return CheckItem{name, false, fmt.Sprintf("%s: none of %d extends of a held lock was answered extended: true", every, tried)}
	}
	return CheckItem{name, true, fmt.Sprintf("%s: valid, %d of %d extends answered extended: true", every, extended, tried)}
}

// result is the named checker's result (unknown when it did not run).
func result(rs []checker.Result, name string) checker.Result {
	for _, r := range rs {
		if r.Checker == name {
			return r
		}
	}
	return checker.Result{Valid: checker.Unknown, Summary: "did not run"}
}

func runError(err error) string {
	if err == nil {
		return "no run"
	}
	return err.Error()
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
