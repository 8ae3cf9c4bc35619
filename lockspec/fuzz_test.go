package lockspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The parser never panics, any error is one line naming the file, and a spec it accepts has every
// operation its family needs, each with a grant (or release, extend, count) its replies can map to.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	for _, name := range []string{"setnx-broken.yaml", "rwlock.yaml", "semaphore.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "examples", "locks", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b, "f.yaml", "")
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "f.yaml: ") {
				t.Fatalf("error %q: not one line naming the file", msg)
			}
			return
		}
		fo := familyOps[map[string]string{"mutex": "mutex", "rwlock": "rwlock", "expirable-semaphore": "semaphore"}[s.Family.Name]]
		for _, name := range fo.required {
			op := s.Ops[name]
			if op == nil {
				t.Fatalf("accepted without %s", name)
			}
			for _, o := range required[op.class] {
				if !op.Reply.has(o) {
					t.Fatalf("%s accepted with no reply mapped to %s", name, o)
				}
			}
			for _, r := range []any{nil, int64(0), int64(1), "OK", []any{}} {
				op.Reply.classify(r)
			}
		}
		if s.WatchdogEvery > 0 && s.Ops[s.WatchdogOp] == nil {
			t.Fatal("a watchdog without its operation")
		}
	})
}
