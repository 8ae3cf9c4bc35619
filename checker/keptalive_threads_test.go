package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// Two threads of one client share its watchdog: c2/1 released lock-0 at 2.05 s while c2/2, granted at
// 1.5 s, still held it, so the renewal at 3 s keeps c2/2's hold alive: valid. Once c2/2 has released too
// (at 3.5 s), the renewal at 4 s keeps a released lock alive: invalid.
func TestKeptAliveThreads(t *testing.T) {
	call := func(id, thread, inv, done int64, f string) []string {
		return []string{
			fmt.Sprintf(`{"type":"invoke","time":%d,"id":%d,"client":"c2","thread":%d,"key":"lock-0","owner":"c2:%d","f":"%s","args":{"lease_ms":0,"nested":0,"wait_ms":30000}}`,
				inv*1e6, id, thread, thread, f),
			fmt.Sprintf(`{"type":"ok","time":%d,"id":%d,"client":"c2","thread":%d,"key":"lock-0","owner":"c2:%d","f":"%s"}`,
				done*1e6, id, thread, thread, f),
		}
	}
	read := func(lines ...[]string) *history.History {
		var b strings.Builder
		b.WriteString(`{"type":"meta","time":1,"data":{"lock":"reentrant","options":{"timeout":"1s","watchdog":"1500ms"},"checks":{"family":"mutex"}}}` + "\n")
		for _, ls := range lines {
			for _, l := range ls {
				b.WriteString(l + "\n")
			}
		}
		b.WriteString(`{"type":"end","time":40000000000,"f":"completed"}` + "\n")
		h, err := history.Read(strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	held := [][]string{call(1, 1, 1000, 1100, "tryLock"), call(2, 2, 1200, 1500, "tryLock"), call(3, 1, 2000, 2050, "unlock"),
		renewRecord("c2", 900, 3000, 1)}
	if r := (KeptAlive{}).Check(context.Background(), read(held...)); r.Valid != Valid {
		t.Fatalf("c2/2 still held the lock: want valid, got %v: %s", r.Valid, r.Violation)
	}
	released := append(held, call(4, 2, 3400, 3500, "unlock"), renewRecord("c2", 901, 4000, 1))
	if r := (KeptAlive{}).Check(context.Background(), read(released...)); r.Valid != Invalid || r.At != 3500000000 {
		t.Fatalf("both threads had released: want invalid from 3.5 s, got %v at %d: %s", r.Valid, r.At, r.Violation)
	}
}
