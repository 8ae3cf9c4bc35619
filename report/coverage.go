package report

import (
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
// records are the same calls' commands again, and one call's retries).
func Coverage(h *history.History) []FaultCoverage {
	h = h.OnlySrc("")
	var out []FaultCoverage
	end := h.End()
	known := map[string]bool{}
	for _, o := range h.Ops {
		known[o.Invoke.Client] = true
	}
	for _, w := range h.Windows() {
		c := FaultCoverage{Fault: w.Kind, Targets: w.Targets, Start: w.Start, End: w.End, InFlight: map[string]int{},
			Unknown: map[string]int{}}
		in, from := scope(w.Targets, known), w.Start
		if w.Kind == "client-pause" {
			c.Frozen, c.FrozenAt = frozenIn(h, w)
			if len(c.Frozen) == 0 { // armed, but granted nothing while armed: the client ran as usual
				out = append(out, c)
				continue
			}
			c.Keys = heldAt(h, c.Frozen, c.FrozenAt)
			in, from = pauseScope(c.Frozen, c.Keys), c.FrozenAt
		}
		for _, o := range h.Ops {
			done := end
			if o.Complete != nil {
				done = o.Complete.Time
			}
			if o.Invoke.Time > w.End {
				break // operations are in invoke order
			}
			if done < from || !in(o.Invoke.Client, o.Invoke.Node, o.Invoke.Key) {
				continue
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
		}
		for _, s := range h.Sections {
			if s.Enter <= w.End && s.Exit >= from && in(s.Client, "", s.Key) && !slices.Contains(c.Holders, s.Client) {
				c.Holders = append(c.Holders, s.Client)
			}
		}
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

// frozenIn is the clients a client-pause window froze at a grant (its "frozen" records), and when the
// first froze.
func frozenIn(h *history.History, w history.Window) ([]string, int64) {
	var clients []string
	var at int64
	for _, f := range h.Faults {
		if f.F != w.Kind || f.Phase != "frozen" || f.Time < w.Start || f.Time > w.End {
			continue
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

// heldAt is the keys the clients held at t, owner by owner (a client's threads are owners of their own):
// those whose owner's latest operation completed by t was a grant.
func heldAt(h *history.History, clients []string, t int64) []string {
	type latest struct {
		at    int64
		grant bool
		key   string
	}
	last := map[[2]string]latest{} // (owner, key)
	for _, o := range h.Ops {
		if !slices.Contains(clients, o.Invoke.Client) || o.Complete == nil || o.Complete.Time > t || o.Invoke.Key == "" {
			continue
		}
		owner := o.Invoke.Owner
		if owner == "" {
			owner = fmt.Sprintf("%s/%d", o.Invoke.Client, o.Invoke.Thread)
		}
		k := [2]string{owner, o.Invoke.Key}
		if l, ok := last[k]; !ok || o.Complete.Time >= l.at {
			grant := o.Complete.Type == history.Ok && slices.Contains(grants, o.Invoke.F)
			last[k] = latest{o.Complete.Time, grant, o.Invoke.Key}
		}
	}
	var keys []string
	for _, l := range last {
		if l.grant && !slices.Contains(keys, l.key) {
			keys = append(keys, l.key)
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
