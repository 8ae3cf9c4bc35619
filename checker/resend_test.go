package checker

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// Recorded on Sentinel with testdata/resend/resend.yaml (its header has the commands):
// c1 holds the lock twice; the reply of its inner unlock is dropped, and the client sends the unlock again
// with the same request id 1.4 s later. With Redisson's scripts the resend answers the latch (0: one hold
// left) and c2 is refused; with a release script that does not latch (Redisson before 3.24.0, through
// --scripts) the resend unlocks again, deletes the outer hold, answers 1, and c2 is granted while c1 is
// inside. The model judges the sends as one unlock that takes effect at most once: a hold taken twice
// answers 0 to it, so the 1 has no legal order. Before, the resend was judged as its own release whose
// answer proves nothing (the first send not applied, the resend the one release), and only mutual
// exclusion flagged the run.
func TestResentUnlockIsOneCall(t *testing.T) {
	for _, c := range []struct {
		file string
		want Validity
	}{{"inner-unlock-no-latch.jsonl", Invalid}, {"inner-unlock-latched.jsonl", Valid}} {
		t.Run(c.file, func(t *testing.T) {
			h, err := history.ReadFile(filepath.Join("testdata", "resend", c.file))
			if err != nil {
				t.Fatal(err)
			}
			resent := 0
			for _, o := range MutexOps(h) {
				if in := o.Input.(Command); in.Resent {
					resent++
					if in.LastSend <= in.Call || o.Return < in.LastSend {
						t.Errorf("resent unlock: first send %s, last %s, return %s", Secs(in.Call), Secs(in.LastSend), Secs(o.Return))
					}
				}
			}
			if resent != 1 {
				t.Fatalf("%d resent unlocks among the model's commands, want 1", resent)
			}
			l := &Linearizable{Label: "porcupine", Model: MutexModel, Convert: MutexOps, Timeout: 30 * time.Second}
			res := l.Check(context.Background(), h)
			if res.Valid != c.want {
				t.Fatalf("%v (%s; %s), want %v", res.Valid, res.Summary, res.Violation, c.want)
			}
			if c.want != Invalid {
				return
			}
			p, ok := l.Proof(context.Background(), h, res, 30*time.Second)
			if !ok {
				t.Fatalf("no proof of %s", res.Violation)
			}
			sends := 0
			for _, i := range p.Ops {
				if h.Ops[i].Invoke.F == "release" {
					sends++
				}
			}
			if sends < 2 {
				t.Errorf("the proof keeps %d sends of the unlock, want both", sends)
			}
		})
	}
}

// A resent read or write unlock that answers 1 may be the latch of a send that found the lock gone
// (Redisson's read and write unlocks store 1 there before answering nil): legal on a lock that lapsed,
// where a single send's 1 is not.
func TestRWResentUnlockMayFindTheLockGone(t *testing.T) {
	for _, resent := range []bool{false, true} {
		rel := read(c("r", "release", 0, 0, 500, 501, Applied, 1))
		in := rel.Input.(Command)
		in.Resent, in.LastSend = resent, 400*milli
		in.Call, rel.Call = 100*milli, 100*milli
		rel.Input = in
		ops := []porcupine.Operation{read(c("r", "acquire", 0, 50, 0, 1, Applied, 0)), rel}
		want := porcupine.Illegal
		if resent {
			want = porcupine.Ok
		}
		checkModel(t, RWModel, want, ops...)
	}
}
