package wire

import (
	"testing"
)

// Run with: go test -run '^$' -fuzz FuzzDecoder -fuzztime 10s ./network/wire/ (and FuzzConn). The seed
// corpus is in testdata/fuzz.

// FuzzDecoder: any bytes, in either direction, decode without panicking, and the values do not depend on
// where the stream was cut into chunks.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "$-1\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "%1\r\n+a\r\n:1\r\n", ">2\r\n+message\r\n_\r\n",
		"|1\r\n+k\r\n+v\r\n:1\r\n", "PING\r\n", "*1\r\n*1\r\n*1\r\n:1\r\n", "$3\r\na\r\n\r\n", "!2\r\nno\r\n",
	} {
		f.Add([]byte(s), true, uint8(3))
		f.Add([]byte(s), false, uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, commands bool, cut uint8) {
		whole := NewDecoder(commands)
		var a []string
		errWhole := whole.Feed(b, func(v Value) { a = append(a, render(v)) })
		split := NewDecoder(commands)
		var c []string
		var errSplit error
		n := int(cut)%8 + 1
		for i := 0; i < len(b) && errSplit == nil; i += n {
			errSplit = split.Feed(b[i:min(i+n, len(b))], func(v Value) { c = append(c, render(v)) })
		}
		if (errWhole == nil) != (errSplit == nil) {
			// A line-length limit can trip on a different prefix only for inputs longer than it.
			if len(b) < maxLine {
				t.Fatalf("whole: %v, split by %d: %v", errWhole, n, errSplit)
			}
			return
		}
		if len(a) != len(c) {
			t.Fatalf("whole gave %d values, split by %d gave %d", len(a), n, len(c))
		}
		for i := range a {
			if a[i] != c[i] {
				t.Fatalf("value %d: whole %q, split %q", i, a[i], c[i])
			}
		}
	})
}

// FuzzConn: any two byte streams, fed in any interleaving, never panic the matcher, and every command it
// reported is settled exactly once (a reply, or lost) by the time the connection closes.
func FuzzConn(f *testing.F) {
	f.Add([]byte(cmd("MULTI")+cmd("SET", "a", "1")+cmd("EXEC")), []byte("+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n"), uint8(2))
	f.Add([]byte(cmd("SUBSCRIBE", "c")+cmd("PING")), []byte("*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n"), uint8(5))
	f.Add([]byte(cmd("EVAL", "s", "1", "k", "1", "o:1")+cmd("WAIT", "1", "10")), []byte("$-1\r\n:0\r\n"), uint8(1))
	f.Add([]byte(cmd("GET", "a")), []byte("junk"), uint8(0))
	f.Add([]byte(cmd("MULTI")+cmd("X")+cmd("EXEC")+cmd("RESET")), []byte("+OK\r\n-ERR\r\n-EXECABORT\r\n+RESET\r\n"), uint8(7))
	f.Fuzz(func(t *testing.T, client, server []byte, step uint8) {
		o := newLog(t)
		c := NewConn(o, func() int64 { return 0 })
		n := int(step)%16 + 1
		for i, j := 0, 0; i < len(client) || j < len(server); {
			if i < len(client) {
				c.FromClient(client[i:min(i+n, len(client))])
				i += n
			}
			if j < len(server) && (step&1 == 0 || i >= len(client)) {
				c.FromServer(server[j:min(j+n, len(server))])
				j += n
			}
		}
		c.Close()
		if o.seen != len(o.settled) {
			t.Fatalf("%d commands seen, %d settled", o.seen, len(o.settled))
		}
	})
}
