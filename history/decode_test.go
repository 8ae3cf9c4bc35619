package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// sameAsJSON fails t when the fast path takes line and reads it otherwise than encoding/json does.
func sameAsJSON(t *testing.T, d *decoder, line []byte) (fast bool) {
	t.Helper()
	var got, want Record
	if !d.fast(line, &got) {
		return false
	}
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("fast path took %q, which encoding/json refuses: %v", line, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path read %q as\n%+v\nencoding/json as\n%+v", line, got, want)
	}
	return true
}

// The fast path reads what the recorder writes, and leaves every other spelling to encoding/json.
func TestDecodeFastPath(t *testing.T) {
	d := newDecoder()
	var buf bytes.Buffer
	r := NewRecorder(&buf, NewClock())
	r.Invoke(Record{Client: "c1", Thread: 1, Key: "k", Node: "n1", Owner: "u:1", F: "acquire",
		Args: map[string]int64{"lease_ms": 30000, "wait_ms": 5}}).Fail(Int64(-7), nil)
	r.Fault("kill", "start", []string{"n1", "n2"}, "cut") // (a link target c1->n1 is escaped: the slow path)
	r.Write(Record{Type: Section, Time: 9, Client: "c1", Enter: 3, Exit: 9, Token: 4, Rejected: true, Until: 12})
	r.Write(Record{Type: Ok, Time: 10, ID: 1, Src: WireSrc, Error: "x", Value: Int64(0)})
	for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		if len(line) > 0 && !sameAsJSON(t, d, line) {
			t.Errorf("the recorder's own line %q took the slow path", line)
		}
	}
	for _, line := range []string{
		`{"type":"ok","time":1,"Time":2}`,              // encoding/json matches names regardless of case
		`{"type":"ok","time":1,"time":2}`,              // the last one wins there
		`{"type":"ok","args":{"a":1,"a":2}}`,           // merged there
		`{"type":"ok","args":{}}`,                      // an empty, non-nil map there
		`{"type":"ok","value":null}`,                   // null
		`{"type":"ok","time":1.0}`,                     // a float into an int
		`{"type":"ok","time":1e3}`,                     // an exponent
		`{"type":"ok","time":01}`,                      // not JSON
		`{"type":"ok","time":9999999999999999999}`,     // overflow
		`{"type":"o\u006b"}`,                           // an escape
		"{\"type\":\"ok\",\"client\":\"caf\xc3\xa9\"}", // UTF-8
		`{"type":"ok"} x`,                              // trailing data
		` {"type":"ok"}`,                               // leading space
		`{"type":"ok","data":{"a":1}}`,                 // meta payload
		`{"type":"ok","targets":[]}`,
		`{"type":"ok","rejected":1}`,
		`{"type":"ok",}`,
		`{"type":"ok"`,
	} {
		if sameAsJSON(t, d, []byte(line)) {
			t.Errorf("fast path took %q", line)
		}
	}
	for _, line := range []string{`{"type":"ok","time":-0,"value":-12}`, "{\"type\":\"ok\",\"rejected\":false}\r\n"} {
		if !sameAsJSON(t, d, []byte(line)) {
			t.Errorf("fast path refused %q", line)
		}
	}
}

// Records of a read history share equal strings, args maps and values.
func TestDecodeShares(t *testing.T) {
	in := metaLine
	for i := 1; i <= 3; i++ {
		in += `{"type":"invoke","time":2,"id":` + string(rune('0'+i)) + `,"client":"c1","key":"k","owner":"u:1","f":"acquire","args":{"lease_ms":30000}}` + "\n" +
			`{"type":"fail","time":3,"id":` + string(rune('0'+i)) + `,"client":"c1","key":"k","owner":"u:1","f":"acquire","value":1}` + "\n"
	}
	h, err := Read(bytes.NewReader([]byte(in)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := h.Ops[0], h.Ops[2]
	if reflect.ValueOf(a.Invoke.Args).Pointer() != reflect.ValueOf(b.Invoke.Args).Pointer() || a.Complete.Value != b.Complete.Value ||
		unsafe.StringData(a.Invoke.Owner) != unsafe.StringData(b.Invoke.Owner) {
		t.Fatalf("equal fields not shared: %+v %+v", a, b)
	}
}
