package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A release refused within the lease while the key was still there (another owner's acquire refused after
// it, nobody granted in between) is the client forgetting its token, not the server losing the lock: the
// explanation says which the history shows.
func TestLostLockKeptKey(t *testing.T) {
	ok, fail := history.Ok, history.Fail
	forgot := []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "release", 3000, 3001, fail, -1, nil},
		{"c2", "acquire", 3100, 3101, fail, 26000, nil}}
	r := LostLock{}.Check(context.Background(), &history.History{Ops: opsOf(forgot)})
	if r.Valid != Invalid || !strings.Contains(r.Violation, "the key was still held") ||
		!strings.Contains(r.Violation, "forgot or swapped its token") || strings.Contains(r.Violation, "the server lost the lock") {
		t.Fatalf("forgotten token: %v: %s", r.Valid, r.Violation)
	}
	if l := r.Details.([]Loss)[0]; !strings.HasPrefix(l.KeptBy, "c2") {
		t.Fatalf("loss %+v", l)
	}
	// Another owner granted in between: its refusal says nothing of c1's key; the server lost it.
	lost := []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "release", 3000, 3001, fail, -1, nil},
		{"c3", "acquire", 3002, 3003, ok, 0, nil}, {"c2", "acquire", 3100, 3101, fail, 26000, nil}}
	r = LostLock{}.Check(context.Background(), &history.History{Ops: opsOf(lost)})
	if r.Valid != Invalid || !strings.Contains(r.Violation, "the server lost the lock") || strings.Contains(r.Violation, "the key was still held") {
		t.Fatalf("lost: %v: %s", r.Valid, r.Violation)
	}
	// A refusal before c1's own refused release proves nothing about after it.
	early := []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c2", "acquire", 100, 101, fail, 29000, nil},
		{"c1", "release", 3000, 3001, fail, -1, nil}}
	if r = (LostLock{}).Check(context.Background(), &history.History{Ops: opsOf(early)}); !strings.Contains(r.Violation, "the server lost the lock") {
		t.Fatalf("early refusal: %s", r.Violation)
	}
}
