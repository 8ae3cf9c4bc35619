package wire_test

import (
	"bytes"
	"testing"

	_ "github.com/lockcheck/lockcheck/clients/worker" // registers real Redisson's scripts, which the seeds call
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/network/wire"
)

// FuzzRecord: any streams through the recorder (known scripts with any arguments and replies, WAIT, plain
// SET NX) never panic it, and every lock command it starts is completed once the connection closes.
func FuzzRecord(f *testing.F) {
	f.Add([]byte(wire.Cmd("EVALSHA", "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635", "2", "a", "b", "x")+wire.Cmd("WAIT", "1", "1")), []byte("*1\r\n:1\r\n:0\r\n"))
	f.Add([]byte(wire.Cmd("EVALSHA", "1affef780a01e1406cb1968c62918f618d10d6a3", "3", "a", "b", "c", "1")), []byte("*2\r\n:1\r\n+x\r\n"))
	f.Add([]byte(wire.Cmd("EVALSHA", "6866459238a13a701d42f4971f12d9f3a50e2442", "9", "k")), []byte("-ERR\r\n"))
	f.Add([]byte(wire.Cmd("EVALSHA", "49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45", "1", "k", "1", "o:1")), []byte("*2\r\n:-1\r\n$1\r\nx\r\n"))
	f.Add([]byte(wire.Cmd("SET", "k", "o:1", "NX", "PX", "-5")+wire.Cmd("SET", "k", "o", "PX")), []byte("+OK\r\n"))
	f.Add([]byte(wire.Cmd("EVALSHA", "d1ddef65ad80886b5d36e023c99930044ddd653a", "1", "q")), []byte("_\r\n"))
	f.Add([]byte(wire.Cmd("EVALSHA", "38d2b478dfbe264ab67c221b7e4be62245f00ba0", "4", "L", "{L}", "M", "{M}", "1", "2", "u:1", "9", "v")), []byte("*1\r\n:1\r\n"))
	table, err := wire.NewTable()
	if err != nil {
		f.Fatal(err)
	}
	table.SetNX = true
	f.Fuzz(func(t *testing.T, client, server []byte) {
		var buf bytes.Buffer
		clock := history.NewClock()
		s := wire.NewSession(history.NewRecorder(&buf, clock), clock, table)
		c := wire.RecordConn(s, "c1", "n1")
		c.FromClient(client)
		c.FromServer(server)
		c.Close()
		h, err := history.Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range h.Ops {
			if o.Complete == nil {
				t.Fatalf("%s %s left open", o.Invoke.F, o.Invoke.Key)
			}
		}
	})
}
