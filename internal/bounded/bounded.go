// Package bounded runs teardown steps with a deadline, so that one step that hangs (a connection nobody
// answers, an engine that does not reply) cannot keep a run from ending and writing its results.
package bounded

import (
	"sync"
	"time"
)

// Run runs step and waits for it at most d. It reports whether step finished; one that did not is left
// running (it ends by itself later, or with the process).
func Run(d time.Duration, step func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		step()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// All runs steps in parallel and waits at most d for them all. It returns how many were still running.
func All(d time.Duration, steps ...func()) int {
	var mu sync.Mutex
	left := len(steps)
	var wg sync.WaitGroup
	for _, s := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s()
			mu.Lock()
			left--
			mu.Unlock()
		}()
	}
	Run(d, wg.Wait)
	mu.Lock()
	defer mu.Unlock()
	return left
}
