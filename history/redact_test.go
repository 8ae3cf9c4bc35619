package history

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/redact"
)

// Every text of every record, and the meta's payload, is written without the run's secret, whichever form
// it came in; the caller's record is left as it was; a record without it costs no allocation.
func TestRecorderRedacts(t *testing.T) {
	secret := `s3cr@t/"pw`
	var buf bytes.Buffer
	r := NewRecorder(&buf, NewClock())
	r.Redact(redact.New(secret))
	js, _ := json.Marshal(secret)
	forms := []string{secret, url.QueryEscape(secret), strings.Trim(string(js), `"`)}
	meta, _ := json.Marshal(map[string]any{"client": map[string]string{"library": "lib " + forms[0], "version": forms[1]}, "seed": 1})
	targets := []string{"n1", forms[2]}
	r.Write(Record{Type: Meta, Data: meta})
	op := r.Invoke(Record{Client: "c1", Key: forms[0], Owner: forms[1], F: "acquire"})
	op.Fail(nil, io.ErrUnexpectedEOF)
	op = r.Invoke(Record{Client: "c1", F: "release"})
	op.Unknown(&url.Error{Op: "Get", URL: "redis://:" + url.QueryEscape(secret) + "@h", Err: io.EOF})
	r.Write(Record{Type: Event, Client: "c1", F: forms[2], Detail: "lost: " + forms[0] + " " + forms[1]})
	r.Fault("kill", "start", targets, forms[1])
	r.End(EndFailed, "worker: "+secret)
	out := buf.String()
	for _, f := range append(forms, strings.Trim(string(js), `"`)) {
		if strings.Contains(out, f) {
			t.Errorf("the history holds %q:\n%s", f, out)
		}
	}
	if n := strings.Count(out, redact.Mark); n < 11 {
		t.Errorf("%d REDACTED, want 11:\n%s", n, out)
	}
	if targets[1] != forms[2] {
		t.Errorf("the caller's targets were changed: %q", targets)
	}
	h, err := Read(strings.NewReader(out))
	if err != nil || h.Meta == nil {
		t.Fatalf("the redacted history does not read back: %v", err)
	}
	r = NewRecorder(io.Discard, NewClock())
	r.Redact(redact.New(secret))
	args := map[string]int64{"lease_ms": 30000}
	if n := testing.AllocsPerRun(1000, func() {
		r.Invoke(Record{Client: "c1", Thread: 1, Key: "lock-1", Node: "n1", Owner: "u:1", F: "acquire", Args: args}).Ok(nil, args)
	}); n > 1 {
		t.Errorf("%v allocations per recorded operation with a redactor, want at most 1", n)
	}
}

// The cost of redaction on the hot path: go test -run - -bench Record ./history/
func BenchmarkRecordOperation(b *testing.B) {
	for _, name := range []string{"plain", "redacted"} {
		b.Run(name, func(b *testing.B) {
			r := NewRecorder(io.Discard, NewClock())
			if name == "redacted" {
				r.Redact(redact.New("0123456789abcdef0123456789abcdef"))
			}
			args := map[string]int64{"lease_ms": 30000}
			for b.Loop() {
				r.Invoke(Record{Client: "c1", Thread: 1, Key: "lock-1", Node: "n1", Owner: "5f0c3e1a-2b:1", F: "acquire", Args: args}).Ok(nil, args)
			}
		})
	}
}
