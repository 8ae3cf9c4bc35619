package history

import (
	"encoding/json"
)

// decoder turns history lines into records with little memory per record: the lines the recorder writes
// are parsed by hand (encoding/json's reflection costs more than the rest of a check), and their strings,
// args maps and values are shared between records, since a long history repeats the same few of each.
// Anything the fast path does not take exactly as encoding/json would (escapes, other spellings, data,
// null, floats, duplicate names) goes to json.Unmarshal, so what a line means never depends on the path.
type decoder struct {
	strs map[string]string
	args map[string]map[string]int64
	vals map[int64]*int64
	slab []Result // completions are carved from here rather than allocated one by one
}

// Bounds on the shared tables: a history of unique strings (error texts with addresses) or unique args
// (try_at) starts a table afresh rather than growing it without end.
const (
	maxStrs = 1 << 16
	maxArgs = 1 << 12
	maxVals = 1 << 12
)

func newDecoder() *decoder {
	return &decoder{strs: map[string]string{}, args: map[string]map[string]int64{}, vals: map[int64]*int64{}}
}

// decode parses one line into rec.
func (d *decoder) decode(line []byte, rec *Record) error {
	if d.fast(line, rec) {
		return nil
	}
	*rec = Record{}
	if err := json.Unmarshal(line, rec); err != nil {
		return err
	}
	rec.Type = Type(d.str(string(rec.Type)))
	for _, s := range []*string{&rec.Client, &rec.Key, &rec.Node, &rec.Owner, &rec.Src, &rec.F, &rec.Error} {
		*s = d.str(*s)
	}
	return nil
}

// keep returns a completion record that lives as long as the history, from the slab.
func (d *decoder) keep(rec Result) *Result {
	if len(d.slab) == 0 {
		d.slab = make([]Result, 256)
	}
	p := &d.slab[0]
	*p = rec
	d.slab = d.slab[1:]
	return p
}

func (d *decoder) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := d.strs[s]; ok {
		return v
	}
	if len(d.strs) >= maxStrs {
		clear(d.strs)
	}
	d.strs[s] = s
	return s
}

// strb is str for bytes; the lookup does not allocate.
func (d *decoder) strb(b []byte) string {
	if v, ok := d.strs[string(b)]; ok {
		return v
	}
	return d.str(string(b))
}

func (d *decoder) val(v int64) *int64 {
	if p, ok := d.vals[v]; ok {
		return p
	}
	if len(d.vals) >= maxVals {
		clear(d.vals)
	}
	p := &v
	d.vals[v] = p
	return p
}

// Field bits, to refuse a name given twice (encoding/json would let the last one win, or merge args).
const (
	fType = 1 << iota
	fTime
	fID
	fClient
	fThread
	fKey
	fNode
	fOwner
	fSrc
	fF
	fArgs
	fValue
	fError
	fPhase
	fTargets
	fDetail
	fStep
	fEnter
	fExit
	fToken
	fRejected
	fUntil
)

// fast parses a line as the recorder writes it: one object, no spaces, plain ASCII strings, integers. It
// returns false, with rec in any state, for anything else.
func (d *decoder) fast(b []byte, rec *Record) bool {
	*rec = Record{}
	p := parser{b: b}
	if !p.eat('{') {
		return false
	}
	seen := 0
	for {
		name, ok := p.str()
		if !ok || !p.eat(':') {
			return false
		}
		var bit int
		switch string(name) {
		case "type":
			bit = fType
			s, ok := p.str()
			if !ok {
				return false
			}
			rec.Type = Type(d.strb(s))
		case "time":
			bit = fTime
			rec.Time, ok = p.int()
		case "id":
			bit = fID
			rec.ID, ok = p.int()
		case "thread":
			bit = fThread
			rec.Thread, ok = p.int()
		case "enter":
			bit = fEnter
			rec.Enter, ok = p.int()
		case "exit":
			bit = fExit
			rec.Exit, ok = p.int()
		case "token":
			bit = fToken
			rec.Token, ok = p.int()
		case "until":
			bit = fUntil
			rec.Until, ok = p.int()
		case "client":
			bit, ok = fClient, d.field(&p, &rec.Client)
		case "key":
			bit, ok = fKey, d.field(&p, &rec.Key)
		case "node":
			bit, ok = fNode, d.field(&p, &rec.Node)
		case "owner":
			bit, ok = fOwner, d.field(&p, &rec.Owner)
		case "src":
			bit, ok = fSrc, d.field(&p, &rec.Src)
		case "f":
			bit, ok = fF, d.field(&p, &rec.F)
		case "error":
			bit, ok = fError, d.field(&p, &rec.Error)
		case "phase":
			bit, ok = fPhase, d.field(&p, &rec.Phase)
		case "detail":
			bit, ok = fDetail, d.field(&p, &rec.Detail)
		case "step":
			bit, ok = fStep, d.field(&p, &rec.Step)
		case "value":
			var v int64
			bit = fValue
			if v, ok = p.int(); ok {
				rec.Value = d.val(v)
			}
		case "args":
			bit = fArgs
			rec.Args, ok = d.argsObj(&p)
		case "targets":
			bit = fTargets
			rec.Targets, ok = d.targets(&p)
		case "rejected":
			bit = fRejected
			switch {
			case p.lit("true"):
				rec.Rejected = true
			case p.lit("false"):
			default:
				ok = false
			}
		default: // data, another spelling, a name no record has
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if p.eat(',') {
			continue
		}
		if !p.eat('}') {
			return false
		}
		break
	}
	for _, c := range p.b[p.i:] { // encoding/json allows trailing white space, and nothing else
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func (d *decoder) field(p *parser, s *string) bool {
	v, ok := p.str()
	if ok {
		*s = d.strb(v)
	}
	return ok
}

// argsObj parses {"name":int,...}, non-empty, and returns the shared map for that exact text.
func (d *decoder) argsObj(p *parser) (map[string]int64, bool) {
	start := p.i
	if !p.eat('{') {
		return nil, false
	}
	type kv struct {
		k []byte
		v int64
	}
	var buf [8]kv
	kvs := buf[:0]
	for {
		k, ok := p.str()
		if !ok || !p.eat(':') {
			return nil, false
		}
		v, ok := p.int()
		if !ok {
			return nil, false
		}
		for _, o := range kvs {
			if string(o.k) == string(k) {
				return nil, false
			}
		}
		kvs = append(kvs, kv{k, v})
		if p.eat(',') {
			continue
		}
		if !p.eat('}') {
			return nil, false
		}
		break
	}
	text := p.b[start:p.i]
	if m, ok := d.args[string(text)]; ok {
		return m, true
	}
	m := make(map[string]int64, len(kvs))
	for _, o := range kvs {
		m[d.strb(o.k)] = o.v
	}
	if len(d.args) >= maxArgs {
		clear(d.args)
	}
	d.args[string(text)] = m
	return m, true
}

// targets parses ["...",...], non-empty.
func (d *decoder) targets(p *parser) ([]string, bool) {
	if !p.eat('[') {
		return nil, false
	}
	var out []string
	for {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		out = append(out, d.strb(s))
		if p.eat(',') {
			continue
		}
		return out, p.eat(']')
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// str parses a string of printable ASCII without escapes (which read the same to encoding/json).
func (p *parser) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			p.i++
			return p.b[start : p.i-1], true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// int parses a JSON integer of at most 18 digits (so it cannot overflow), as strconv would.
func (p *parser) int() (int64, bool) {
	neg := p.eat('-')
	start := p.i
	var v int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 18 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
