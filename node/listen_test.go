package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node"
)

// Issue 36 item 13: a server binary that answers --version but never listens is named, said never to have
// listened, and given up on within the listen bound, without the two retries meant for a port race.
// Before, the start took 45 s (three tries of 15 s) and said "n1 not ready after 15s".
func TestServerThatNeverListens(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-server")
	script := "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'Redis server v=7.0.15'; exit 0; }\nexec sleep 600.136\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := node.Start(context.Background(), node.Config{Name: "n1", Dir: filepath.Join(dir, "n1"), Password: "p",
		Server: node.Server{Path: bin, Name: "redis", Version: "7.0.15", From: bin}})
	took := time.Since(begin)
	if !errors.As(err, new(node.NeverListened)) || !strings.Contains(err.Error(), "n1: the server binary "+bin+" never listened") {
		t.Fatalf("start of a server that never listens: %v", err)
	}
	if took > 12*time.Second { // the listen bound (5 s) with room for a loaded machine; before, 45 s
		t.Fatalf("the start gave up after %s", took)
	}
}
