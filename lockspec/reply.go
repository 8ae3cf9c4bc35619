package lockspec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Outcome is what a reply means to the client, named in a spec's reply mapping.
type Outcome string

// The outcomes. Which an operation may use depends on its class (see classOutcomes).
const (
	Granted  Outcome = "granted"  // acquire: the lock (or permit) is the caller's
	Refused  Outcome = "refused"  // acquire: held by someone else
	TTL      Outcome = "ttl"      // acquire: refused, and the integer reply is how long to wait (ms)
	Released Outcome = "released" // release: let go (for read_release: other holds may remain)
	Last     Outcome = "last"     // read_release: let go, and the lock is now free
	NotHeld  Outcome = "not_held" // release, extend: the caller did not hold it
	Extended Outcome = "extended" // extend: the lease is set again
	Count    Outcome = "count"    // available: the integer reply is the available permits
)

// class groups operations that read replies alike.
type class int

const (
	acquireClass class = iota
	releaseClass
	readReleaseClass
	extendClass
	countClass
)

// classOutcomes are the outcomes each class may map, the first ones required (required[class] of them).
var classOutcomes = map[class][]Outcome{
	acquireClass:     {Granted, Refused, TTL},
	releaseClass:     {Released, NotHeld},
	readReleaseClass: {Released, Last, NotHeld},
	extendClass:      {Extended, NotHeld},
	countClass:       {Count},
}

// required says which outcomes a class must map: without them the client could never tell a grant (or a
// release) from anything else.
var required = map[class][]Outcome{
	acquireClass:     {Granted},
	releaseClass:     {Released},
	readReleaseClass: {Released, Last},
	extendClass:      {Extended},
	countClass:       {Count},
}

// numeric outcomes carry the reply's integer into the history, so only integer matchers make sense there.
func numeric(o Outcome) bool { return o == TTL || o == Count }

// matcher matches one reply: by exact value (an integer or a string), or by type (nil, integer, string).
type matcher struct {
	typ string // "nil", "integer", "string": any of that type; "int" or "str": the value below
	i   int64
	s   string
}

func (m matcher) String() string {
	switch m.typ {
	case "int":
		return strconv.FormatInt(m.i, 10)
	case "str":
		return strconv.Quote(m.s)
	}
	return m.typ
}

// exact matchers are tried before type matchers, so "granted: 1" and "ttl: integer" can live together.
func (m matcher) exact() bool { return m.typ == "int" || m.typ == "str" || m.typ == "nil" }

func (m matcher) match(reply any) bool {
	switch v := reply.(type) {
	case nil:
		return m.typ == "nil"
	case int64:
		return m.typ == "integer" || (m.typ == "int" && m.i == v)
	case string:
		return m.typ == "string" || (m.typ == "str" && m.s == v)
	}
	return false // arrays and others match nothing: the outcome is then unknown
}

// parseMatcher reads one YAML scalar: nil (or null, ~), integer, string, an integer literal, or any other
// text as a literal string or status reply (OK).
func parseMatcher(n *yaml.Node) (matcher, error) {
	if n.Kind != yaml.ScalarNode {
		return matcher{}, fmt.Errorf("want a value or a type (nil, integer, string), got a %s", kindName(n))
	}
	switch n.Tag {
	case "!!null":
		return matcher{typ: "nil"}, nil
	case "!!int":
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return matcher{}, fmt.Errorf("%s: %v", n.Value, err)
		}
		return matcher{typ: "int", i: v}, nil
	case "!!float":
		return matcher{}, fmt.Errorf("%s can never be a reply: Redis turns a Lua number into an integer", n.Value)
	case "!!bool":
		return matcher{}, fmt.Errorf("%s can never be a reply: Redis turns Lua true into 1 and false into nil", n.Value)
	}
	switch n.Value {
	case "nil":
		return matcher{typ: "nil"}, nil
	case "integer", "string":
		return matcher{typ: n.Value}, nil
	case "":
		return matcher{}, fmt.Errorf("an empty matcher: want a value or a type (nil, integer, string)")
	}
	return matcher{typ: "str", s: n.Value}, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// rule maps a matcher to its outcome.
type rule struct {
	m   matcher
	out Outcome
}

// replyMap is an operation's reply mapping, exact rules first.
type replyMap struct{ rules []rule }

// classify returns the outcome of a reply, false when no rule matches.
func (r replyMap) classify(reply any) (Outcome, bool) {
	for _, x := range r.rules {
		if x.m.match(reply) {
			return x.out, true
		}
	}
	return "", false
}

// has reports whether some rule gives o.
func (r replyMap) has(o Outcome) bool {
	for _, x := range r.rules {
		if x.out == o {
			return true
		}
	}
	return false
}

// parseReply reads a reply mapping (outcome: matcher or [matchers]) for an operation of class c. Every
// way it could not match is an error: an outcome the operation has not, a matcher no reply can equal, a
// matcher under two outcomes, a missing required outcome.
func parseReply(n *yaml.Node, c class) (replyMap, error) {
	if n == nil || n.Kind == 0 {
		return replyMap{}, fmt.Errorf("reply: missing (map outcomes to replies, e.g. granted: OK, refused: nil)")
	}
	if n.Kind != yaml.MappingNode {
		return replyMap{}, fmt.Errorf("reply: want a mapping of outcomes to replies, got a %s", kindName(n))
	}
	allowed := classOutcomes[c]
	var r replyMap
	seen := map[string]Outcome{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := Outcome(n.Content[i].Value)
		if !contains(allowed, name) {
			return r, fmt.Errorf("reply: unknown outcome %q here (have: %s)", name, outcomeList(allowed))
		}
		if r.has(name) {
			return r, fmt.Errorf("reply: outcome %s mapped twice", name)
		}
		vals := []*yaml.Node{n.Content[i+1]}
		if n.Content[i+1].Kind == yaml.SequenceNode {
			vals = n.Content[i+1].Content
			if len(vals) == 0 {
				return r, fmt.Errorf("reply: %s: an empty list matches nothing", name)
			}
		}
		for _, v := range vals {
			m, err := parseMatcher(v)
			if err != nil {
				return r, fmt.Errorf("reply: %s: %v", name, err)
			}
			if numeric(name) && m.typ != "integer" && m.typ != "int" {
				return r, fmt.Errorf("reply: %s: %s can never carry a number: want integer or an integer value", name, m)
			}
			if prev, ok := seen[m.String()]; ok {
				return r, fmt.Errorf("reply: %s matches both %s and %s", m, prev, name)
			}
			seen[m.String()] = name
			r.rules = append(r.rules, rule{m: m, out: name})
		}
	}
	for _, o := range required[c] {
		if !r.has(o) {
			return r, fmt.Errorf("reply: no reply is mapped to %s, so the client could never see one", o)
		}
	}
	sort.SliceStable(r.rules, func(i, j int) bool { return r.rules[i].m.exact() && !r.rules[j].m.exact() })
	return r, nil
}

func contains(os []Outcome, o Outcome) bool {
	for _, x := range os {
		if x == o {
			return true
		}
	}
	return false
}

func outcomeList(os []Outcome) string {
	var s []string
	for _, o := range os {
		s = append(s, string(o))
	}
	return strings.Join(s, ", ")
}
