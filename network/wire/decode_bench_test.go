package wire_test

import (
	"io"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/network/wire"
)

// BenchmarkRecordExchange is the tap's CPU cost alone, without the network: decoding one acquire and one
// release script call and their replies, mapping them and writing their four history records (to
// io.Discard). Run: go test -run '^$' -bench RecordExchange ./network/wire/
func BenchmarkRecordExchange(b *testing.B) {
	own, err := locks.LoadScripts("redisson", "")
	if err != nil {
		b.Fatal(err)
	}
	table, err := wire.NewTable()
	if err != nil {
		b.Fatal(err)
	}
	clock := history.NewClock()
	s := wire.NewSession(history.NewRecorder(io.Discard, clock), clock, table)
	c := wire.RecordConn(s, "c1", "n1")
	up := []byte(wire.Cmd("EVALSHA", wire.SHA(own.Source("acquire")), "1", "k", "30000", "6f1c1b1e-0d8c-4a4e-9a3e-1c1f0b9d2a11:1") +
		wire.Cmd("EVALSHA", wire.SHA(own.Source("release")), "3", "k", "redisson_lock__channel:{k}",
			"redisson_unlock_latch:{k}:0123456789abcdef0123456789abcdef", "0", "30000",
			"6f1c1b1e-0d8c-4a4e-9a3e-1c1f0b9d2a11:1", "publish", "18000"))
	down := []byte("$-1\r\n:1\r\n")
	b.SetBytes(int64(len(up) + len(down)))
	b.ReportAllocs()
	for range b.N {
		c.FromClient(up)
		c.FromServer(down)
	}
}
