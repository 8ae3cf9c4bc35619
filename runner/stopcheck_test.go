package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/report"
)

// Issue 36 item 4: a signal during a run's own check ends it at once, whatever a checker costs; before, the
// run checked with context.Background(), and SIGTERM did not end a check that never finished.
func TestSignalStopsTheRunsCheck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	forever := make(chan struct{})
	defer close(forever)
	done := make(chan error, 1)
	go func() {
		_, err := analyzeUnlessStopped(ctx, func() (*report.Results, error) { <-forever; return nil, nil })
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCheckInterrupted) {
			t.Fatalf("got %v, want ErrCheckInterrupted", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the check still runs 5 s after the signal")
	}
}
