package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A version the registry does not have, or that is no version of the library, is bad input: one line
// naming the library and the version, exit 254, and nothing of it left in the cache but its lock file.
// It used to be a failed build (255). An unknown library is one line too.
func TestUnknownClientVersion(t *testing.T) {
	useWorkerCache(t)
	for _, tc := range []struct{ client, says string }{
		{"redsync@v9.9.9", "the registry has no redsync v9.9.9"},                   // not a v4 version: refused before asking
		{"redsync@v4.99.0", "the registry has no redsync v4.99.0"},                 // the Go module proxy's answer
		{"redis-py@0.0.1", "the registry has no redis-py 0.0.1"},                   // PyPI's
		{"node-redlock@99.0.0", "the registry has no node-redlock 99.0.0"},         // npm's
		{"nosuch@1.0", "--client nosuch: no such worker"},                          // no such library
		{"redsync-nosuch", "--client redsync-nosuch: no such worker (have: naive"}, // the names it has
	} {
		t.Run(tc.client, func(t *testing.T) {
			stderr := captureStderr(t)
			code, _ := run(t, "run", "--client", tc.client, "--time", "2s", "--quiet", "1s", "--clients", "1")
			out := stderr()
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasPrefix(l, "lockcheck: building worker ") { // the progress line before a build
					lines = append(lines, l)
				}
			}
			if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.says) {
				t.Fatalf("exit %d, want %d and one line saying %q; stderr:\n%s", code, exitUsage, tc.says, out)
			}
			name, version, _ := strings.Cut(tc.client, "@")
			left, _ := filepath.Glob(filepath.Join(workerCache, "workers", name, version+"*"))
			for _, f := range left {
				if !strings.HasSuffix(f, ".lock") {
					t.Fatalf("an unknown version left %s in the cache", f)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(workerCache, "workers", "redsync", "v4.99.0")); err == nil {
		t.Fatal("the unknown version's build folder was kept")
	}
}
