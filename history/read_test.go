package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestRecorderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, NewClock())
	r.Write(Record{Type: Meta, Data: []byte(`{"lock":"x"}`)})
	op := r.Invoke(Record{Client: "c1", Thread: 1, Key: "k", Owner: "u:1", F: "acquire", Args: map[string]int64{"lease_ms": 5}})
	op.Ok(nil, nil)
	r.Invoke(Record{Client: "c2", F: "acquire"}).Unknown(nil)
	r.Invoke(Record{Client: "c3", F: "release"}) // never completes: the run died
	r.Fault("partition", "start", []string{"c1->n1"}, "")
	r.Section(Record{Client: "c1", Key: "k", Enter: 10, Exit: 20}, false)
	h, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta == nil || len(h.Ops) != 3 || len(h.Faults) != 1 || len(h.Sections) != 1 {
		t.Fatalf("parsed %+v", h)
	}
	if got := []Type{h.Ops[0].Outcome(), h.Ops[1].Outcome(), h.Ops[2].Outcome()}; got[0] != Ok || got[1] != Unknown || got[2] != Unknown {
		t.Fatalf("outcomes %v", got)
	}
	if h.Ops[0].Invoke.Key != "k" || h.Ops[0].Invoke.Args["lease_ms"] != 5 || h.Ops[0].CompleteRecord().Key != "k" {
		t.Fatalf("completion lost fields: %+v", h.Ops[0])
	}
	w := h.Windows()
	if len(w) != 1 || w[0].Healed || w[0].End != h.End() {
		t.Fatalf("an unhealed fault should run to the end: %+v", w)
	}
	if c := r.Counts(); c.Ok != 1 || c.Unknown != 1 || c.Sections != 1 {
		t.Fatalf("counts %+v", c)
	}
}

func TestReadKeepsPrefixOfCutShortFile(t *testing.T) {
	in := `{"type":"invoke","time":1,"id":1,"f":"acquire"}
{"type":"ok","time":2,"id":1,"f":"acquire"}
{"type":"invoke","time":3,"id":2,"f":"rel`
	h, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Truncated || len(h.Ops) != 1 {
		t.Fatalf("truncated=%v ops=%d", h.Truncated, len(h.Ops))
	}
}

func TestReadRejectsBadHistories(t *testing.T) {
	for name, in := range map[string]string{
		"garbage mid-file":         "{\"type\":\"invoke\",\"id\":1}\nnot json\n{\"type\":\"ok\",\"id\":1}\n",
		"completion without call":  `{"type":"ok","time":2,"id":9}` + "\n",
		"completed twice":          "{\"type\":\"invoke\",\"id\":1}\n{\"type\":\"ok\",\"id\":1}\n{\"type\":\"fail\",\"id\":1}\n",
		"unknown type":             `{"type":"bogus"}` + "\n",
		"returns before its call":  "{\"type\":\"invoke\",\"time\":5,\"id\":1}\n{\"type\":\"ok\",\"time\":4,\"id\":1}\n",
		"section exits before in":  `{"type":"cs","enter":5,"exit":4}` + "\n",
		"invoked twice with an id": "{\"type\":\"invoke\",\"id\":1}\n{\"type\":\"invoke\",\"id\":1}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Read(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line") {
				t.Fatalf("err = %v, want one naming the line", err)
			}
		})
	}
}

// The hand-written encoder says exactly what encoding/json would.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	recs := []Record{
		{Type: Invoke, Time: 5, ID: 3, Client: "c1", Thread: 2, Key: "lock-0", Owner: "u-u:1", Src: "wire", F: "acquire",
			Args: map[string]int64{"wait_ms": 5000, "lease_ms": 0, "attempt": 2}},
		{Type: Ok, Value: Int64(0)},
		{Type: Fail, Value: Int64(-1), Error: "quote \" backslash \\ newline \n <html> & ünïcode"},
		{Type: Fault, Client: "nemesis", F: "partition", Phase: "start", Targets: []string{"c1->n1", "c2->n1"}, Detail: "x"},
		{Type: Section, Enter: 1, Exit: 2, Token: 9, Rejected: true, Until: 3, Node: "n2"},
		{Type: Meta, Data: []byte(`{"lock":"reentrant"}`)},
		{},
	}
	for _, r := range recs {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRecord(nil, &r); string(got) != string(want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	}
}

// A history with no fault gives an empty window list, which results.json writes as [], not null.
func TestWindowsEmptyNotNil(t *testing.T) {
	var h History
	if w := h.Windows(); w == nil || len(w) != 0 {
		t.Fatalf("Windows() = %#v, want an empty non-nil slice", w)
	}
}

// The live counts (the status line's) are the clients' own operations, as the final stats count them: a
// worker run's wire records are the same calls' commands again and are left out.
func TestCountsLeaveOutWireRecords(t *testing.T) {
	r := NewRecorder(&bytes.Buffer{}, NewClock())
	r.Invoke(Record{Client: "c1", F: "tryLock"}).Ok(nil, nil)
	r.Invoke(Record{Client: "c1", F: "acquire", Src: WireSrc}).Ok(nil, nil)
	r.Invoke(Record{Client: "c1", F: "release", Src: WireSrc}).Fail(nil, nil)
	if c := r.Counts(); c.Ok != 1 || c.Fail != 0 || c.Unknown != 0 {
		t.Fatalf("counts %+v: want the one client operation", c)
	}
}

// Restart moves the zero of every copy of a clock: the run's clock starts with the workload, whoever
// copied it during start-up (the wire session does).
func TestClockRestartMovesEveryCopy(t *testing.T) {
	c := NewClock()
	copied := c
	c.Restart()
	if copied.base.Load() != c.base.Load() {
		t.Fatal("a copy of the clock kept its old zero")
	}
}
