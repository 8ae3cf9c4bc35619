package worker

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// A worker that lists none of the cross-thread caps (the test worker: events, extend) is sent none of
// them by the workload (each capability says no); a request sent anyway is answered error 10, recorded as
// the model's command failed before it ran, so no model reads it.
func TestCrossThreadNeedsCaps(t *testing.T) {
	c, buf, _ := startFake(t, time.Second)
	l := c.Mutex([]string{"k"}, 1)
	if l.(locks.StateReader).ReadsState() || l.(locks.ForceUnlocker).ForcesUnlock() || l.(locks.ThreadBound).ThreadBound() {
		t.Fatal("a worker without the caps offers cross-thread requests")
	}
	ctx := context.Background()
	for _, call := range []func() (bool, error){
		func() (bool, error) { return l.(locks.StateReader).Held(ctx) },
		func() (bool, error) { return l.(locks.StateReader).IsLocked(ctx) },
		func() (bool, error) { return l.(locks.ForceUnlocker).ForceUnlock(ctx) },
	} {
		if _, err := call(); !isCode(err, sdk.CodeNotSupported) {
			t.Fatalf("got %v, want error 10 (not supported)", err)
		}
	}
	h := readHistory(t, buf)
	fs := map[string]bool{}
	for _, o := range h.Ops {
		fs[o.Invoke.F] = true
		if o.Outcome() != history.Fail || o.Complete.Value != nil {
			t.Errorf("%s recorded %+v, want failed without a value", o.Invoke.F, o.Complete)
		}
	}
	for _, f := range []string{"held", "is_locked", "force_release"} {
		if !fs[f] {
			t.Errorf("no %s recorded: %v", f, fs)
		}
	}
	// With the caps listed, a plain lock offers them; a group or a read-write half does not.
	c.caps = map[string]bool{sdk.CapReads: true, sdk.CapForceUnlock: true, sdk.CapThreadBound: true}
	if !l.(locks.StateReader).ReadsState() || !l.(locks.ForceUnlocker).ForcesUnlock() || !l.(locks.ThreadBound).ThreadBound() {
		t.Fatal("the caps are not read")
	}
	if c.Mutex([]string{"a", "b"}, 1).(locks.StateReader).ReadsState() || c.ReadLock("k", 1).(locks.ThreadBound).ThreadBound() {
		t.Fatal("a group or a read half offers cross-thread requests")
	}
}
