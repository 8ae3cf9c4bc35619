package bounded

import (
	"testing"
	"time"
)

func TestRunAndAllReturnByTheirDeadline(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	begin := time.Now()
	if Run(50*time.Millisecond, func() { <-block }) {
		t.Fatal("a step that never ends was reported finished")
	}
	if !Run(time.Second, func() {}) {
		t.Fatal("a step that ends at once was reported unfinished")
	}
	if left := All(50*time.Millisecond, func() {}, func() { <-block }, func() { <-block }); left != 2 {
		t.Fatalf("All: %d left, want 2", left)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
}
