package workloads

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	good := map[string]Range{
		"10ms-200ms": {10 * time.Millisecond, 200 * time.Millisecond},
		"50ms":       {50 * time.Millisecond, 50 * time.Millisecond},
		" 1s - 2s ":  {time.Second, 2 * time.Second},
	}
	for in, want := range good {
		if got, err := ParseRange(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "fast", "200ms-10ms", "-5ms", "10ms-", "1s-2s-3s",
		"0s-2562047h47m16.854775807s", "24h1ms", "1h-25h"} {
		if _, err := ParseRange(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	r := Range{10 * time.Millisecond, 20 * time.Millisecond}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		if d := r.Draw(rng); d < r.Min || d > r.Max {
			t.Fatalf("drew %v outside %v", d, r)
		}
	}
	// Issue 9, item 10: the widest range panicked (Int64N of an overflowed span).
	wide := Range{0, 1<<63 - 1}
	for i := 0; i < 100; i++ {
		if d := wide.Draw(rng); d < 0 {
			t.Fatalf("drew %v from %v", d, wide)
		}
	}
	if got, err := ParseRange("0s-24h"); err != nil || got.Max != MaxRange {
		t.Fatalf("0s-24h: %v %v", got, err)
	}
}

func TestMutexValidate(t *testing.T) {
	ok := Mutex{Keys: 1, Group: 1, Wait: time.Second, Reentry: 0.5}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Mutex{{Keys: 0, Group: 1}, {Keys: 1, Group: 0}, {Keys: 2, Group: 3}, {Keys: 1, Group: 1, Wait: -1}, {Keys: 1, Group: 1, Lease: -1}, {Keys: 1, Group: 1, Reentry: 2}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
