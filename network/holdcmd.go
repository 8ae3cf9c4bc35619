package network

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/lockcheck/lockcheck/network/wire"
)

// HoldCommand holds, until the heal, every command on the link that runs command (a name such as PEXPIRE)
// and whatever its connection sends after it; other connections' commands, and the ones before it, pass.
// At the heal the held bytes go on in order, so the command applies late rather than never: a delay of
// that one command, as a pause between two steps of a client would give.
//
// A command runs name when it is that command, or a script (EVAL, or EVALSHA of a script this link saw
// as text) whose first redis.call is that command. A script known only by its SHA-1 cannot be told
// apart: run the client without its script cache (Redisson: useScriptCache=false).
func (l *Link) HoldCommand(name string) error {
	name = strings.ToUpper(strings.TrimSpace(name))
	if name == "" || strings.ContainsAny(name, "\" \\") {
		return fmt.Errorf("hold-command: bad command name %q", name)
	}
	return l.apply("hold-command "+name,
		fmt.Sprintf(`{"name":"hold-cmd","type":"hold-command","stream":"upstream","attributes":{"command":%q}}`, name))
}

// holdCommand is the toxic behind HoldCommand. As with hold, what it keeps lives in the stub's state,
// because toxiproxy reruns Pipe whenever the chain changes; Cleanup writes it out.
type holdCommand struct {
	Command string `json:"command"`
}

type heldCommands struct {
	mu      sync.Mutex
	partial []byte // the start of a command not complete yet: kept until it is, since it may match
	held    []byte // from the first matching command on
	holding bool
	closed  bool
	bad     bool // the stream is not RESP as we read it: passed through untouched from then on
}

func (*holdCommand) NewState() interface{} { return new(heldCommands) }

func (t *holdCommand) Pipe(stub *toxics.ToxicStub) {
	s := stub.State.(*heldCommands)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				s.mu.Lock()
				keep := s.holding || len(s.partial) > 0
				s.closed = keep
				s.mu.Unlock()
				if !keep { // nothing held: the close goes on at once
					stub.Close()
					return
				}
				<-stub.Interrupt // passed on after the held commands, at the heal
				return
			}
			if out := t.take(s, c.Data); len(out) > 0 {
				stub.Output <- &stream.StreamChunk{Data: out, Timestamp: c.Timestamp}
			}
		}
	}
}

// take splits what came into whole commands and returns what may pass now.
func (t *holdCommand) take(s *heldCommands, data []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holding {
		s.held = append(s.held, data...)
		return nil
	}
	if s.bad {
		return append([]byte(nil), data...)
	}
	s.partial = append(s.partial, data...)
	var out []byte
	for len(s.partial) > 0 {
		n, args, err := wire.FrameCommand(s.partial)
		if err != nil { // not a command stream we can split: do not hold what we cannot read
			s.bad = true
			out = append(out, s.partial...)
			s.partial = nil
			break
		}
		if n == 0 {
			break
		}
		if runs(args, t.Command) {
			s.holding = true
			s.held = append(s.held, s.partial...)
			s.partial = nil
			break
		}
		out = append(out, s.partial[:n]...)
		s.partial = s.partial[n:]
	}
	if len(s.partial) == 0 {
		s.partial = nil
	} else {
		s.partial = append([]byte(nil), s.partial...)
	}
	return out
}

func (*holdCommand) Cleanup(stub *toxics.ToxicStub) {
	s := stub.State.(*heldCommands)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rest := append(s.held, s.partial...); len(rest) > 0 {
		stub.WriteOutput(&stream.StreamChunk{Data: rest, Timestamp: time.Now()}, 0)
	}
	s.held, s.partial, s.holding = nil, nil, false
	if s.closed {
		stub.Close()
	}
}

func init() { toxics.Register("hold-command", new(holdCommand)) }

// scripts maps the SHA-1 of every script text any link saw (EVAL, SCRIPT LOAD) to the command its first
// redis.call runs, so an EVALSHA of it is told too.
var scripts sync.Map

var firstCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)

// scriptRuns names the command a script's first redis.call runs, upper-case; "" if none.
func scriptRuns(text []byte) string {
	m := firstCall.FindSubmatch(text)
	if m == nil {
		return ""
	}
	name := strings.ToUpper(string(m[1]))
	scripts.Store(wire.SHA(string(text)), name)
	return name
}

// runs says whether a command (its words) runs name.
func runs(args [][]byte, name string) bool {
	if len(args) == 0 {
		return false
	}
	switch cmd := strings.ToUpper(string(args[0])); {
	case cmd == name:
		return true
	case (cmd == "EVAL" || cmd == "EVAL_RO") && len(args) > 1:
		return scriptRuns(args[1]) == name
	case (cmd == "EVALSHA" || cmd == "EVALSHA_RO") && len(args) > 1:
		v, ok := scripts.Load(strings.ToLower(string(args[1])))
		return ok && v.(string) == name
	case cmd == "SCRIPT" && len(args) > 2 && strings.EqualFold(string(args[1]), "LOAD"):
		scriptRuns(args[2]) // learned, not held: loading runs nothing
	}
	return false
}
