// Package dockertest gives docker-backend tests an engine and the offline Redis image, or skips them with
// the reason.
package dockertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node/docker"
)

var (
	once   sync.Once
	reason string
)

// Require skips t unless a Docker engine answers; it builds the offline image once if it is missing.
func Require(t testing.TB) {
	t.Helper()
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := docker.EnsureImage(ctx); err != nil {
			reason = err.Error()
		}
	})
	if reason != "" {
		t.Skip("docker-backend test skipped: " + reason)
	}
}

// Leftovers lists what lockcheck's label is on now (of one run, or all with run ""), failing t if the
// engine cannot be asked.
func Leftovers(t testing.TB, run string) []string {
	t.Helper()
	out, err := docker.Leftovers(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
