package workloads

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// Bounds of the delay between a client's failing calls.
const (
	backoffMin = 50 * time.Millisecond
	backoffMax = time.Second
)

// backoff spaces a client's failing calls, so a client whose calls fail at once (no descriptors left, a
// node down, a subscription refused) neither spins nor floods the history: after each error the next call
// starts a delay after the last one did, the delay drawn from [d/2, d] with d doubling from backoffMin to
// backoffMax; a call without an error resets d. Its rng is its own, seeded from the run's seed and the
// client's name, so backing off leaves the workload's own draws as they were.
type backoff struct {
	rng *rand.Rand
	d   time.Duration
}

func newBackoff(seed int64, client string) *backoff {
	h := fnv.New64a()
	h.Write([]byte(client))
	return &backoff{rng: rand.New(rand.NewPCG(uint64(seed), h.Sum64()))}
}

// after follows a call that took took and ended with err: it waits out what is left of the delay.
func (b *backoff) after(ctx context.Context, err error, took time.Duration) {
	if err == nil {
		b.d = 0
		return
	}
	b.d = min(max(2*b.d, backoffMin), backoffMax)
	if wait := b.d/2 + time.Duration(b.rng.Int64N(int64(b.d/2)+1)); wait > took {
		Sleep(ctx, wait-took)
	}
}
