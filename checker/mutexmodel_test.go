package checker

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const milli = int64(time.Millisecond)

// cmd builds one lock command on key k; times are in milliseconds, ret < 0 means unknown (+infinity).
func cmd(owner, f string, leaseMs, call, ret int64, out Outcome, value int64) porcupine.Operation {
	in := Command{Key: "k", Client: owner, F: f, Owner: owner, Lease: leaseMs * milli, Call: call * milli, Return: ret * milli}
	if ret < 0 {
		in.Return, out = math.MaxInt64, Unsure
	}
	return porcupine.Operation{ClientId: int(owner[0]), Input: in, Output: Reply{Outcome: out, Value: value},
		Call: in.Call, Return: in.Return}
}

func check(t *testing.T, want porcupine.CheckResult, ops ...porcupine.Operation) {
	t.Helper()
	got := porcupine.CheckOperationsTimeout(MutexModel.ToModel(), ops, 10*time.Second)
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := frontierAll(MutexModel, ops); got != want {
		t.Fatalf("frontier search: got %v, want %v", got, want)
	}
}

func TestMutexModelLegal(t *testing.T) {
	tests := map[string][]porcupine.Operation{
		"re-entry": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "acquire", 30000, 2, 3, Applied, 0),
			cmd("b", "acquire", 30000, 4, 5, Refused, 29000),
			cmd("a", "release", 30000, 6, 7, Applied, 0),
			cmd("a", "release", 30000, 8, 9, Applied, 1),
			cmd("b", "acquire", 30000, 10, 11, Applied, 0),
		},
		"grant after the lease surely expired": {
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("b", "acquire", 100, 200, 201, Applied, 0),
			cmd("a", "release", 100, 300, 301, Refused, -1),
		},
		"grant to another while the lease may have expired": {
			cmd("a", "acquire", 100, 0, 10, Applied, 0),
			cmd("b", "acquire", 100, 105, 106, Applied, 0),
		},
		"renewal keeps the lock, then it lapses": {
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("a", "renew", 100, 50, 51, Applied, 1),
			cmd("b", "acquire", 100, 120, 121, Refused, 30),
			cmd("b", "acquire", 100, 200, 201, Applied, 0),
			cmd("a", "renew", 100, 210, 211, Refused, 0),
		},
		"an unknown acquire may hold the lock until its lease": {
			cmd("a", "acquire", 100, 0, -1, Unsure, 0),
			cmd("b", "acquire", 100, 50, 51, Refused, 50),
			cmd("b", "acquire", 100, 150, 151, Applied, 0),
		},
		"an unknown acquire may never have happened": {
			cmd("a", "acquire", 100, 0, -1, Unsure, 0),
			cmd("b", "acquire", 100, 10, 11, Applied, 0),
		},
		"a replayed unlock answers what the first attempt did": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "release", 30000, 2, -1, Unsure, 0),
			cmd("b", "acquire", 30000, 10, 11, Applied, 0),
			replay(cmd("a", "release", 30000, 12, 13, Applied, 1)),
		},
		// The spec Redlock's SET NX refuses its own holder: a member kept c3's lock through a kill -9 (AOF),
		// c3's release there never applied, and its next SET NX was refused by its own lock (make
		// falsealarms: redlock-spec under partition,kill, seed 1).
		"SET NX refused by the caller's own lock": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "release", 30000, 2, -1, Unsure, 0),
			cmd("a", "acquire", 30000, 10, 11, Refused, -2),
			cmd("a", "release", 30000, 12, 13, Applied, 1),
		},
		"a refused release by a non-owner": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "release", 30000, 2, 3, Refused, -1),
			cmd("a", "release", 30000, 4, 5, Applied, 1),
		},
	}
	for name, ops := range tests {
		t.Run(name, func(t *testing.T) { check(t, porcupine.Ok, ops...) })
	}
}

func replay(op porcupine.Operation) porcupine.Operation {
	return with(op, func(c *Command) { c.Replay = true })
}

func TestMutexModelIllegal(t *testing.T) {
	tests := map[string][]porcupine.Operation{
		"double grant": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "acquire", 30000, 2, 3, Applied, 0),
		},
		"a release by a non-owner that succeeds": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "release", 30000, 2, 3, Applied, 1),
		},
		"re-entry count underflow": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "release", 30000, 2, 3, Applied, 0), // says "still held" after the only hold
		},
		"a second full release": {
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "release", 30000, 2, 3, Applied, 1),
			cmd("a", "release", 30000, 4, 5, Applied, 1),
		},
		"a grant before the earliest possible expiry": {
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("b", "acquire", 100, 50, 60, Applied, 0),
		},
		"a grant before a renewal's earliest expiry": {
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("a", "renew", 100, 80, 81, Applied, 1),
			cmd("b", "acquire", 100, 120, 121, Applied, 0),
		},
		"refused while free": {
			cmd("a", "acquire", 100, 0, 1, Refused, 50),
		},
		"a renewal of a lock not held": {
			cmd("a", "renew", 100, 0, 1, Applied, 1),
		},
	}
	for name, ops := range tests {
		t.Run(name, func(t *testing.T) { check(t, porcupine.Illegal, ops...) })
	}
}

func TestMutexModelKeysAreIndependent(t *testing.T) {
	a := cmd("a", "acquire", 30000, 0, 1, Applied, 0)
	b := cmd("b", "acquire", 30000, 2, 3, Applied, 0)
	in := b.Input.(Command)
	in.Key = "other"
	b.Input = in
	check(t, porcupine.Ok, a, b)
}

// A worker's grant kept by its library's watchdog (renewals unseen) may outlive its lease: the owner's
// late release and another's refusal are legal. The same commands with a fixed lease are not.
func TestMutexModelWatchdogGrant(t *testing.T) {
	ops := func(watchdog bool) []porcupine.Operation {
		out := []porcupine.Operation{
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("b", "acquire", 100, 300, 301, Refused, -2),
			cmd("a", "release", 100, 400, 401, Applied, 1),
			cmd("b", "acquire", 100, 500, 501, Applied, 0),
		}
		for i := range out {
			in := out[i].Input.(Command)
			in.Watchdog = watchdog
			out[i].Input = in
		}
		return out
	}
	check(t, porcupine.Ok, ops(true)...)
	check(t, porcupine.Illegal, ops(false)...)
	// Renewals keep it no longer than the owner holds it: a grant to another before the release, while
	// the owner's release then succeeds, is still illegal.
	late := ops(true)
	late[1].Output = Reply{Outcome: Applied}
	check(t, porcupine.Illegal, late...)
}
