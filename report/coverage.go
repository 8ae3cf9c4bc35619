package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// FaultCoverage is what one fault window did to the lock: the operations in flight in its scope while it
// was in force (the targeted clients' for a client or link fault, those sent to the targeted nodes for a
// node fault, every one for a failover), which of them ended unknown, the grants and releases in it, and
// whether a holder was inside its critical section then (for a node fault, any holder: a critical section
// does not name the nodes that hold its lock). A fault that touched nothing could not have caught anything.
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
	Touched  bool           `json:"touched"`
}

// MissedLock is the verdict's wording for a valid run whose faults touched nothing.
const MissedLock = "valid, but the faults missed the lock"

// Coverage measures every fault window of the history.
func Coverage(h *history.History) []FaultCoverage {
	var out []FaultCoverage
	end := h.End()
	known := map[string]bool{}
	for _, o := range h.Ops {
		known[o.Invoke.Client] = true
	}
	for _, w := range h.Windows() {
		c := FaultCoverage{Fault: w.Kind, Targets: w.Targets, Start: w.Start, End: w.End, InFlight: map[string]int{},
			Unknown: map[string]int{}}
		in := scope(w.Targets, known)
		for _, o := range h.Ops {
			done := end
			if o.Complete != nil {
				done = o.Complete.Time
			}
			if o.Invoke.Time > w.End {
				break // operations are in invoke order
			}
			if done < w.Start || !in(o.Invoke.Client, o.Invoke.Node) {
				continue
			}
			c.InFlight[o.Invoke.F]++
			if o.Outcome() == history.Unknown {
				c.Unknown[o.Invoke.F]++
			}
			if o.Outcome() == history.Ok && done >= w.Start && done <= w.End {
				switch o.Invoke.F {
				case "acquire":
					c.Grants++
				case "release":
					c.Releases++
				}
			}
		}
		for _, s := range h.Sections {
			if s.Enter <= w.End && s.Exit >= w.Start && in(s.Client, "") && !slices.Contains(c.Holders, s.Client) {
				c.Holders = append(c.Holders, s.Client)
			}
		}
		slices.Sort(c.Holders)
		c.Touched = len(c.InFlight) > 0 || len(c.Holders) > 0
		out = append(out, c)
	}
	return out
}

// scope says which operations a fault with these targets reaches: a client's or a link's targets name
// clients (and nodes), a node fault names nodes, and a failover ("shard:K") reaches every operation. An
// operation that does not name its node may have gone to any.
func scope(targets []string, known map[string]bool) func(client, node string) bool {
	clients, nodes, all := map[string]bool{}, map[string]bool{}, false
	for _, t := range targets {
		switch c, n, link := strings.Cut(t, "->"); {
		case link && (c == "*" || c == "bus"):
			nodes[n] = true
		case link:
			clients[c] = true
			nodes[n] = true
		case strings.Contains(t, ":"): // shard:K, keep:cX, mode:..., lagging-replica:...: the whole shard
			all = true
		default:
			if name, _, _ := strings.Cut(t, "@"); known[name] {
				clients[name] = true
			} else {
				nodes[t] = true
			}
		}
	}
	return func(client, node string) bool {
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
	if !c.Touched {
		return head + ": touched no lock operation and no holder"
	}
	holders := "no holder inside"
	if len(c.Holders) > 0 {
		holders = "holders inside: " + strings.Join(c.Holders, " ")
	}
	unknown := "none"
	if len(c.Unknown) > 0 {
		unknown = counts(c.Unknown)
	}
	return fmt.Sprintf("%s: in flight %s; unknown %s; %d grants, %d releases; %s", head, counts(c.InFlight), unknown,
		c.Grants, c.Releases, holders)
}

func counts(m map[string]int) string {
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
