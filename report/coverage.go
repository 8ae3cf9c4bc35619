package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// FaultCoverage is what one fault window did to the lock: the operations in flight in its scope while it
// was in force (the targeted clients' for a client or link fault, those sent to the targeted nodes for a
// node fault, every one for a failover), which of them ended unknown, the grants and releases in it, and
// whether a holder was inside its critical section then (for a node fault, any holder: a critical section
// does not name the nodes that hold its lock). A client-pause acts from the moment it froze its client at
// a grant (its "frozen" record) to its end, and reaches the lock that client held: its scope is that
// client's operations and every owner's on the keys it held, its frozen client is a holder, and one that
// never froze (no grant while it was armed) touched nothing. A fault that touched nothing could not have
// caught anything.
type FaultCoverage struct {
	Fault    string         `json:"fault"`
	Targets  []string       `json:"targets,omitempty"`
	Start    int64          `json:"start_ns"`
	End      int64          `json:"end_ns"`
	InFlight map[string]int `json:"in_flight"`         // operations in flight, by operation (acquire, release, tryLock...)
	Unknown  map[string]int `json:"unknown,omitempty"` // of those, the ones whose outcome is unknown
	Grants   int            `json:"grants"`            // acquires acknowledged in the window
	Releases int            `json:"releases"`          // releases acknowledged in the window
	Holders  []string       `json:"holders,omitempty"` // clients inside a critical section during it
	// Frozen and Keys are a client-pause's: the clients it froze at a grant, when it first did, and the
	// keys they held then.
	Frozen   []string `json:"frozen,omitempty"`
	FrozenAt int64    `json:"frozen_ns,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Touched  bool     `json:"touched"`
}

// MissedLock is the verdict's wording for a valid run whose faults touched nothing.
const MissedLock = "valid, but the faults missed the lock"

// Coverage measures every fault window of the history on the clients' own records (a worker run's wire
// records are the same calls' commands again, and one call's retries). Its cost grows with the windows
// times what each reaches, not times the whole history: the operations, sections and frozen records are
// indexed once (a loop of tiny faults wrote 640 000 windows, and the scans of every record for each never
// ended).
func Coverage(h *history.History) []FaultCoverage {
	h = h.OnlySrc("")
	var out []FaultCoverage
	end := h.End()
	known := map[string]bool{}
	for _, o := range h.Ops {
		known[o.Invoke.Client] = true
	}
	ops, secs, frozen, held := opSpans(h, end), sectionSpans(h), frozenIndex(h), indexHolds(h)
	for _, w := range h.Windows() {
		c := FaultCoverage{Fault: w.Kind, Targets: w.Targets, Start: w.Start, End: w.End, InFlight: map[string]int{},
			Unknown: map[string]int{}}
		in, from := scope(w.Targets, known), w.Start
		if w.Kind == "client-pause" {
			c.Frozen, c.FrozenAt = frozenIn(frozen[w.Kind], w)
			if len(c.Frozen) == 0 { // armed, but granted nothing while armed: the client ran as usual
				out = append(out, c)
				continue
			}
			c.Keys = held.at(c.Frozen, c.FrozenAt)
			in, from = pauseScope(c.Frozen, c.Keys), c.FrozenAt
		}
		ops.each(from, w.End, func(i int) {
			o := h.Ops[i]
			done := ops.end[i]
			if !in(o.Invoke.Client, o.Invoke.Node, o.Invoke.Key) {
				return
			}
			c.InFlight[o.Invoke.F]++
			if o.Outcome() == history.Unknown {
				c.Unknown[o.Invoke.F]++
			}
			if o.Outcome() == history.Ok && done <= w.End {
				switch o.Invoke.F {
				case "acquire":
					c.Grants++
				case "release":
					c.Releases++
				}
			}
		})
		secs.each(from, w.End, func(i int) {
			s := h.Sections[i]
			if in(s.Client, "", s.Key) && !slices.Contains(c.Holders, s.Client) {
				c.Holders = append(c.Holders, s.Client)
			}
		})
		for _, f := range c.Frozen { // frozen at its grant: a holder, inside its critical section or about to be
			if !slices.Contains(c.Holders, f) {
				c.Holders = append(c.Holders, f)
			}
		}
		slices.Sort(c.Holders)
		c.Touched = len(c.InFlight) > 0 || len(c.Holders) > 0
		out = append(out, c)
	}
	return out
}

// spans indexes intervals [start, end] by start, so that those meeting a window are found without a scan
// of all: the ones that start in it or before, back to the longest interval's length, and the few longer
// ones (an operation never completed runs to the end of the history), which every window checks.
type spans struct {
	start, end []int64
	order      []int // by start
	longest    int64 // of the intervals in order
	long       []int // the intervals over longCut, in no order
}

// longCut is the length over which an interval is kept apart: a window then looks back at most this far.
const longCut = int64(60e9)

func indexSpans(start, end []int64) spans {
	s := spans{start: start, end: end}
	for i := range start {
		if end[i]-start[i] > longCut {
			s.long = append(s.long, i)
			continue
		}
		s.order = append(s.order, i)
		s.longest = max(s.longest, end[i]-start[i])
	}
	slices.SortStableFunc(s.order, func(a, b int) int { return cmpInt(start[a], start[b]) })
	return s
}

// each calls f, in index order, for every interval that meets [from, to].
func (s spans) each(from, to int64, f func(i int)) {
	var hit []int
	lo, _ := slices.BinarySearchFunc(s.order, from-s.longest, func(i int, t int64) int { return cmpInt(s.start[i], t) })
	for _, i := range s.order[lo:] {
		if s.start[i] > to {
			break
		}
		if s.end[i] >= from {
			hit = append(hit, i)
		}
	}
	for _, i := range s.long {
		if s.start[i] <= to && s.end[i] >= from {
			hit = append(hit, i)
		}
	}
	slices.Sort(hit)
	for _, i := range hit {
		f(i)
	}
}

func cmpInt(a, b int64) int { return cmp.Compare(a, b) }

// opSpans are the operations from invoke to completion (the history's end for one never completed).
func opSpans(h *history.History, end int64) spans {
	start, stop := make([]int64, len(h.Ops)), make([]int64, len(h.Ops))
	for i, o := range h.Ops {
		start[i], stop[i] = o.Invoke.Time, end
		if o.Complete != nil {
			stop[i] = o.Complete.Time
		}
	}
	return indexSpans(start, stop)
}

// sectionSpans are the critical sections from enter to exit.
func sectionSpans(h *history.History) spans {
	start, stop := make([]int64, len(h.Sections)), make([]int64, len(h.Sections))
	for i, s := range h.Sections {
		start[i], stop[i] = s.Enter, s.Exit
	}
	return indexSpans(start, stop)
}

// frozenIndex is each fault's "frozen" records, in time order.
func frozenIndex(h *history.History) map[string][]history.Record {
	out := map[string][]history.Record{}
	for _, f := range h.Faults {
		if f.Phase == "frozen" {
			out[f.F] = append(out[f.F], f)
		}
	}
	for _, fs := range out {
		slices.SortStableFunc(fs, func(a, b history.Record) int { return cmpInt(a.Time, b.Time) })
	}
	return out
}

// frozenIn is the clients a client-pause window froze at a grant (its "frozen" records: frozen, the window's
// fault's, in time order), and when the first froze; none if it never did.
func frozenIn(frozen []history.Record, w history.Window) ([]string, int64) {
	var clients []string
	var at int64
	lo, _ := slices.BinarySearchFunc(frozen, w.Start, func(f history.Record, t int64) int { return cmpInt(f.Time, t) })
	for _, f := range frozen[lo:] {
		if f.Time > w.End {
			break
		}
		for _, t := range f.Targets {
			if slices.Contains(w.Targets, t) && !slices.Contains(clients, t) {
				if len(clients) == 0 {
					at = f.Time
				}
				clients = append(clients, t)
			}
		}
	}
	return clients, at
}

// holds indexes each client's completed operations on a key, by owner and key, in completion order, so
// that what a frozen client held is found without a scan of the whole history for each pause.
type holds map[string]map[[2]string][]holdEnd // client, then (owner, key)

type holdEnd struct {
	at    int64
	grant bool
}

func indexHolds(h *history.History) holds {
	out := holds{}
	for _, o := range h.Ops {
		if o.Complete == nil || o.Invoke.Key == "" {
			continue
		}
		owner := o.Invoke.Owner
		if owner == "" {
			owner = fmt.Sprintf("%s/%d", o.Invoke.Client, o.Invoke.Thread)
		}
		if out[o.Invoke.Client] == nil {
			out[o.Invoke.Client] = map[[2]string][]holdEnd{}
		}
		k := [2]string{owner, o.Invoke.Key}
		out[o.Invoke.Client][k] = append(out[o.Invoke.Client][k],
			holdEnd{o.Complete.Time, o.Complete.Type == history.Ok && slices.Contains(grants, o.Invoke.F)})
	}
	for _, byKey := range out {
		for _, l := range byKey { // stable: of two completed at once, the later operation counts
			slices.SortStableFunc(l, func(a, b holdEnd) int { return cmpInt(a.at, b.at) })
		}
	}
	return out
}

// at is the keys the clients held at t, owner by owner (a client's threads are owners of their own):
// those whose owner's latest operation completed by t was a grant.
func (hs holds) at(clients []string, t int64) []string {
	var keys []string
	for _, c := range clients {
		for k, l := range hs[c] {
			n, _ := slices.BinarySearchFunc(l, t+1, func(e holdEnd, t int64) int { return cmpInt(e.at, t) })
			if n > 0 && l[n-1].grant && !slices.Contains(keys, k[1]) {
				keys = append(keys, k[1])
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// grants are the operations whose success means the caller holds the key.
var grants = []string{"acquire", "tryLock", "tryAcquire"}

// pauseScope reaches a frozen client's own operations, and every owner's on the keys it held.
func pauseScope(frozen, keys []string) func(client, node, key string) bool {
	return func(client, _, key string) bool {
		return slices.Contains(frozen, client) || key != "" && slices.Contains(keys, key)
	}
}

// scope says which operations a fault with these targets reaches: a client's or a link's targets name
// clients (and nodes), a node fault names nodes, and a failover ("shard:K") reaches every operation. An
// operation that does not name its node may have gone to any.
func scope(targets []string, known map[string]bool) func(client, node, key string) bool {
	clients, nodes, all := map[string]bool{}, map[string]bool{}, false
	for _, t := range nemesis.ParseTargets(targets) {
		switch t.Kind {
		case nemesis.LinkTo:
			if t.From != nemesis.Front && t.From != nemesis.Bus {
				clients[t.From] = true
			}
			nodes[t.Name] = true
		case nemesis.Named, nemesis.ClientClock:
			if known[t.Name] {
				clients[t.Name] = true
			} else {
				nodes[t.Name] = true
			}
		default: // shard:K, keep:cX, mode:..., lagging-replica:...: the whole shard
			all = true
		}
	}
	return func(client, node, _ string) bool {
		if all {
			return true
		}
		if len(clients) > 0 && !clients[client] {
			return false
		}
		return node == "" || len(nodes) == 0 || nodes[node]
	}
}

// Text is one line for people.
func (c FaultCoverage) Text() string {
	head := fmt.Sprintf("%s %s %s–%s", c.Fault, strings.Join(c.Targets, " "), checker.Secs(c.Start), checker.Secs(c.End))
	if c.Fault == "client-pause" && len(c.Frozen) == 0 {
		return head + ": armed, but its client was granted nothing while armed and never froze: touched no lock operation and no holder"
	}
	if !c.Touched {
		return head + ": touched no lock operation and no holder"
	}
	if len(c.Frozen) > 0 {
		held := "no key"
		if len(c.Keys) > 0 {
			held = strings.Join(c.Keys, " ")
		}
		frozen := strings.Join(c.Frozen, " ")
		head += fmt.Sprintf(": froze %s at a grant at %s, holding %s; since then, on %s or by %s", frozen,
			checker.Secs(c.FrozenAt), held, held, frozen)
	}
	holders := "no holder inside"
	if len(c.Holders) > 0 {
		holders = "holders inside: " + strings.Join(c.Holders, " ")
	}
	return fmt.Sprintf("%s: in flight %s; unknown %s; %d grants, %d releases; %s", head, counts(c.InFlight), counts(c.Unknown),
		c.Grants, c.Releases, holders)
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// MissedAll reports whether there were faults and none of them touched the lock.
func MissedAll(cov []FaultCoverage) bool {
	for _, c := range cov {
		if c.Touched {
			return false
		}
	}
	return len(cov) > 0
}

// NoteCoverage measures the history's fault windows into the results: each window's coverage, a note for
// each one that touched nothing, and on a valid verdict whose faults all missed, MissedLock as the
// verdict's wording (the verdict itself stays valid: nothing was found, but nothing was tested either).
func (r *Results) NoteCoverage(h *history.History) {
	r.Coverage = Coverage(h)
	for _, c := range r.Coverage {
		if !c.Touched {
			r.Notes = append(r.Notes, "fault "+c.Text())
		}
	}
	releases := 0
	for _, c := range r.Coverage {
		releases += c.InFlight["release"]
	}
	if releases == 0 && len(r.Coverage) > 0 && !MissedAll(r.Coverage) {
		// e.g. a drop-reply run whose windows only ever hit acquires: a broken unlock would have passed
		r.Notes = append(r.Notes, "no fault window had a release in flight: the unlock path was not tested under faults")
	}
	if r.Valid == checker.Valid && MissedAll(r.Coverage) {
		r.MissedLock = true
		r.Verdict = MissedLock
	}
}
