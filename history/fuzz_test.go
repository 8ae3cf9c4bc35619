package history

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzRead: whatever the input, Read returns a history or an error naming a line, never panics, and what it
// accepts holds together (every completion belongs to an invoke, nothing follows the end record, every
// number is within bounds), and the decoder's fast path agrees with encoding/json on every line it takes.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		metaLine + `{"type":"invoke","time":2,"id":1,"client":"c1","thread":1,"key":"k","owner":"u:1","f":"acquire","args":{"lease_ms":30000}}` + "\n" +
			`{"type":"ok","time":3,"id":1,"f":"acquire","value":1}` + "\n" + `{"type":"end","time":4,"f":"completed"}` + "\n",
		metaLine + `{"type":"fault","time":2,"client":"nemesis","f":"partition","phase":"start","targets":["c1->n1"]}` + "\n" +
			`{"type":"cs","time":5,"enter":3,"exit":5,"token":7}` + "\n" + `{"type":"invoke","time":6,"id":2,"f":"rel`,
		metaLine + metaLine,
		"\x00\x00\x00",
		`{"type":"end","time":1,"f":"interrupted","detail":"SIGINT"}` + "\n" + `{"type":"ok","id":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := newDecoder()
		for _, line := range bytes.Split(in, []byte("\n")) {
			sameAsJSON(t, d, line) // the fast path reads a line as encoding/json would, or not at all
		}
		h, err := Read(bytes.NewReader(in))
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for _, o := range h.Ops {
			if c := o.Complete; c != nil && (c.Type != Ok && c.Type != Fail && c.Type != Unknown || c.Time < o.Invoke.Time) {
				t.Fatalf("operation %+v", o)
			}
			inv := o.Invoke.Record()
			for _, r := range []*Record{&inv, o.CompleteRecord()} {
				if r != nil && checkNumbers(r) != nil {
					t.Fatalf("out-of-range record accepted: %+v", r)
				}
			}
		}
		if h.Ended != nil && (h.Ended.Type != End || h.Truncated) {
			t.Fatalf("ended %+v", h.Ended)
		}
		_ = h.Windows()
	})
}
