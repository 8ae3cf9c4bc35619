package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// Linearizable checks a history's lock commands against a porcupine model, partitioned by key, within a
// time bound: running out of time gives unknown, never valid.
type Linearizable struct {
	Label   string // checker name, e.g. "porcupine"
	Model   porcupine.NondeterministicModel
	Convert func(h *history.History) []porcupine.Operation
	Timeout time.Duration
	// Level, when set, names the records Convert judged ("wire" or "client"): reported in the details and,
	// for wire records, the summary, so a verdict says whether it is about what reached Redis.
	Level func(h *history.History) string
	// NoTimeline says no Visualize follows: Check then lets go of the call-ordered commands once they
	// are split by key (a million commands: 60 MB held through the search for nothing), and of each
	// key's commands once the key is found legal.
	NoTimeline bool

	info     porcupine.LinearizationInfo
	haveInfo bool
	model    porcupine.Model
	ops      []porcupine.Operation
	ran      bool
}

// visualBound bounds porcupine's search for the HTML's partial orders, which the verdict does not need.
const visualBound = 3 * time.Second

// Name is the checker's stable name.
func (l *Linearizable) Name() string { return l.Label }

// Check decides each key with the frontier search (frontier.go), in parallel; a key the frontier cannot
// decide within its bounds goes to porcupine's own search for the time that is left.
func (l *Linearizable) Check(ctx context.Context, h *history.History) Result {
	ops := l.Convert(h)
	l.model = l.Model.ToModel()
	l.ops, l.ran, l.info = ops, true, porcupine.LinearizationInfo{}
	l.haveInfo = false
	begin := time.Now()
	parts := l.model.Partition(ops)
	if parts == nil {
		parts = [][]porcupine.Operation{ops}
	}
	n := len(ops)
	if l.NoTimeline {
		ops, l.ops = nil, nil
	}
	out := l.decide(ctx, parts, begin)
	took := time.Since(begin)
	out.Details.(map[string]any)["check_ms"] = took.Milliseconds()
	if out.Valid == Valid {
		out.Summary = fmt.Sprintf("%d lock commands on %d keys have a legal order (%s)", n, len(parts), took.Round(time.Millisecond))
	}
	if l.Level != nil {
		level := l.Level(h)
		out.Details.(map[string]any)["records"] = level
		switch level {
		case "wire":
			out.Summary += " (wire records)"
		case "wire+client": // a mixed run: the workers' commands from their links, the Go clients' own
			out.Summary += " (wire records of the workers, command records of the Go clients)"
		}
	}
	return out
}

// decide searches every key and combines: the earliest illegal key makes it invalid, else an undecided
// key makes it unknown, saying why.
func (l *Linearizable) decide(ctx context.Context, parts [][]porcupine.Operation, begin time.Time) Result {
	parent := ctx
	if l.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, begin.Add(l.Timeout))
		defer cancel()
	}
	ops, unknown := 0, 0 // counted first: without a timeline, a decided key's commands go as it is decided
	for _, p := range parts {
		ops, unknown = ops+len(p), unknown+countUnknown(p)
	}
	vs := make([]keyVerdict, len(parts))
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			vs[i] = frontierKey(ctx, l.Model, parts[i])
			if l.NoTimeline && vs[i].res == porcupine.Ok {
				// Nothing below reads a legal key's commands: let their boxed inputs and outputs go now
				// rather than after the last key (a million commands: 100 MB through the whole search).
				clear(parts[i])
			}
		}()
	}
	wg.Wait()
	details := map[string]any{"operations": ops, "keys": len(parts),
		"unknown_operations": unknown, "search": "frontier"}
	inflight, configs := 0, 0
	for _, v := range vs {
		inflight, configs = max(inflight, v.maxInFlight), max(configs, v.maxConfigs)
	}
	details["max_in_flight"], details["max_configurations"] = inflight, configs
	illegal, undecided := -1, []int{}
	for i, v := range vs {
		switch {
		case v.res == porcupine.Illegal && (illegal < 0 || v.culprit.Call < vs[illegal].culprit.Call):
			illegal = i
		case v.res == porcupine.Unknown:
			undecided = append(undecided, i)
		}
	}
	if illegal >= 0 {
		return l.illegal(vs[illegal], parts, details)
	}
	if len(undecided) == 0 {
		return Result{Valid: Valid, Details: details}
	}
	// Porcupine's depth-first search may still find a legal order where the frontier grew too wide.
	details["search"] = "frontier, then porcupine"
	var whys []string
	for _, i := range undecided {
		left := time.Duration(0)
		if parent.Err() != nil { // interrupted: no second search
			whys = append(whys, fmt.Sprintf("%s: %s", keyOf(parts[i][0].Input), vs[i].why))
			continue
		}
		if l.Timeout > 0 {
			if left = l.Timeout - time.Since(begin); left <= 0 {
				whys = append(whys, fmt.Sprintf("%s: %s", keyOf(parts[i][0].Input), vs[i].why))
				continue
			}
		}
		switch porcupine.CheckOperationsTimeout(l.model, parts[i], left) {
		case porcupine.Ok:
			continue
		case porcupine.Illegal:
			res, info := porcupine.CheckOperationsVerbose(l.model, parts[i], left)
			if res == porcupine.Illegal {
				why, at, end := l.explain(parts[i:i+1], info)
				return Result{Valid: Invalid, Details: details, Violation: why, At: at, End: end,
					Summary: fmt.Sprintf("no legal order exists for %d lock commands on %d keys", details["operations"], len(parts))}
			}
		}
		whys = append(whys, fmt.Sprintf("%s: %s, and porcupine's search ran out of the %s bound", keyOf(parts[i][0].Input),
			vs[i].why, l.Timeout))
	}
	if len(whys) == 0 {
		return Result{Valid: Valid, Details: details}
	}
	details["undecided"] = whys
	return Result{Valid: Unknown, Details: details,
		Summary: fmt.Sprintf("no verdict on %d of %d keys (%d commands, %d of uncertain outcome): %s", len(whys), len(parts),
			details["operations"], details["unknown_operations"], whys[0])}
}

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
	why := fmt.Sprintf("%s: %s (called %s, returned %s) cannot take effect in any legal order of the commands before it; "+
		"just before, the lock could be %s; %s", keyOf(c.Input), unescape(l.Model.DescribeOperation(c.Input, c.Output)),
		Secs(c.Call), retText(c.Return), describeStates(l.Model, v.before), flight)
	return Result{Valid: Invalid, Details: details, Violation: why, At: c.Call, End: min(c.Return, c.Call+1),
		Summary: fmt.Sprintf("no legal order exists for %d lock commands on %d keys", details["operations"], len(parts))}
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
func (l *Linearizable) explain(parts [][]porcupine.Operation, info porcupine.LinearizationInfo) (string, int64, int64) {
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
		return fmt.Sprintf("%s: %s (called %s, returned %s) cannot follow any legal order; the longest legal order "+
			"(%d of %d commands) ends with %s, leaving it %s",
			keyOf(c.Input), unescape(l.Model.DescribeOperation(c.Input, c.Output)), Secs(c.Call), retText(c.Return),
			len(longest), len(ops), unescape(before), unescape(strings.Join(desc, " or "))), c.Call, min(c.Return, c.Call+1)
	}
	return "porcupine found no legal order", 0, 0
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

// mutexCommands are the commands MutexModel reads.
var mutexCommands = []string{"acquire", "release", "renew", "expire"}

// MutexOps converts a history's lock commands (acquire, release, renew, expire) for MutexModel.
func MutexOps(h *history.History) []porcupine.Operation {
	return Commands(h, mutexCommands...)
}

// Commands converts the history's commands named fs into model operations, in order of call. A command
// that surely did not run is left out; one whose outcome is unknown returns at +infinity.
func Commands(h *history.History, fs ...string) []porcupine.Operation {
	nm := newNames()
	ids := clientIDsNamed(h, nm)
	n := 0 // an upper bound: a command that surely did not run is left out
	for i := range h.Ops {
		if slices.Contains(fs, h.Ops[i].Invoke.F) {
			n++
		}
	}
	ops := make([]porcupine.Operation, 0, n) // once: a grown slice of a million leaves its old copies behind
	eachCommand(h, nm, fs, func(_ int, in Command, out Reply) {
		ops = append(ops, porcupine.Operation{ClientId: ids[in.Client], Input: in, Output: out,
			Call: in.Call, Return: in.Return})
	})
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}

// eachCommand calls yield with each command named fs that the models read, in the history's order (not
// sorted by call), and its index in h.Ops: Commands boxes them for porcupine, LostLock groups them.
func eachCommand(h *history.History, nm *names, fs []string, yield func(i int, in Command, out Reply)) {
	want := map[string]bool{}
	for _, f := range fs {
		want[f] = true
	}
	volatile := failoverTopology(h)
	split := splitBrain(h)
	deadline := unknownDeadline(h)
	down := downNodes(h)
	for i := range h.Ops {
		o := &h.Ops[i]
		inv := &o.Invoke
		if !want[inv.F] {
			continue
		}
		in := Command{Key: nm.key(inv), Client: nm.thread(inv), F: inv.F, Owner: nm.owner(inv),
			Lease: inv.Args["lease_ms"] * int64(time.Millisecond), Call: inv.Time, Return: math.MaxInt64,
			Replay: inv.Args["attempt"] > 0 || inv.Args["uncertain"] == 1, Fair: inv.Args["fair"] == 1, Read: inv.Args["read"] == 1,
			N: firstNonZero(inv.Args["permits"], inv.Args["count"]), Volatile: volatile, Watchdog: inv.Args["watchdog"] == 1}
		out := Reply{Outcome: Unsure}
		if c := o.Complete; c != nil && c.Type == history.Unknown {
			if down(inv.Node, inv.Time, c.Time) {
				continue // sent to a killed server, given up before it restarted: it never ran
			}
			in.Return = deadline(inv.Time, c.Time)
		}
		if c := o.Complete; c != nil && c.Type != history.Unknown {
			switch {
			case c.Type == history.Ok && c.Args["nosync"] == 1:
				out = Reply{Outcome: Unsure} // applied on a primary no replica acknowledged: a failover may undo it
			case c.Type == history.Ok:
				out = Reply{Outcome: Applied}
				if c.Value != nil {
					out.Value = *c.Value
				}
			case c.Value != nil:
				out = Reply{Outcome: Refused, Value: *c.Value}
			default:
				continue // failed before it ran: no effect, nothing learned
			}
			in.Return = c.Time
			if split(inv.Client, inv.Time) && out.Outcome == Refused {
				// It may have been served by the isolated old primary: a refusal changed nothing, and what it
				// says may be about a branch the failover throws away. (Writes there carry nosync, unsure above;
				// a write some replica acknowledged was not served by the isolated primary.)
				continue
			}
		}
		yield(i, in, out)
	}
}

// unknownSlack covers what can still pass between a client giving up on a command and the command reaching
// its server: the client closing the connection, and a command still in a latency toxic.
const unknownSlack = time.Second

// unknownDeadline bounds when a command whose outcome is unknown can have taken effect. In lockcheck's own
// topologies a command either reached its server within moments (a healthy link, or the request direction
// of drop-reply; a latency toxic delays it by --latency + --jitter), or never will (a cut black-holes it
// and the heal closes that connection, a killed server lost its socket, a replication stall holds
// nothing of clients'), or it waits in the socket of a paused server and runs when the server resumes. So
// the effect happens before the client gave up plus a slack, or before the end of a pause that overlaps
// the command. Without this bound an unknown command returns at +infinity, could take effect at any later
// point, and a burst of them at a failover makes the search explode. A deployment lockcheck did not start
// (--backend external) may hold commands back in ways lockcheck cannot see, so there they stay unbounded.
func unknownDeadline(h *history.History) func(call, gaveUp int64) int64 {
	m, ok := metaOf(h)
	if !ok || m.Options.Backend == "external" {
		return func(int64, int64) int64 { return math.MaxInt64 }
	}
	slack := int64(unknownSlack)
	for _, d := range []string{m.Options.Latency, m.Options.Jitter} {
		if v, err := time.ParseDuration(d); err == nil {
			slack += int64(v)
		}
	}
	var pauses []history.Window
	for _, w := range h.Windows() {
		if w.Kind == "pause" {
			pauses = append(pauses, w)
		}
	}
	return func(call, gaveUp int64) int64 {
		end := gaveUp
		for _, p := range pauses {
			if p.Start <= gaveUp && p.End >= call {
				end = max(end, p.End)
			}
		}
		return satAdd(end, slack)
	}
}

// downNodes reports whether a command sent to node at call, whose client gave up at gaveUp, went to a
// server that the kill fault had stopped and that did not answer again yet. Such a command never ran: the
// kill's start record follows the server's exit, and the proxy joins each client connection to the server
// it dials when the client connects, closing it (with whatever it holds) when that server is gone or cannot
// be dialled, so nothing sent then reaches the server started later. The restarted server answers every
// command with a LOADING error (a failure, not an unknown) until its data is loaded, and the kill's last
// step record for the node follows its first answer to PING after that: a command of unknown outcome given
// up before then never reached a server able to run it. The first step marks where the restart began
// (histories before the second step end their span there); a history without steps keeps every such
// command unknown. A record names the server only where each client talks to one node (single, Redlock's
// masters): on Sentinel or Cluster it names the client's first node, and a command may have gone to
// another; lockcheck does not see inside an external deployment. (A burst of such unknowns, clients
// retrying a refused node, made the search give up.)
func downNodes(h *history.History) func(node string, call, gaveUp int64) bool {
	never := func(string, int64, int64) bool { return false }
	m, ok := metaOf(h)
	if !ok || m.Options.Backend == "external" || m.Topology != "single" && m.Topology != "redlock" {
		return never
	}
	type span struct{ from, to int64 }
	spans := map[string][]span{}
	open := map[string]*span{} // node -> its kill's start and its latest step (to < 0: none yet)
	for _, f := range h.Faults {
		if f.F != "kill" {
			continue
		}
		for _, n := range f.Targets {
			switch f.Phase {
			case "start":
				open[n] = &span{f.Time, -1}
			case "step":
				if s, ok := open[n]; ok {
					s.to = f.Time
				}
			case "stop", "error":
				if s, ok := open[n]; ok && s.to >= 0 {
					spans[n] = append(spans[n], *s)
				}
				delete(open, n)
			}
		}
	}
	for n, s := range open { // a kill the history ends inside of
		if s.to >= 0 {
			spans[n] = append(spans[n], *s)
		}
	}
	if len(spans) == 0 {
		return never
	}
	return func(node string, call, gaveUp int64) bool {
		for _, s := range spans[node] {
			if call >= s.from && gaveUp < s.to {
				return true
			}
		}
		return false
	}
}

// splitBrainGrace is how long after a failover fault heals a client kept on the old primary may still be
// talking to it (until Sentinel turns it into a replica and its writes fail).
const splitBrainGrace = 5 * time.Second

// splitBrain returns whether a command of client at t may have been served by a primary that was isolated
// and then demoted: during a failover fault (and its grace) the clients it kept on the old primary may see
// a branch of history that the failover throws away.
func splitBrain(h *history.History) func(client string, t int64) bool {
	type window struct{ start, end int64 }
	kept := map[string][]window{}
	for _, w := range h.Windows() {
		if w.Kind != "failover" {
			continue
		}
		for _, t := range w.Targets {
			if c, ok := strings.CutPrefix(t, "keep:"); ok {
				kept[c] = append(kept[c], window{w.Start, w.End + int64(splitBrainGrace)})
			}
		}
	}
	return func(client string, t int64) bool {
		for _, w := range kept[client] {
			if t >= w.start && t <= w.end {
				return true
			}
		}
		return false
	}
}

// runMeta is what the conversion needs from a history's meta record.
type runMeta struct {
	Topology string `json:"topology"`
	Options  struct {
		Backend string `json:"backend"`
		Latency string `json:"latency"`
		Jitter  string `json:"jitter"`
	} `json:"options"`
}

// metaOf reads the meta record; false when there is none or it does not parse.
func metaOf(h *history.History) (runMeta, bool) {
	var m runMeta
	if h.Meta == nil {
		return m, false
	}
	return m, json.Unmarshal(h.Meta.Data, &m) == nil
}

// failoverTopology reports whether the run's topology can fail over (and so lose unacknowledged writes).
func failoverTopology(h *history.History) bool {
	m, _ := metaOf(h)
	return m.Topology == "sentinel" || m.Topology == "cluster"
}

func firstNonZero(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// nodeKey is what a model partitions by: the key, prefixed by its node where a lock spans masters.
func nodeKey(r history.Call) string {
	if r.Node == "" {
		return r.Key
	}
	return r.Node + "/" + r.Key
}

// ownerName is a readable stand-in for an owner id <uuid>:<thread> (one uuid per client): client/thread.
// A read-write lock's write half (<uuid>:<thread>:write) is the same thread; a permit id stays as it is.
func ownerName(r history.Call) string {
	o := strings.TrimSuffix(r.Owner, ":write")
	i := strings.LastIndex(o, ":")
	if i < 0 {
		return o
	}
	return r.Client + "/" + o[i+1:]
}
