// Package dockertest gives docker-backend tests an engine and the offline Redis image, or skips them with
// the reason.
package dockertest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node/docker"
)

var (
	once   sync.Once
	reason string
)

// Require skips t unless a Docker engine answers; it builds the offline image once if it is missing. It
// holds the machine's docker-test lock until t ends: tests in other processes (other packages, the shards
// of make test) list every container under lockcheck's label and build the same image tag, so docker tests
// of different processes take turns; tests of one process share the lock.
func Require(t testing.TB) {
	t.Helper()
	if err := machineLock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(machineUnlock)
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

var (
	lockMu      sync.Mutex
	lockHolders int
	lockFile    *os.File
)

// machineLock takes the flock on the first holder in this process; later holders of the process only
// count, so a test and its subtests (or parallel tests of one package) never wait on each other.
func machineLock() error {
	lockMu.Lock()
	defer lockMu.Unlock()
	if lockHolders == 0 {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "lockcheck-docker-tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return err
		}
		lockFile = f
	}
	lockHolders++
	return nil
}

func machineUnlock() {
	lockMu.Lock()
	defer lockMu.Unlock()
	lockHolders--
	if lockHolders == 0 {
		_ = syscall.Flock(int(lockFile.Fd()), syscall.LOCK_UN)
		lockFile.Close()
		lockFile = nil
	}
}
