package history

import (
	"io"
	"testing"
	"unsafe"
)

// Recording an operation (invoke and completion, with args) allocates only the handle that completes it:
// it runs once per lock command on the clients' hot path.
func TestRecordAllocs(t *testing.T) {
	r := NewRecorder(io.Discard, NewClock())
	args := map[string]int64{"lease_ms": 30000, "wait_ms": 5000, "nested": 0}
	value := Int64(1)
	n := testing.AllocsPerRun(1000, func() {
		op := r.Invoke(Record{Client: "c1", Thread: 1, Key: "lock-1", Node: "n1", Owner: "u:1", F: "acquire", Args: args})
		op.Ok(value, args)
	})
	if n > 1 {
		t.Fatalf("%v allocations per recorded operation, want at most 1 (the Op)", n)
	}
}

// A read operation keeps its invoke and completion in 200 B, not as two 288 B Records: a check holds a
// million of them.
func TestOperationIsCompact(t *testing.T) {
	if n := unsafe.Sizeof(Operation{}) + unsafe.Sizeof(Result{}); n > 200 {
		t.Fatalf("an operation takes %d B, want at most 200", n)
	}
}
