package wire

import (
	"fmt"
	"strings"
	"testing"
)

// logObserver writes "name args -> reply" per command, in the order the matcher settles them, and checks
// that each command is settled exactly once.
type logObserver struct {
	t       testing.TB
	log     []string
	seen    int
	settled map[*Command]bool
}

func newLog(t testing.TB) *logObserver { return &logObserver{t: t, settled: map[*Command]bool{}} }

func (o *logObserver) Command(c *Command) { o.seen++ }

func (o *logObserver) settle(c *Command, s string) {
	if o.settled[c] {
		o.t.Fatalf("%s settled twice", c.Name)
	}
	o.settled[c] = true
	o.log = append(o.log, c.Name+argText(c)+" -> "+s)
}

func (o *logObserver) Reply(c *Command, v Value)  { o.settle(c, v.String()) }
func (o *logObserver) Lost(c *Command, why error) { o.settle(c, "lost") }

func argText(c *Command) string {
	if len(c.Args) == 0 {
		return ""
	}
	var s []string
	for _, a := range c.Args {
		s = append(s, string(a))
	}
	return " " + strings.Join(s, " ")
}

func cmd(args ...string) string {
	s := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	return s
}

// run feeds the client's bytes and then the server's (a reply never precedes its command), in chunks of
// n bytes, then closes the connection.
func run(t testing.TB, client, server string, n int) (*logObserver, *Conn) {
	o := newLog(t)
	c := NewConn(o, func() int64 { return 0 })
	for _, dir := range []struct {
		s    string
		feed func([]byte)
	}{{client, c.FromClient}, {server, c.FromServer}} {
		for i := 0; i < len(dir.s); i += n {
			dir.feed([]byte(dir.s[i:min(i+n, len(dir.s))]))
		}
	}
	c.Close()
	if o.seen != len(o.settled) {
		t.Fatalf("%d commands seen, %d settled", o.seen, len(o.settled))
	}
	return o, c
}

// Replies are matched in order; the client's whole pipeline may be sent before the first reply.
func TestConnPipelineInOrder(t *testing.T) {
	client := cmd("EVAL", "s", "1", "k", "30000", "o:1") + cmd("WAIT", "1", "1000") + cmd("GET", "k") + cmd("PING")
	server := "$-1\r\n:1\r\n$1\r\nv\r\n+PONG\r\n"
	want := "eval s 1 k 30000 o:1 -> nil|wait 1 1000 -> 1|get k -> \"v\"|ping -> \"PONG\""
	for _, n := range []int{1, 3, 1000} {
		// the client's bytes all go first: replies follow commands whatever the chunking
		o := newLog(t)
		c := NewConn(o, func() int64 { return 0 })
		c.FromClient([]byte(client))
		for i := 0; i < len(server); i += n {
			c.FromServer([]byte(server[i:min(i+n, len(server))]))
		}
		c.Close()
		if got := strings.Join(o.log, "|"); got != want {
			t.Fatalf("chunk %d:\n got %s\nwant %s", n, got, want)
		}
	}
}

func TestConnLostAtClose(t *testing.T) {
	o, c := run(t, cmd("SET", "a", "1")+cmd("GET", "a")+cmd("MULTI")+cmd("INCR", "a"), "+OK\r\n", 1000)
	want := "set a 1 -> \"OK\"|get a -> lost|multi -> lost|incr a -> lost"
	if got := strings.Join(o.log, "|"); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
}

// RESP2 pub/sub: confirmations and messages are pushes; PING in subscribed mode is a reply. RESP3 pushes
// (>) interleave with replies anywhere.
func TestConnPubSubPushesAreNotReplies(t *testing.T) {
	client := cmd("SUBSCRIBE", "a", "b") + cmd("PING") + cmd("UNSUBSCRIBE")
	server := "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n" +
		"*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\n0\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n" +
		"*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n"
	for _, n := range []int{1, 7, 1000} {
		o, c := run(t, client, server, n)
		if got := strings.Join(o.log, "|"); got != `ping -> ["pong" ""]` || c.Err() != nil {
			t.Fatalf("chunk %d: %s %v", n, got, c.Err())
		}
	}
	client = cmd("HELLO", "3") + cmd("SUBSCRIBE", "a") + cmd("GET", "k")
	server = "%1\r\n$5\r\nproto\r\n:3\r\n>3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n>3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n$1\r\nv\r\n"
	o, c := run(t, client, server, 5)
	if got := strings.Join(o.log, "|"); got != `hello 3 -> ["proto" 3]|get k -> "v"` || c.Err() != nil {
		t.Fatalf("resp3: %s %v", got, c.Err())
	}
}

// MULTI/EXEC: queued commands get their results from EXEC's reply; one refused at queueing never ran; a
// discarded or aborted transaction never ran.
func TestConnTransactions(t *testing.T) {
	client := cmd("MULTI") + cmd("EVAL", "s", "0") + cmd("NOPE") + cmd("WAIT", "1", "1000") + cmd("EXEC") +
		cmd("MULTI") + cmd("SET", "a", "1") + cmd("DISCARD") +
		cmd("MULTI") + cmd("SET", "b", "1") + cmd("EXEC")
	server := "+OK\r\n+QUEUED\r\n-ERR unknown command 'NOPE'\r\n+QUEUED\r\n*2\r\n:1\r\n:0\r\n" +
		"+OK\r\n+QUEUED\r\n+OK\r\n" +
		"+OK\r\n+QUEUED\r\n*-1\r\n"
	want := []string{
		`nope -> "ERR unknown command 'NOPE'"`, // settled when refused, before EXEC
		`eval s 0 -> 1`, `wait 1 1000 -> 0`, `exec -> [1 0]`,
		`multi -> "OK"`, `set a 1 -> "EXECABORT the transaction did not run"`, `discard -> "OK"`,
		`multi -> "OK"`, `set b 1 -> "EXECABORT the transaction did not run"`, `exec -> nil`,
	}
	for _, n := range []int{1, 4, 10000} {
		o, c := run(t, client, server, n)
		got := o.log[1:] // the first MULTI's "OK"
		if strings.Join(got, "|") != strings.Join(want, "|") || c.Err() != nil {
			t.Fatalf("chunk %d:\n got %q\nwant %q %v", n, got, want, c.Err())
		}
	}
}

// Bytes the matcher cannot follow make it give up on the connection: what was in flight is lost, nothing
// after is recorded, and it never panics.
func TestConnGivesUp(t *testing.T) {
	for name, tc := range map[string]struct{ client, server, why string }{
		"garbage reply":  {cmd("GET", "a") + cmd("GET", "b"), "$1\r\nx\r\n?junk\r\n", "not RESP"},
		"extra reply":    {cmd("GET", "a"), "+OK\r\n+OK\r\n", "reply"},
		"garbage client": {cmd("GET", "a") + "*1\r\n:5\r\n", "", "not an array of bulk strings"},
		"monitor":        {cmd("GET", "a") + cmd("MONITOR"), "+x\r\n", "MONITOR"},
		"client reply":   {cmd("CLIENT", "REPLY", "OFF") + cmd("GET", "a"), "", "CLIENT REPLY"},
	} {
		o, c := run(t, tc.client, tc.server, 3)
		if c.Err() == nil || !strings.Contains(c.Err().Error(), tc.why) {
			t.Fatalf("%s: err %v", name, c.Err())
		}
		answered := 0 // at most the first command, answered before the garbage
		for _, l := range o.log {
			if !strings.HasSuffix(l, "lost") {
				answered++
			}
		}
		if answered > 1 {
			t.Fatalf("%s: %q", name, o.log)
		}
	}
}
