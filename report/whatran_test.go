package report

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// A triggered fault is said with the event that fires it: delay-pexpire fires at a release, and a plan of
// faults fired by different events names each (the H6 report said "a grant" for delay-pexpire).
func TestWhatRanNamesEachFaultsTrigger(t *testing.T) {
	run := history.RunMeta{Options: history.Options{Clients: 2, Time: history.Duration(10 * time.Second), Hold: "10ms",
		NemesisTrigger: true, NemesisDuration: history.Duration(time.Second)}}
	for _, c := range []struct {
		faults []string
		want   string
	}{
		{[]string{"delay-pexpire"}, "fired by the lock's own events (a release)"},
		{[]string{"client-pause", "partition"}, "fired by the lock's own events (a grant)"},
		{[]string{"drop-reply", "partition"}, "(drop-reply at an unlock, partition at a grant)"},
		{[]string{"latency", "partition"}, "(latency on the clock, partition at a grant)"},
	} {
		if got := WhatRan(run, c.faults); !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want it to say %q", c.faults, got, c.want)
		}
	}
}
