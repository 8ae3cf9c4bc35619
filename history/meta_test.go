package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// New options are written as they were when they were a map of duration strings: sorted keys, every key,
// durations as their String. The map here is the one runner built before the options were typed.
func TestOptionsWrittenAsBefore(t *testing.T) {
	d := func(v time.Duration) Duration { return Duration(v) }
	o := Options{Backend: "process", Check: "liveness", CheckTimeout: d(time.Minute), Client: "redisson",
		ClientCmd: "java -jar w.jar", Clients: 8, ClockBump: d(time.Minute), Count: 3, DockerImage: "redis:7",
		External: "dep.yaml", Group: 2, Hold: "10ms-200ms", Jitter: d(50 * time.Millisecond), Keys: 1,
		Latency: d(200 * time.Millisecond), Lease: "1s-10s", Lock: "reentrant", Nemesis: "kill",
		NemesisDuration: d(3 * time.Second), NemesisInterval: d(5 * time.Second), NemesisTargets: "n1",
		NemesisTrigger: true, Nodes: 5, OnLost: "continue", Permits: 2, Persistence: "aof", Quiet: d(1500 * time.Millisecond),
		Readers: "3:1", Reentry: 0.2, Scripts: "s", Seed: 42, Threads: 2, Time: d(30 * time.Second),
		Timeout: d(3 * time.Second), Topology: "sentinel", Wait: "0s-2s", Watchdog: d(30 * time.Second)}
	old := map[string]any{"lock": "reentrant", "topology": "sentinel", "nodes": 5, "nemesis": "kill",
		"nemesis_interval": "5s", "nemesis_duration": "3s", "nemesis_targets": "n1", "nemesis_trigger": true,
		"quiet": "1.5s", "time": "30s", "clients": 8, "keys": 1, "lease": "1s-10s", "watchdog": "30s",
		"wait": "0s-2s", "threads": 2, "timeout": "3s", "hold": "10ms-200ms", "reentry": 0.2, "seed": int64(42),
		"persistence": "aof", "scripts": "s", "check_timeout": "1m0s", "check": "liveness", "permits": int64(2),
		"count": int64(3), "readers": "3:1", "group": 2, "on_lost": "continue", "latency": "200ms", "jitter": "50ms",
		"clock_bump": "1m0s", "backend": "process", "docker_image": "redis:7", "external": "dep.yaml",
		"client": "redisson", "client_cmd": "java -jar w.jar", "client_options": []string(nil),
		"cross_thread": 0, "force_unlock": 0}
	got, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(old)
	if !bytes.Equal(got, want) {
		t.Fatalf("options\n got %s\nwant %s", got, want)
	}
	var back Options
	if err := json.Unmarshal(got, &back); err != nil || back.Timeout.D() != 3*time.Second || back.Quiet.D() != 1500*time.Millisecond {
		t.Fatalf("read back %+v, %v", back, err)
	}
}

// Every committed history's meta record decodes, and a run's is written back byte for byte (its options as
// read).
func TestCommittedMetaRoundTrip(t *testing.T) {
	var paths []string
	for _, root := range []string{"../checker/testdata", "../cmd/lockcheck/testdata/docs", "../internal/regress", "testdata"} {
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && strings.Contains(e.Name(), ".jsonl") {
				paths = append(paths, p)
			}
			return nil
		})
	}
	if len(paths) < 20 {
		t.Fatalf("found %d histories only", len(paths))
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			if r, err = gzip.NewReader(f); err != nil {
				t.Fatal(err)
			}
		}
		line, _ := readLine(bufio.NewReaderSize(r, 1<<16), nil)
		f.Close()
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil || rec.Type != Meta {
			continue // a history without a meta record (a reader test's)
		}
		m, err := DecodeMeta(rec.Data)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !bytes.Contains(rec.Data, []byte(`"plan":`)) {
			continue // written by hand: a run always writes its plan
		}
		got, _ := json.Marshal(m)
		var want bytes.Buffer
		_ = json.Compact(&want, rec.Data)
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: meta written back\n got %s\nwant %s", p, got, want.Bytes())
		}
	}
}
