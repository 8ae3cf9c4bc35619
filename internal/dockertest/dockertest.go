// Package dockertest gives docker-backend tests an engine and the offline Redis image, or skips them with
// the reason.
package dockertest

import (
	"context"
	"io"
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
		rt, err := docker.Connect(ctx, docker.DefaultImage, "probe")
		if err == nil {
			rt.Close()
			return
		}
		if !docker.EngineUp(ctx) {
			reason = err.Error()
			return
		}
		if err := docker.BuildOffline(ctx, io.Discard); err != nil {
			reason = "cannot build " + docker.DefaultImage + ": " + err.Error()
		}
	})
	if reason != "" {
		t.Skip("docker-backend test skipped: " + reason)
	}
}
