package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// overtaken finds, per client, a protocol request (acquire, release, or extend, recorded as renew) of one
// thread that was sent after a request of another thread of that client and answered at least margin
// before it: proof that the worker served the two at once. A worker that serializes its requests answers
// them in the order they came.
func overtaken(h *history.History, margin time.Duration) map[string]string {
	type span struct {
		thread     int64
		f          string
		start, end int64
	}
	per := map[string][]span{}
	for _, op := range h.Ops {
		c := op.Invoke
		if c.Src != "" || op.Complete == nil || (c.F != "acquire" && c.F != "release" && c.F != "renew") {
			continue
		}
		per[c.Client] = append(per[c.Client], span{c.Thread, c.F, c.Time, op.Complete.Time})
	}
	out := map[string]string{}
	for client, spans := range per {
		for _, a := range spans {
			for _, b := range spans {
				if a.thread != b.thread && b.start > a.start && b.end+int64(margin) <= a.end {
					out[client] = fmt.Sprintf("%s/%d's %s answered %v before %s/%d's earlier %s", client, b.thread, b.f,
						time.Duration(a.end-b.end), client, a.thread, a.f)
					break
				}
			}
			if out[client] != "" {
				break
			}
		}
	}
	return out
}

// Every shipped library worker but Redisson (redisson_test.go) runs four application threads on one client
// instance, fault-free: valid, each of the 12 threads of 3 clients is an owner, and on every client a later
// request of one thread was answered while an earlier one of another thread was still in the library (a
// worker that serializes its threads fails that). redis-py runs both its flavours: OS threads on its sync
// Lock, and tasks on one event loop on redis.asyncio's (lcp.py's asyncio mode).
func TestWorkerThreadsConcurrent(t *testing.T) {
	useWorkerCache(t)
	for name, args := range map[string][]string{
		"redis-py":           {"--client", "redis-py"},
		"redis-py-asyncio":   {"--client", "redis-py", "--client-option", "asyncio=true"},
		"pottery":            {"--client", "pottery"},
		"python-redis-lock":  {"--client", "python-redis-lock"},
		"aioredlock-asyncio": {"--client", "aioredlock"},
		"redis-semaphore":    {"--client", "redis-semaphore"},
		"node-redlock":       {"--client", "node-redlock"},
		"redsync":            {"--client", "redsync"},
		"redislock":          {"--client", "redislock"},
	} {
		asyncio := strings.HasSuffix(name, "-asyncio")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, dir := run(t, append([]string{"run", "--threads", "4", "--clients", "3", "--time", "6s",
				"--quiet", "1s", "--seed", "1"}, args...)...)
			if code != exitValid {
				t.Fatalf("exit %d, want %d (valid): %+v", code, exitValid, readResults(t, dir).Checkers)
			}
			got := owners(t, dir)
			for c := 1; c <= 3; c++ {
				for th := 1; th <= 4; th++ {
					if o := fmt.Sprintf("c%d/%d", c, th); !got[o] {
						t.Errorf("no acquire by %s in the history (have %v)", o, got)
					}
				}
			}
			h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			// The worker says which flavour ran in init_ok's runtime, kept in the meta record.
			var meta struct {
				Client struct {
					Runtime string `json:"runtime"`
				} `json:"client"`
			}
			if h.Meta == nil || json.Unmarshal(h.Meta.Data, &meta) != nil {
				t.Fatal("no meta record naming the worker's runtime")
			}
			if strings.Contains(meta.Client.Runtime, "asyncio") != asyncio {
				t.Errorf("runtime %q: want asyncio %v", meta.Client.Runtime, asyncio)
			}
			// Each client runs the same worker code: one client whose threads overtook each other shows that
			// the worker runs them at once (a serializing worker shows it on none). Requiring it of every client
			// asked for a coincidence (a CI run's c3 had none in 6 s on one key).
			seen := overtaken(h, 100*time.Millisecond)
			if len(seen) == 0 {
				t.Error("no client had a request of one thread answered while another thread's earlier one was " +
					"in the library: the worker runs its threads one at a time")
			}
			for _, s := range seen {
				t.Log(s)
			}
		})
	}
}
