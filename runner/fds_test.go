package runner

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/topology"
)

// The bound covers the peaks measured on the process backend (README, "Descriptors").
func TestDescriptorsNeededCoversMeasuredPeaks(t *testing.T) {
	for _, m := range []struct {
		topo           string
		nodes, clients int
		peak           int
	}{
		{topology.Single, 1, 40, 411},
		{topology.Redlock, 5, 10, 302},
		{topology.Sentinel, 3, 30, 522},
		{topology.Cluster, 6, 30, 1303},
	} {
		o := Defaults()
		o.Topology, o.Nodes, o.Clients = m.topo, m.nodes, m.clients
		if need, how := descriptorsNeeded(o, nil); need < m.peak {
			t.Errorf("%s, %d clients: need %d (%s) is below the measured peak %d", m.topo, m.clients, need, how, m.peak)
		}
	}
	o := Defaults()
	o.Clients = 200
	if need, _ := descriptorsNeeded(o, nil); need != 200*16+40+64 {
		t.Errorf("single, 200 clients: need %d", need)
	}
	o.Worker.Client = "naive" // a worker's links each have a wire tap behind them: a listener, two more per connection
	if need, _ := descriptorsNeeded(o, nil); need != 200*27+40+64 {
		t.Errorf("single, 200 worker clients: need %d", need)
	}
}

// A soft limit below the need is raised to the hard limit when that is enough.
func TestCheckDescriptorsRaisesSoftLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Topology, o.Clients = topology.Single, 20
	need, _ := descriptorsNeeded(o, nil)
	if orig.Max < uint64(need)+1 {
		t.Skipf("hard limit %d is below the need %d", orig.Max, need)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig)
	low := orig
	low.Cur = uint64(need) - 1
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	said, err := checkDescriptors(o, nil)
	if err != nil {
		t.Fatalf("refused with the hard limit %d above the need %d: %v", orig.Max, need, err)
	}
	var now syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur != orig.Max {
		t.Fatalf("soft limit %d, want the hard limit %d", now.Cur, orig.Max)
	}
	if !strings.Contains(said, fmt.Sprintf("up to %d file descriptors", need)) {
		t.Fatalf("the need was not said up front: %q", said)
	}
	o.Clients = 1 << 26 // 2^30 descriptors: beyond any limit Linux allows, refused as bad input
	if _, err := checkDescriptors(o, nil); err == nil || !IsUsage(err) {
		t.Fatalf("an impossible need: %v, want a usage error", err)
	}
}

// A run with operations that failed for want of descriptors ends with an error and a note, unless it
// found a violation, which stands.
func TestNoteRanOut(t *testing.T) {
	rec := history.NewRecorder(io.Discard, history.NewClock())
	if err := noteRanOut(rec, &report.Results{Valid: checker.Valid}, t.TempDir()); err != nil {
		t.Fatalf("no failure, yet: %v", err)
	}
	emfile := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	rec.Invoke(history.Record{Client: "c1", F: "acquire"}).Fail(nil, emfile)
	rec.Invoke(history.Record{Client: "c1", F: "acquire"}).Fail(nil, net.ErrClosed)
	for _, v := range []checker.Validity{checker.Valid, checker.Unknown} {
		res := &report.Results{Valid: v}
		err := noteRanOut(rec, res, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "1 operations failed") || len(res.Notes) != 1 {
			t.Fatalf("%v: %v, notes %v", v, err, res.Notes)
		}
	}
	res := &report.Results{Valid: checker.Invalid}
	if err := noteRanOut(rec, res, t.TempDir()); err != nil || len(res.Notes) != 1 {
		t.Fatalf("invalid: %v, notes %v", err, res.Notes)
	}
}
