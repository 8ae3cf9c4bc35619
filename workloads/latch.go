package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
)

// Latch is the count-down latch workload, in rounds on fresh keys latch-<round>: the first client sets the
// count, Count other clients each count down once after a drawn delay, and the rest await the latch.
// A round ends when everyone is done.
type Latch struct {
	Count int64
	Wait  time.Duration // await budget
	Hold  Range         // delay before each countDown
	Seed  int64
	// Threads per client: each round's countDowns and awaits are spread over every thread of every client
	// (one client instance's threads then await, and are woken, on its one subscription). 0 counts as 1.
	Threads int
}

// Validate rejects nonsense options; the client count is checked against Count.
func (l Latch) Validate(clients int) error {
	switch {
	case l.Count < 1:
		return fmt.Errorf("--count must be at least 1, got %d", l.Count)
	case int64(clients)*int64(l.threads()) < l.Count+1:
		return fmt.Errorf("--count %d needs at least %d client threads (one sets, %d count down), got %d", l.Count, l.Count+1, l.Count,
			clients*l.threads())
	}
	return nil
}

func (l Latch) threads() int { return max(l.Threads, 1) }

var errRoundFailed = errors.New("a call of the round failed")

// Run plays rounds until stop or ctx.
func (l Latch) Run(ctx context.Context, stop <-chan struct{}, clients []locks.Client, rec *history.Recorder) {
	rng := rand.New(rand.NewPCG(uint64(l.Seed), 0x6c61))
	back := newBackoff(l.Seed, "latch")
	for round := 0; ; round++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		key := "latch-" + strconv.Itoa(round)
		latch := func(c locks.Client, thread int64) locks.Latch { return c.(locks.LatchClient).Latch(key, thread) }
		begin := time.Now()
		if ok, err := latch(clients[0], 1).TrySetCount(ctx, l.Count); !ok || err != nil {
			if err != nil {
				back.after(ctx, err, time.Since(begin))
			} else {
				Sleep(ctx, 100*time.Millisecond)
			}
			continue
		}
		// Everyone but the setter (client 1's thread 1) takes part: thread t of client i is i*threads+t-1.
		order := rng.Perm(len(clients)*l.threads() - 1)
		var wg sync.WaitGroup
		var failed atomic.Bool // a call of the round's ended with an error: the next round backs off
		for i, idx := range order {
			c, th := clients[(idx+1)/l.threads()], int64((idx+1)%l.threads()+1)
			delay := l.Hold.Draw(rng)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if int64(i) < l.Count {
					Sleep(ctx, delay)
					if latch(c, th).CountDown(ctx) != nil { // recorded by the latch itself
						failed.Store(true)
					}
					return
				}
				op := rec.Invoke(history.Record{Client: c.Name(), Thread: th, Key: key, F: "await",
					Args: map[string]int64{"wait_ms": l.Wait.Milliseconds()}})
				ok, err := latch(c, th).Await(ctx, l.Wait)
				outcome.Complete(op, outcome.Call{Refused: !ok, Err: err})
				if err != nil {
					failed.Store(true)
				}
			}()
		}
		wg.Wait()
		var err error
		if failed.Load() {
			err = errRoundFailed
		}
		back.after(ctx, err, time.Since(begin))
	}
}
