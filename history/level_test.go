package history

import "testing"

// OnlySrc copies nothing when every operation has the src asked for (each checker asks, and a copy of a
// million operations is 300 MB), and filters when some have another.
func TestOnlySrc(t *testing.T) {
	h := &History{Ops: []Operation{{Invoke: Call{ID: 1}}, {Invoke: Call{ID: 2}}}}
	if h.OnlySrc("") != h {
		t.Fatal("a history of client records was copied")
	}
	if w := h.OnlySrc(WireSrc); len(w.Ops) != 0 {
		t.Fatalf("wire records of a history without any: %+v", w.Ops)
	}
	h.Ops = append(h.Ops, Operation{Invoke: Call{ID: 3, Src: WireSrc}})
	c := h.OnlySrc("")
	if c == h || len(c.Ops) != 2 || len(h.Ops) != 3 {
		t.Fatalf("client records of a mixed history: %d of %d", len(c.Ops), len(h.Ops))
	}
}
