package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A run must never write a line its own reader refuses (issue 22, item 9): a 2 MB error, a 400 KB text
// that escapes sixfold, a huge event payload and many targets all come back readable, and say they were cut.
func TestHugeTextsAreClippedNotRefused(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, NewClock())
	r.Write(Record{Type: Meta, Data: json.RawMessage(`{"lock":"reentrant"}`)})
	op := r.Invoke(Record{Client: "c1", Thread: 1, Key: "lock-0", F: "acquire"})
	op.Fail(nil, errors.New(strings.Repeat("x", 2<<20)))
	r.Write(Record{Type: Event, Client: "c1", F: "lost", Detail: strings.Repeat("<", 400<<10),
		Data: json.RawMessage(`"` + strings.Repeat("y", 3<<20) + `"`)})
	targets := make([]string, 5000)
	for i := range targets {
		targets[i] = strings.Repeat("n", 300)
	}
	r.Fault("partition", "start", targets, strings.Repeat("é", 300<<10))
	r.End(EndCompleted, "")
	for i, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(line)+1 > MaxLine {
			t.Errorf("line %d: %d bytes", i+1, len(line))
		}
	}
	h, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("the reader refused the recorder's own history: %v", err)
	}
	if len(h.Ops) != 1 || h.Ops[0].Complete == nil || !strings.Contains(h.Ops[0].Complete.Error, "[clipped: 2097152 bytes in all]") {
		t.Fatalf("the clipped error does not say how long it was: %d ops", len(h.Ops))
	}
}
