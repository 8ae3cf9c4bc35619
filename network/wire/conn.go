package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Command is one command a client sent, waiting for its reply.
type Command struct {
	Name string   // lower case: "eval", "set", ...
	Args [][]byte // the arguments after the name
	Seen int64    // when the tap saw it (run clock), before passing it on
	// Data is the observer's own state for this command (e.g. the history operation it started).
	Data any

	queued bool       // sent inside MULTI: its own reply is QUEUED (or an error), its result comes with EXEC
	tx     []*Command // EXEC and DISCARD: the commands of the transaction
}

// Arg returns argument i (0 is the first after the name), or nil.
func (c *Command) Arg(i int) []byte {
	if i < 0 || i >= len(c.Args) {
		return nil
	}
	return c.Args[i]
}

// Observer hears of a connection's commands and replies, in the connection's order. Command is called
// before the command is passed on to the server and Reply after its reply came back from it, before it is
// passed on to the client, so the times the observer takes bound when the server ran the command.
type Observer interface {
	Command(c *Command)
	// Reply gives the command's reply. For a command inside MULTI it is its element of EXEC's reply, or an
	// error when the transaction was discarded or aborted (the command never ran).
	Reply(c *Command, v Value)
	// Lost says no reply will be seen: the connection closed, or the matcher gave up on it. The command may
	// or may not have run.
	Lost(c *Command, why error)
}

// ErrClosed is why commands in flight when a connection closes are lost.
var ErrClosed = errors.New("connection closed before the reply")

// Conn pairs one connection's commands with their replies: in order (pipelining), skipping pub/sub pushes,
// and resolving MULTI/EXEC. Bytes it cannot follow make it give up on the connection, not panic: the
// commands in flight are lost and the rest of the connection is not recorded.
type Conn struct {
	obs Observer
	now func() int64

	mu         sync.Mutex
	up, down   *Decoder
	pending    []*Command // sent, reply not yet seen
	tx         []*Command // commands queued since MULTI; nil outside a transaction
	inMulti    bool
	subscribed bool // a (p|s)subscribe was sent: push-shaped arrays are pushes (RESP2)
	err        error
}

// NewConn follows one connection; now is the run's clock.
func NewConn(obs Observer, now func() int64) *Conn {
	return &Conn{obs: obs, now: now, up: NewDecoder(true), down: NewDecoder(false)}
}

// Err is why the matcher gave up on the connection, or nil.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// FromClient feeds bytes the client sent, before they are passed on.
func (c *Conn) FromClient(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	if err := c.up.Feed(p, c.command); err != nil {
		c.giveUp(fmt.Errorf("client sent bytes that are not RESP: %w", err))
	}
}

// FromServer feeds bytes the server sent, before they are passed on.
func (c *Conn) FromServer(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	if err := c.down.Feed(p, c.reply); err != nil {
		c.giveUp(fmt.Errorf("server sent bytes that are not RESP: %w", err))
	}
}

// Close ends the connection: every command still waiting is lost.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lose(ErrClosed)
}

func (c *Conn) lose(why error) {
	seen := map[*Command]bool{}
	lost := func(q *Command) {
		if !seen[q] {
			seen[q] = true
			c.obs.Lost(q, why)
		}
	}
	for _, p := range c.pending {
		for _, q := range p.tx {
			lost(q)
		}
		lost(p)
	}
	for _, q := range c.tx { // queued, EXEC not sent yet
		lost(q)
	}
	c.pending, c.tx = nil, nil
}

// giveUp stops following the connection (called with mu held; the first reason is kept).
func (c *Conn) giveUp(why error) {
	if c.err != nil {
		return
	}
	c.lose(why)
	c.err = why
}

// pubsubCommands put a connection into subscribed mode; their confirmations are push-shaped, never replies.
var pubsubCommands = map[string]bool{"subscribe": true, "psubscribe": true, "ssubscribe": true,
	"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true}

// pushKinds are the first elements of RESP2 pub/sub pushes.
var pushKinds = map[string]bool{"message": true, "pmessage": true, "smessage": true, "subscribe": true,
	"psubscribe": true, "ssubscribe": true, "unsubscribe": true, "punsubscribe": true, "sunsubscribe": true}

// unfollowable commands change how replies flow in ways a matcher cannot follow from the bytes alone.
var unfollowable = map[string]string{"monitor": "MONITOR streams replies", "sync": "replication stream",
	"psync": "replication stream"}

func (c *Conn) command(v Value) {
	if c.err != nil {
		return
	}
	if len(v.Elems) == 0 {
		if v.Kind == Inline {
			return // an empty inline line: Redis ignores it
		}
		c.giveUp(errors.New("client sent a command that is not an array of strings"))
		return
	}
	args, err := words(v)
	if err != nil {
		c.giveUp(err)
		return
	}
	cmd := &Command{Name: strings.ToLower(string(args[0])), Args: args[1:], Seen: c.now()}
	if why, ok := unfollowable[cmd.Name]; ok {
		c.giveUp(fmt.Errorf("%s: %s", strings.ToUpper(cmd.Name), why))
		return
	}
	if cmd.Name == "client" && strings.EqualFold(string(cmd.Arg(0)), "reply") {
		c.giveUp(errors.New("CLIENT REPLY: replies may be skipped"))
		return
	}
	if pubsubCommands[cmd.Name] {
		c.subscribed = true // confirmations come as pushes; the command waits for no reply
		return
	}
	switch {
	case c.inMulti && (cmd.Name == "exec" || cmd.Name == "discard"):
		cmd.tx, c.tx, c.inMulti = c.tx, nil, false
		if cmd.tx == nil {
			cmd.tx = []*Command{} // non-nil: this EXEC/DISCARD ends a transaction
		}
	case c.inMulti && cmd.Name != "multi":
		cmd.queued = true
		c.tx = append(c.tx, cmd)
	case cmd.Name == "multi":
		c.inMulti = true
	case cmd.Name == "reset": // ends subscribed mode (at its reply) and discards a transaction
		if c.inMulti {
			cmd.tx, c.tx, c.inMulti = append([]*Command{}, c.tx...), nil, false
		}
	}
	c.pending = append(c.pending, cmd)
	c.obs.Command(cmd)
}

func (c *Conn) isPush(v Value) bool {
	if v.Kind == Push {
		return true
	}
	if !c.subscribed || v.Kind != Array || len(v.Elems) < 2 || v.Elems[0].Kind != Bulk {
		return false
	}
	return pushKinds[string(bytes.ToLower(v.Elems[0].Str))]
}

func (c *Conn) reply(v Value) {
	if c.err != nil || c.isPush(v) {
		return
	}
	if len(c.pending) == 0 {
		c.giveUp(fmt.Errorf("server sent a reply (%s) to no command", v))
		return
	}
	cmd := c.pending[0]
	c.pending = c.pending[1:]
	switch {
	case cmd.queued:
		if v.IsError() { // refused at queueing time: it is not part of the transaction, and never ran
			c.removeQueued(cmd)
			c.obs.Reply(cmd, v)
		}
		return // QUEUED: its result comes with EXEC
	case cmd.tx != nil:
		c.settle(cmd, v)
	}
	if cmd.Name == "reset" {
		c.subscribed = false
	}
	c.obs.Reply(cmd, v)
}

// removeQueued drops a refused command from the transaction it was queued in: it may still be open (c.tx)
// or already closed by an EXEC sent behind it in the same pipeline.
func (c *Conn) removeQueued(cmd *Command) {
	drop := func(l []*Command) []*Command {
		for i, q := range l {
			if q == cmd {
				return append(l[:i:i], l[i+1:]...)
			}
		}
		return l
	}
	c.tx = drop(c.tx)
	for _, p := range c.pending {
		if p.tx != nil {
			p.tx = drop(p.tx)
		}
	}
}

// settle gives each command of a transaction its result from EXEC's reply; a DISCARD, an aborted EXEC or
// an answer of the wrong shape means they never ran.
func (c *Conn) settle(end *Command, v Value) {
	if end.Name == "exec" && !v.IsError() && !v.IsNil() && len(v.Elems) == len(end.tx) {
		for i, q := range end.tx {
			c.obs.Reply(q, v.Elems[i])
		}
		return
	}
	why := Value{Kind: Error, Str: []byte("EXECABORT the transaction did not run")}
	if end.Name == "exec" && !v.IsError() && !v.IsNil() {
		err := fmt.Errorf("EXEC answered %d results for %d queued commands", len(v.Elems), len(end.tx))
		for _, q := range end.tx {
			c.obs.Lost(q, err)
		}
		c.giveUp(err)
		return
	}
	for _, q := range end.tx {
		c.obs.Reply(q, why)
	}
}
