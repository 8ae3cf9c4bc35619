package checker

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// illegal explains the frontier's illegal key: the command no legal order can place, the states the lock
// could be in just before, and what was in flight with it.
func (l *Linearizable) illegal(v keyVerdict, parts [][]porcupine.Operation, details map[string]any) Result {
	c := v.culprit
	var with []string
	for _, o := range v.inFlight {
		with = append(with, fmt.Sprintf("%s (called %s)", unescape(l.Model.DescribeOperation(o.Input, o.Output)), Secs(o.Call)))
	}
	sort.Strings(with)
	flight := "nothing else in flight"
	if len(with) > 0 {
		flight = "in flight with it: " + strings.Join(with, ", ")
	}
	details["key"] = keyName(c.Input)
	why := fmt.Sprintf("%s: %s (called %s, returned %s) cannot take effect in any legal order of the commands before it; "+
		"just before, the lock could be %s; %s", keyOf(c.Input), unescape(l.Model.DescribeOperation(c.Input, c.Output)),
		Secs(c.Call), retText(c.Return), describeStates(l.Model, v.before), flight)
	details["culprit"] = l.culprit(c)
	return Result{Valid: Invalid, Details: details, Violation: why, At: c.Call, End: min(c.Return, c.Call+1),
		Summary: fmt.Sprintf("no legal order exists for %d lock commands on %d keys", details["operations"], len(parts))}
}

// Culprit is the command no legal order can place, in parts (details["culprit"]): the run's story
// (report.Story) names its key, node, thread and time without parsing the explanation.
type Culprit struct {
	Key    string `json:"key"`
	Node   string `json:"node,omitempty"`
	Thread string `json:"thread"`
	What   string `json:"what"` // the model's words: "acquire → refused"
	Call   int64  `json:"call_ns"`
	Return int64  `json:"return_ns"` // math.MaxInt64: never returned
}

func (l *Linearizable) culprit(o porcupine.Operation) Culprit {
	c := Culprit{What: unescape(l.Model.DescribeOperation(o.Input, o.Output)), Call: o.Call, Return: o.Return}
	if in, ok := o.Input.(Command); ok {
		c.Key, c.Node = SplitKey(in.Key)
		c.Thread = in.Client
	}
	return c
}

func countUnknown(ops []porcupine.Operation) int {
	n := 0
	for _, o := range ops {
		if r, ok := o.Output.(Reply); ok && r.Outcome == Unsure || o.Return == math.MaxInt64 {
			n++
		}
	}
	return n
}

// explain names, for the first illegal key, the command that no legal order can place and the states the
// lock could have been in just before it.
func (l *Linearizable) explain(parts [][]porcupine.Operation, info porcupine.LinearizationInfo) (string, *Culprit, int64, int64) {
	partials := info.PartialLinearizations()
	for p, ops := range parts {
		if p >= len(partials) {
			break
		}
		longest := []int{}
		for _, lin := range partials[p] {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		if len(longest) == len(ops) {
			continue
		}
		placed := map[int]bool{}
		for _, i := range longest {
			placed[i] = true
		}
		culprit := -1
		for i, op := range ops {
			if !placed[i] && (culprit < 0 || op.Return < ops[culprit].Return) {
				culprit = i
			}
		}
		states := l.Model.Init()
		for _, i := range longest {
			states = stepAll(l.Model, states, ops[i])
		}
		var desc []string
		for _, s := range states {
			desc = append(desc, l.Model.DescribeState(s))
		}
		c := ops[culprit]
		before := "nothing"
		if len(longest) > 0 {
			last := ops[longest[len(longest)-1]]
			before = fmt.Sprintf("%s (at %s)", l.Model.DescribeOperation(last.Input, last.Output), Secs(last.Call))
		}
		cu := l.culprit(c)
		return fmt.Sprintf("%s: %s (called %s, returned %s) cannot follow any legal order; the longest legal order "+
			"(%d of %d commands) ends with %s, leaving it %s",
			keyOf(c.Input), unescape(l.Model.DescribeOperation(c.Input, c.Output)), Secs(c.Call), retText(c.Return),
			len(longest), len(ops), unescape(before), unescape(strings.Join(desc, " or "))), &cu, c.Call, min(c.Return, c.Call+1)
	}
	return "porcupine found no legal order", nil, 0, 0
}

func stepAll(m porcupine.NondeterministicModel, states []interface{}, op porcupine.Operation) []interface{} {
	var next []interface{}
	for _, s := range states {
		next = append(next, m.Step(s, op.Input, op.Output)...)
	}
	return next
}

func keyOf(in interface{}) string {
	if k, ok := in.(interface{ key() string }); ok {
		return "key " + k.key()
	}
	return "a key"
}

func (in Command) key() string { return in.Key }

// keyName is the key a model operation's input names ("" for none): details' "key" of an invalid verdict,
// which the proof (proof.go) starts from.
func keyName(in interface{}) string {
	if k, ok := in.(interface{ key() string }); ok {
		return k.key()
	}
	return ""
}

func retText(t int64) string {
	if t == math.MaxInt64 {
		return "never"
	}
	return Secs(t)
}

func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").Replace(s)
}

// Annotation is a labelled span drawn on the timeline (a fault window, a critical section).
type Annotation struct {
	Client      string // the client's row, or "" for a row of its own named Tag
	Tag         string
	Start, End  int64
	Description string
	Color       string
}

// Visualize writes porcupine's HTML for the last check, with the annotations drawn on their rows and the
// rows named after the client threads.
func (l *Linearizable) Visualize(w io.Writer, h *history.History, notes []Annotation) error {
	if !l.ran {
		return fmt.Errorf("visualize before check")
	}
	if l.NoTimeline {
		return fmt.Errorf("visualize after a check that kept no timeline")
	}
	ids := clientIDs(h)
	var anns []porcupine.Annotation
	for _, n := range notes {
		a := porcupine.Annotation{Start: n.Start, End: n.End, Description: n.Description, BackgroundColor: n.Color}
		if id, ok := ids[n.Client]; ok && n.Client != "" {
			a.ClientId = id
		} else {
			a.Tag = n.Tag
		}
		anns = append(anns, a)
	}
	if !l.haveInfo {
		bound := visualBound
		if l.Timeout > 0 {
			bound = min(bound, l.Timeout)
		}
		_, l.info = porcupine.CheckOperationsVerbose(l.model, l.ops, bound)
		l.haveInfo = true
	}
	l.info.AddAnnotations(anns)
	var b bytes.Buffer
	if err := porcupine.Visualize(l.model, l.info, &b); err != nil {
		return err
	}
	page, err := labelRows(b.Bytes(), rowNames(h))
	if err != nil {
		page = b.Bytes() // numbered rows rather than no timeline (TestTimelineRowsAreNamed catches this)
	}
	_, err = w.Write(page)
	return err
}

// clientIDs numbers the client threads of a history in order of first appearance; the same numbering is
// used for operations and annotations. A client's own-initiative commands (watchdog renewals, thread 0)
// get a row of their own.
func clientIDs(h *history.History) map[string]int {
	return clientIDsNamed(h, newNames())
}

func clientIDsNamed(h *history.History, nm *names) map[string]int {
	ids := map[string]int{}
	rows := 0 // not len(ids): the clients' own entries would leave empty rows between the threads
	for i := range h.Ops {
		k := nm.thread(&h.Ops[i].Invoke)
		o := &h.Ops[i]
		if _, ok := ids[k]; !ok {
			ids[k] = rows
			rows++
		}
		if _, ok := ids[o.Invoke.Client]; !ok && o.Invoke.Thread != 0 {
			ids[o.Invoke.Client] = ids[k] // a client's first thread carries its annotations
		}
	}
	return ids
}
