package history

import (
	"slices"
	"strings"
	"testing"
)

// IDs beyond the bit set, negative ones, and an ID reused after its operation completed are refused as
// the map of every ID refused them, each with the error that names what happened.
func TestReadRefusesReusedIDs(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"far id invoked twice":    {"{\"type\":\"invoke\",\"id\":1099511627776}\n{\"type\":\"invoke\",\"id\":1099511627776}\n", "invoked twice"},
		"negative id twice":       {"{\"type\":\"invoke\",\"id\":-3}\n{\"type\":\"invoke\",\"id\":-3}\n", "invoked twice"},
		"reinvoked after its end": {"{\"type\":\"invoke\",\"id\":70}\n{\"type\":\"ok\",\"id\":70}\n{\"type\":\"invoke\",\"id\":70}\n", "invoked twice"},
		"far id completed twice":  {"{\"type\":\"invoke\",\"id\":1099511627776}\n{\"type\":\"ok\",\"id\":1099511627776}\n{\"type\":\"ok\",\"id\":1099511627776}\n", "completed twice"},
		"completed twice":         {"{\"type\":\"invoke\",\"id\":5}\n{\"type\":\"ok\",\"id\":5}\n{\"type\":\"fail\",\"id\":5}\n", "completed twice"},
		"never invoked":           {"{\"type\":\"invoke\",\"id\":5}\n{\"type\":\"ok\",\"id\":6}\n", "never invoked"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// The reader decodes every line into one Record: the meta and end records it keeps, and the operations,
// must be copies, not that Record (which ends up holding the last line).
func TestReadKeepsCopies(t *testing.T) {
	in := `{"type":"meta","time":1,"data":{"lock":"reentrant"}}
{"type":"invoke","time":2,"id":1,"client":"c1","f":"acquire"}
{"type":"invoke","time":3,"id":2,"client":"c2","f":"release"}
{"type":"ok","time":4,"id":1}
{"type":"fail","time":5,"id":2,"error":"x"}
{"type":"end","time":6,"f":"completed"}
`
	h, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if h.Meta.Type != Meta || string(h.Meta.Data) != `{"lock":"reentrant"}` || h.Ended.Type != End || h.Ended.Time != 6 {
		t.Fatalf("meta %+v, end %+v", h.Meta, h.Ended)
	}
	if len(h.Ops) != 2 || h.Ops[0].Invoke.Client != "c1" || h.Ops[1].Invoke.F != "release" ||
		h.Ops[0].Complete.Type != Ok || h.Ops[1].Complete.Error != "x" || h.Ops[1].Complete.Time != 5 {
		t.Fatalf("ops %+v", h.Ops)
	}
}

// A fault never stopped runs to the end of the history, also one started twice and stopped once; a
// stopped one ends at its stop.
func TestWindowsOpenRunToEnd(t *testing.T) {
	h := History{
		Ops: []Operation{{Invoke: Call{Time: 50}, Complete: &Result{Type: Ok, Time: 90}}},
		Faults: []Record{
			{Type: Fault, F: "pause", Phase: "start", Time: 10, Targets: []string{"n1"}},
			{Type: Fault, F: "pause", Phase: "start", Time: 20, Targets: []string{"n1"}},
			{Type: Fault, F: "pause", Phase: "stop", Time: 30, Targets: []string{"n1"}},
			{Type: Fault, F: "kill", Phase: "start", Time: 40},
			{Type: Fault, F: "cut", Phase: "start", Time: 41},
			{Type: Fault, F: "cut", Phase: "stop", Time: 45},
		},
	}
	var got []int64
	for _, w := range h.Windows() {
		got = append(got, w.End)
	}
	if want := []int64{90, 30, 90, 45}; !slices.Equal(got, want) {
		t.Fatalf("window ends %v, want %v", got, want)
	}
}
