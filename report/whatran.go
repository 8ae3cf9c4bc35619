package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// WhatRan says what a run did, in words, from its meta record (the run's one Test value as recorded): a
// schedule's steps, or the random workload and the fault plan. The bug report, the summary page and
// results.json (Results.Ran) all say this one description.
func WhatRan(run history.RunMeta, nemesis []string) string {
	o := run.Options
	if o.Schedule != "" { // its steps ran, not the random workload its flags would describe
		return scheduleRan(o)
	}
	threads := max(o.Threads, 1)
	who := checker.Count(o.Clients, "client")
	if threads > 1 {
		who += fmt.Sprintf(" of %d threads each (one client instance shared by its threads)", threads)
	}
	keys := "lock-0"
	if o.Keys > 1 {
		keys = fmt.Sprintf("one of lock-0 … lock-%d", o.Keys-1)
	}
	var act string
	switch run.Checks.Family {
	case "semaphore":
		act = fmt.Sprintf("acquire one of %d permits of %s, hold it %s, release it", max(o.Permits, 1), keys, o.Hold)
	case "rwlock":
		act = fmt.Sprintf("take the read or the write lock of %s, hold it %s, release it", keys, o.Hold)
	case "latch":
		act = fmt.Sprintf("set, count down and await %s", keys)
	default:
		act = fmt.Sprintf("tryLock %s (wait up to %s", keys, cmp.Or(o.Wait, "0s"))
		if o.Lease != "" && o.Lease != "0s" {
			act += ", lease " + o.Lease
		} else if o.Watchdog > 0 {
			act += ", no lease: the watchdog renews every " + (o.Watchdog.D() / 3).Round(time.Millisecond).String()
		}
		act += fmt.Sprintf("), hold it %s inside a critical section, then unlock", o.Hold)
	}
	if o.Reentry > 0 && run.Checks.Family == "mutex" { // only the mutex family's workload re-enters
		act += fmt.Sprintf("; re-enter a held lock with probability %.2f", o.Reentry)
	}
	s := fmt.Sprintf("%s, for %s, each in a loop: %s.", who, o.Time.D(), act)
	if len(nemesis) > 0 && nemesis[0] != "none" {
		f := fmt.Sprintf(" Faults (%s)", strings.Join(nemesis, ", "))
		if o.NemesisTargets != "" {
			f += " on " + o.NemesisTargets
		}
		if o.NemesisTrigger {
			f += ", each fired by the lock's own events (" + firedBy(nemesis) + ")"
		} else {
			f += fmt.Sprintf(", one every %s", o.NemesisInterval.D())
		}
		s += f + fmt.Sprintf(", each lasting %s and healed; the last %s is fault-free.", o.NemesisDuration.D(), o.Quiet.D())
	}
	return s
}

// firedBy names the event that fires each fault under --nemesis-trigger: "a grant", or per fault where
// they differ ("drop-reply at an unlock, partition at a grant"); a fault that takes none runs on the clock.
func firedBy(faults []string) string {
	var each []string
	seen := map[string]bool{}
	for _, f := range faults {
		t := nemesisTrigger(f)
		seen[t] = true
		each = append(each, f+" "+t)
	}
	if len(seen) == 1 && !seen["on the clock"] {
		for t := range seen {
			return strings.TrimPrefix(t, "at ")
		}
	}
	return strings.Join(each, ", ")
}

func nemesisTrigger(fault string) string {
	switch t := nemesis.TriggerOf(fault); t {
	case "":
		return "on the clock"
	case "unlock", "attempt":
		return "at an " + t
	default:
		return "at a " + t
	}
}

// scheduleRan says what a schedule run did: the schedule's steps, which the run played in place of the
// random workload (its --clients, --hold and fault flags never ran), its faults among them.
func scheduleRan(o history.Options) string {
	s := fmt.Sprintf("the steps of the schedule %s", filepath.Base(o.Schedule))
	if o.ScheduleSHA256 != "" {
		s += fmt.Sprintf(" (sha256 %.12s)", o.ScheduleSHA256)
	}
	if o.ScheduleAbout != "" {
		s += ": " + o.ScheduleAbout
	}
	return s + ". Each step ran once, in order, its faults among them; no random workload or fault plan ran."
}
