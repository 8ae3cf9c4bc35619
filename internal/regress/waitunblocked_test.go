// Package regress holds regression tests that cross packages: a real Redis, a lock client and what the
// history says about it.
package regress_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
)

// The CLUSTER FAILOVER false alarm (issue 12, item 6): a lock script runs on the primary, the WAIT after it
// blocks (the replica has not acknowledged yet), and the primary is demoted, which answers the blocked WAIT
// "UNBLOCKED force unblock ... (master -> replica?)". The script had applied, so the history must not record
// the command as failed: a "fail" release with its reply reads as a refusal ("not your lock"), which the
// lost-lock checker and porcupine took for a lost lock; a "fail" acquire reads as not granted, although it
// was. Here a paused replica holds the WAIT and REPLICAOF demotes the primary, as a FORCE or TAKEOVER
// failover does on a cluster.
func TestWaitUnblockedByDemotionIsNotADefiniteFailure(t *testing.T) {
	ctx := context.Background()
	primary := redistest.Start(t, node.PersistNone)
	admin := redistest.Client(t, primary.Addr(), primary.Password())
	replica := redistest.StartConfig(t, node.Config{Name: "n2", Password: primary.Password(),
		Extra: []string{"replicaof 127.0.0.1 " + fmt.Sprint(primary.Port())}})
	waitFor(t, "the replica to attach and acknowledge", func() bool {
		return strings.Contains(admin.Info(ctx, "replication").Val(), "state=online") &&
			admin.Do(ctx, "WAIT", 1, 1000).Val() == int64(1)
	})

	buf := &bytes.Buffer{}
	rec := history.NewRecorder(buf, history.NewClock())
	scripts, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := locks.DefaultRedissonConfig()
	cfg.SyncRetries, cfg.RetryAttempts = 0, 0
	// WAIT must still be blocked when the demotion comes, on a loaded machine too.
	cfg.SlavesSyncTimeout, cfg.Timeout = 20*time.Second, 30*time.Second
	r := locks.NewRedisson("c1", locks.ClientConfig{Addr: primary.Addr(), Password: primary.Password()}, cfg, scripts, rec)
	defer r.Close()
	l := r.Lock("orders", 1)
	if ok, err := l.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("synced acquire: %v %v", ok, err)
	}

	if err := replica.Pause(); err != nil { // no acknowledgement now: the next WAIT blocks
		t.Fatal(err)
	}
	defer replica.Resume()
	done := make(chan error, 1)
	go func() { done <- l.Unlock(ctx) }()
	waitFor(t, "the release's WAIT to block", func() bool {
		return strings.Contains(admin.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	if admin.Exists(ctx, "orders").Val() != 0 {
		t.Fatal("the release script did not run before its WAIT")
	}
	// Demote the primary (towards a port nothing listens on: only the role change matters).
	if err := admin.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("unlock returned %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the blocked WAIT was never answered")
	}

	h, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var release *history.Operation
	for i := range h.Ops {
		if h.Ops[i].Invoke.F == "release" {
			release = &h.Ops[i]
		}
	}
	if release == nil {
		t.Fatal("no release recorded")
	}
	if release.Outcome() == history.Fail {
		t.Fatalf("the release that applied is recorded as failed (%s), which reads as \"not held\"",
			release.Complete.Error)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
