package history

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const metaLine = `{"type":"meta","time":1,"data":{"lock":"reentrant"}}` + "\n"

// Crafted numbers, meta records and end records are refused with the line that holds them.
func TestReadRefusesCraftedRecords(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"negative lease":       {metaLine + `{"type":"invoke","time":2,"id":1,"f":"acquire","args":{"lease_ms":-30000}}` + "\n", "line 2: args.lease_ms -30000"},
		"overflowing lease":    {metaLine + `{"type":"invoke","time":2,"id":1,"f":"acquire","args":{"lease_ms":10000000000000}}` + "\n", "line 2: args.lease_ms"},
		"negative time":        {metaLine + `{"type":"invoke","time":-5,"id":1}` + "\n", "line 2: time -5"},
		"huge section exit":    {metaLine + `{"type":"cs","time":1,"enter":1,"exit":9223372036854775807}` + "\n", "line 2: exit"},
		"second meta":          {metaLine + metaLine, "line 2: a second meta record (the first is on line 1)"},
		"meta not first":       {`{"type":"fault","time":1,"f":"kill"}` + "\n" + metaLine, "line 2: the meta record must be the first"},
		"record after the end": {metaLine + `{"type":"end","time":3,"f":"completed"}` + "\n" + `{"type":"invoke","time":4,"id":1}` + "\n", "line 3: a \"invoke\" record after the end record"},
		"two end records":      {metaLine + `{"type":"end","time":3,"f":"completed"}` + "\n" + `{"type":"end","time":4,"f":"completed"}` + "\n", "line 3:"},
		"cut short after end":  {metaLine + `{"type":"end","time":3,"f":"completed"}` + "\n" + `{"type":"invoke","ti`, "line 3:"},
		"unknown end reason":   {metaLine + `{"type":"end","time":3,"f":"fine"}` + "\n", "line 2: end record with unknown reason"},
		"garbage last line":    {metaLine + "\x00\x00\x00garbage", "line 2:"},
		"closed bad last line": {metaLine + `{"type":"invoke","time":x}`, "line 2:"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

// Only a last line that is the start of a record counts as cut short.
func TestReadTruncatedOnlyForARecordPrefix(t *testing.T) {
	for _, last := range []string{`{"type":"invoke","time":3,"id":2,"f":"rel`, `{`, `{"type":"ok","args":{"lease_ms":1`} {
		h, err := Read(strings.NewReader(metaLine + last))
		if err != nil || !h.Truncated {
			t.Fatalf("%q: err %v, truncated %v", last, err, h != nil && h.Truncated)
		}
	}
}

// A line longer than MaxLine is refused as soon as it is seen, without reading the rest of the input.
func TestReadBoundsLineLength(t *testing.T) {
	r := &zeros{}
	_, err := Read(r)
	if err == nil || !strings.Contains(err.Error(), "line 1: longer than") {
		t.Fatalf("err = %v", err)
	}
	if r.n > 2*MaxLine {
		t.Fatalf("read %d bytes before refusing", r.n)
	}
	long := metaLine + `{"type":"fault","detail":"` + strings.Repeat("x", MaxLine) + `"}` + "\n"
	if _, err := Read(strings.NewReader(long)); err == nil || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Fatalf("err = %v", err)
	}
}

// zeros is /dev/zero that counts what was read.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += len(p)
	return len(p), nil
}

// The end record round-trips and is the history's Ended.
func TestRecorderEndRecord(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, NewClock())
	r.Write(Record{Type: Meta, Data: []byte(`{}`)})
	r.End(EndInterrupted, "SIGINT")
	h, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Ended == nil || EndReason(h.Ended.F) != EndInterrupted || h.Ended.Detail != "SIGINT" {
		t.Fatalf("ended %+v", h.Ended)
	}
}

// The first write error closes Failed at once and later records are dropped.
func TestRecorderSignalsWriteError(t *testing.T) {
	w := &failAfter{n: 2}
	r := NewRecorder(w, NewClock())
	r.Write(Record{Type: Meta})
	select {
	case <-r.Failed():
		t.Fatal("failed before any error")
	default:
	}
	r.Invoke(Record{F: "acquire"})
	r.Invoke(Record{F: "acquire"})
	select {
	case <-r.Failed():
	default:
		t.Fatal("a write error was not signalled")
	}
	if !errors.Is(r.Err(), errFull) || !errors.Is(r.Close(), errFull) || w.calls != 3 {
		t.Fatalf("err %v, %d writes", r.Err(), w.calls)
	}
	r.Invoke(Record{F: "acquire"})
	if w.calls != 3 {
		t.Fatal("wrote after the error")
	}
}

var errFull = errors.New("no space left on device")

type failAfter struct{ n, calls int }

func (f *failAfter) Write(p []byte) (int, error) {
	f.calls++
	if f.calls > f.n {
		return 0, errFull
	}
	return len(p), nil
}

// Nothing is written after the end record, so a run abandoned mid-teardown still leaves a readable history.
func TestRecorderWritesNothingAfterEnd(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, NewClock())
	r.Write(Record{Type: Meta})
	r.End(EndCompleted, "")
	r.Invoke(Record{F: "acquire"})
	r.Fault("heal", "final", nil, "")
	if _, err := Read(&buf); err != nil {
		t.Fatal(err)
	}
}
