// Package wire records the lock commands a client sends to Redis from the bytes on its link: a streaming
// RESP2/RESP3 decoder for both directions, a matcher that pairs each command with its reply (pipelining,
// MULTI/EXEC, pub/sub pushes), and a mapping from known lock scripts to the history's lock commands, so the
// checkers judge a client lockcheck did not write (a worker) exactly as they judge its own emulation.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Kind is a RESP value's type byte.
type Kind byte

// RESP2 and RESP3 types.
const (
	Simple    Kind = '+'
	Error     Kind = '-'
	Integer   Kind = ':'
	Bulk      Kind = '$'
	Array     Kind = '*'
	Null      Kind = '_' // RESP3 null; RESP2's null bulk and null array are Bulk/Array with Nil set
	Bool      Kind = '#'
	Double    Kind = ','
	BigNumber Kind = '('
	BulkError Kind = '!'
	Verbatim  Kind = '='
	Map       Kind = '%' // Elems holds keys and values alternately
	Set       Kind = '~'
	Push      Kind = '>' // out of band: never the reply to a command
	Attribute Kind = '|' // metadata before a reply; the decoder skips it
	Inline    Kind = 'i' // a client's inline command ("PING\r\n"): Elems are its words as Bulk
)

// Value is one decoded RESP value. Its byte slices are its own (copied out of the stream).
type Value struct {
	Kind  Kind
	Str   []byte // simple, error, bulk, verbatim, double, big number; bool: "t" or "f"
	Int   int64
	Elems []Value // array, set, push, map, inline
	Nil   bool    // RESP2 null bulk or array ($-1, *-1), or RESP3 null
}

// IsError says whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == Error || v.Kind == BulkError }

// IsNil says whether v is a null of either protocol.
func (v Value) IsNil() bool { return v.Nil || v.Kind == Null }

// String renders v briefly, for messages.
func (v Value) String() string {
	switch {
	case v.IsNil():
		return "nil"
	case v.Kind == Integer:
		return strconv.FormatInt(v.Int, 10)
	case v.Elems != nil || v.Kind == Array || v.Kind == Set || v.Kind == Push || v.Kind == Map || v.Kind == Inline:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(e.String())
		}
		b.WriteByte(']')
		return b.String()
	}
	return strconv.Quote(string(v.Str))
}

// Limits that make a hostile or corrupt stream an error instead of unbounded memory or recursion. Redis
// itself caps a bulk string at 512 MB; a lock client never comes near these.
const (
	MaxBuffer = 64 << 20 // bytes held for one incomplete value
	MaxDepth  = 64       // nesting of aggregates
	maxLine   = 64 << 10 // a header or simple line
	maxInline = 64 << 10 // an inline command
)

var errIncomplete = errors.New("incomplete")

// Decoder turns a byte stream, fed in chunks of any size, into values. Once it meets bytes that are not
// RESP it fails for good: a stream cannot be resynchronised.
type Decoder struct {
	commands bool // the client's direction: inline commands are allowed
	buf      []byte
	need     int // the buffer cannot hold a whole value before it has this many bytes
	err      error
}

// NewDecoder decodes the client-to-server direction (commands) or the server-to-client one (replies).
func NewDecoder(commands bool) *Decoder { return &Decoder{commands: commands} }

// Err is the error the decoder failed with, or nil.
func (d *Decoder) Err() error { return d.err }

// Feed adds p to the stream and calls emit for every value it completes, in order. It returns the
// decoder's error: after one, Feed does nothing.
func (d *Decoder) Feed(p []byte, emit func(Value)) error {
	if d.err != nil {
		return d.err
	}
	d.buf = append(d.buf, p...)
	if len(d.buf) < d.need {
		return nil // a bulk string in progress: nothing can complete yet
	}
	off, need := 0, 0
	for off < len(d.buf) {
		ps := parser{b: d.buf, off: off}
		v, err := ps.next(d.commands)
		if err == errIncomplete {
			need = max(ps.need, len(d.buf)+1) - off
			break
		}
		if err != nil {
			d.err = err
			d.buf = nil
			return d.err
		}
		off = ps.off
		if v.Kind != Attribute {
			emit(v)
		}
	}
	d.buf = append(d.buf[:0], d.buf[off:]...)
	d.need = need
	if len(d.buf) > MaxBuffer {
		d.err = fmt.Errorf("a value longer than %d bytes", MaxBuffer)
		d.buf = nil
	}
	return d.err
}

type parser struct {
	b    []byte
	off  int
	need int // absolute length of b that a bulk in progress needs
}

func (p *parser) line() ([]byte, error) {
	i := bytes.IndexByte(p.b[p.off:], '\n')
	if i < 0 {
		if len(p.b)-p.off > maxLine {
			return nil, errors.New("line too long")
		}
		return nil, errIncomplete
	}
	if i == 0 || p.b[p.off+i-1] != '\r' {
		return nil, errors.New("line not ended by CRLF")
	}
	l := p.b[p.off : p.off+i-1]
	p.off += i + 1
	return l, nil
}

func parseInt(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 20 {
		return 0, fmt.Errorf("bad integer %q", b)
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// next parses one value (commands: allow an inline command at the top level).
func (p *parser) next(commands bool) (Value, error) {
	if p.off >= len(p.b) {
		return Value{}, errIncomplete
	}
	if commands && p.b[p.off] != '*' {
		return p.inline()
	}
	return p.value(0)
}

func (p *parser) inline() (Value, error) {
	i := bytes.IndexByte(p.b[p.off:], '\n')
	if i < 0 {
		if len(p.b)-p.off > maxInline {
			return Value{}, errors.New("inline command too long")
		}
		return Value{}, errIncomplete
	}
	l := bytes.TrimSuffix(p.b[p.off:p.off+i], []byte{'\r'})
	p.off += i + 1
	v := Value{Kind: Inline, Elems: []Value{}}
	for _, w := range bytes.Fields(l) {
		v.Elems = append(v.Elems, Value{Kind: Bulk, Str: bytes.Clone(w)})
	}
	return v, nil
}

func (p *parser) value(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, errors.New("nested too deeply")
	}
	if p.off >= len(p.b) {
		return Value{}, errIncomplete
	}
	k := Kind(p.b[p.off])
	p.off++
	l, err := p.line()
	if err != nil {
		return Value{}, err
	}
	switch k {
	case Simple, Error, Double, BigNumber:
		return Value{Kind: k, Str: bytes.Clone(l)}, nil
	case Integer:
		n, err := parseInt(l)
		return Value{Kind: k, Int: n}, err
	case Null:
		if len(l) != 0 {
			return Value{}, errors.New("bad null")
		}
		return Value{Kind: Null, Nil: true}, nil
	case Bool:
		if len(l) != 1 || (l[0] != 't' && l[0] != 'f') {
			return Value{}, errors.New("bad boolean")
		}
		return Value{Kind: k, Str: bytes.Clone(l)}, nil
	case Bulk, BulkError, Verbatim:
		n, err := parseInt(l)
		if err != nil {
			return Value{}, err
		}
		if n == -1 && k == Bulk {
			return Value{Kind: k, Nil: true}, nil
		}
		if n < 0 || n > MaxBuffer {
			return Value{}, fmt.Errorf("bad length %d", n)
		}
		end := p.off + int(n)
		if end+2 > len(p.b) {
			p.need = end + 2
			return Value{}, errIncomplete
		}
		if p.b[end] != '\r' || p.b[end+1] != '\n' {
			return Value{}, errors.New("bulk string not ended by CRLF")
		}
		v := Value{Kind: k, Str: bytes.Clone(p.b[p.off:end])}
		p.off = end + 2
		return v, nil
	case Array, Set, Push, Map, Attribute:
		n, err := parseInt(l)
		if err != nil {
			return Value{}, err
		}
		if n == -1 && k == Array {
			return Value{Kind: k, Nil: true}, nil
		}
		if n < 0 || n > MaxBuffer {
			return Value{}, fmt.Errorf("bad count %d", n)
		}
		if k == Map || k == Attribute {
			n *= 2
		}
		// Every element takes at least 3 bytes: a count beyond what the buffer could hold waits for data
		// instead of allocating for it.
		v := Value{Kind: k, Elems: make([]Value, 0, min(int(n), (len(p.b)-p.off)/3+1))}
		for range n {
			e, err := p.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			if e.Kind == Attribute { // metadata on an element: skip it, the element follows
				if e, err = p.value(depth + 1); err != nil {
					return Value{}, err
				}
			}
			v.Elems = append(v.Elems, e)
		}
		return v, nil
	}
	return Value{}, fmt.Errorf("unknown type byte %q", byte(k))
}

// words are a client command's words: its elements, each a bulk string.
func words(v Value) ([][]byte, error) {
	args := make([][]byte, 0, len(v.Elems))
	for _, e := range v.Elems {
		if e.Kind != Bulk || e.Nil {
			return nil, errors.New("client sent a command that is not an array of bulk strings")
		}
		args = append(args, e.Str)
	}
	return args, nil
}

// FrameCommand reads one client command at the start of b, as the tap's decoder does: its length in bytes
// and its words. n is 0 while b holds only part of one; err when b is no command stream (a client sends
// arrays of bulk strings, or inline lines). The hold-command toxic splits a connection's stream with it.
func FrameCommand(b []byte) (n int, args [][]byte, err error) {
	p := parser{b: b}
	v, err := p.next(true)
	switch {
	case err == errIncomplete:
		return 0, nil, nil
	case err != nil:
		return 0, nil, err
	case v.Nil:
		return 0, nil, errors.New("client sent a null array")
	}
	if args, err = words(v); err != nil {
		return 0, nil, err
	}
	return p.off, args, nil
}
