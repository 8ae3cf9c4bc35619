package runner

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/network/wire"
	"github.com/lockcheck/lockcheck/topology"
)

// WireDoc is where the wire line a worker run may print is explained.
const WireDoc = "docs/protocol.md#what-lockcheck-records-from-the-wire"

// wireRecording records a worker's lock commands from the bytes on its links (network/wire), so that
// porcupine can judge what reached Redis rather than what the worker's API calls suggest.
type wireRecording struct {
	sess *wire.Session
	gate *wireGate
	kind string // topology kind: the records' node label
	w    *ClientProvider
	mu   sync.Mutex
	taps []string // the clients tapped, in a mixed run (whose Go clients record their own commands)
}

// newWireRecording taps every client link of a worker run. Redisson takes its locks with scripts only;
// the other libraries take them with SET NX PX, which the table then maps too.
func newWireRecording(w *ClientProvider, rec *history.Recorder, kind string) (*wireRecording, error) {
	table, err := wire.NewTable()
	if err != nil {
		return nil, err
	}
	table.SetNX = w.spec.Name != "redisson"
	gate := &wireGate{rec: rec, discard: history.NewRecorder(io.Discard, rec.Clock)}
	return &wireRecording{sess: wire.NewSession(gate, rec.Clock, table), gate: gate, kind: kind, w: w}, nil
}

// front is topology.Spec.Front. The label is what the models partition by: each node on redlock, where
// every node is its own lock service; "n1" elsewhere, as the emulation records (a lock that moves with a
// failover is still one lock).
func (w *wireRecording) front(client, node, addr string) (string, error) {
	if !w.w.runsWorker(client) { // a Go client of a mixed run: its own records hold its commands
		return addr, nil
	}
	if w.w.Mixed {
		w.mu.Lock()
		if !slices.Contains(w.taps, client) {
			w.taps = append(w.taps, client)
		}
		w.mu.Unlock()
	}
	label := "n1"
	if topology.KindNamed(w.kind).Masters { // one tap per master; elsewhere the client's first node
		label = node
	}
	return w.sess.Front(addr, client, label)
}

// open lets records through: the meta record has been written, and nothing may precede it.
func (w *wireRecording) open() { w.gate.mu.Lock(); w.gate.open = true; w.gate.mu.Unlock() }

// finish stops the taps (commands in flight end unknown) and records whether the wire history is complete:
// only a history with a wire-complete event is judged on its wire records (kinds). It runs after the
// clients and the topology stopped, before the end record.
func (w *wireRecording) finish(rec *history.Recorder, stderr io.Writer) {
	w.sess.Close()
	problem := w.sess.Stats().Problem()
	w.gate.mu.Lock()
	if !w.gate.open { // no meta record: nothing ran, and nothing may be written before it
		w.gate.mu.Unlock()
		return
	}
	if w.gate.early > 0 {
		if problem == "" {
			problem = "wire:"
		} else {
			problem += ";"
		}
		problem += fmt.Sprintf(" %d lock commands before the run started, not recorded", w.gate.early)
	}
	w.gate.mu.Unlock()
	w.mu.Lock()
	ev := history.Record{Type: history.Event, Time: rec.Clock.Now(), Client: history.WireClient, F: history.WireComplete,
		Targets: w.taps} // none: every client was tapped
	w.mu.Unlock()
	if problem != "" {
		ev.F, ev.Detail = history.WireIncomplete, problem
		fmt.Fprintf(stderr, "lockcheck: %s; porcupine judges the worker's own records (why, and why it is fine: %s)\n", problem, WireDoc)
	}
	rec.Write(ev)
}

// wireGate holds back the records of commands sent before the meta record (a history must begin with
// it): they go nowhere and make the wire history incomplete.
type wireGate struct {
	rec, discard *history.Recorder
	mu           sync.Mutex
	open         bool
	early        int
}

func (g *wireGate) Invoke(r history.Record) *history.Op {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.early++
		return g.discard.Invoke(r)
	}
	return g.rec.Invoke(r)
}
