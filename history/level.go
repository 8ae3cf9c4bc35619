package history

import (
	"slices"
	"strings"
)

// WireComplete reports whether the history's wire records hold every lock command the clients sent: the
// wire recorder wrote its wire-complete event and nothing said otherwise. A run that was killed before
// its taps stopped, or whose tap gave up on a connection, has no such event.
func (h *History) WireComplete() bool {
	complete := false
	for _, e := range h.Events {
		if e.Client != WireClient {
			continue
		}
		switch e.F {
		case WireComplete:
			complete = true
		case WireIncomplete:
			return false
		}
	}
	return complete
}

// OnlySrc is a shallow copy of h whose operations are those recorded with Src src ("" for the clients'
// own records, "wire" for the wire recorder's), or h itself when that is all of them: read-only, as h.
func (h *History) OnlySrc(src string) *History {
	if !slices.ContainsFunc(h.Ops, func(o Operation) bool { return o.Invoke.Src != src }) {
		return h // the common case, and no copy of a million operations per checker
	}
	c := *h
	c.Ops = nil
	for _, o := range h.Ops {
		if o.Invoke.Src == src {
			c.Ops = append(c.Ops, o)
		}
	}
	return &c
}

// WireClients lists the clients whose links the wire recorder tapped, from the Targets of its closing
// event: nil when it tapped them all (a worker run), a subset in a mixed run (--client W,go), whose other
// clients are lockcheck's Go clients, which record their own lock commands.
func (h *History) WireClients() []string {
	var out []string
	for _, e := range h.Events {
		if e.Client == WireClient && (e.F == WireComplete || e.F == WireIncomplete) {
			out = e.Targets
		}
	}
	return out
}

// CommandRecords is a shallow copy of h whose operations are each client's lock commands as recorded at
// the level that holds them: the wire records of the clients in wire, the clients' own records of the
// others (lockcheck's Go clients write one record per command).
func (h *History) CommandRecords(wire []string) *History {
	tapped := map[string]bool{}
	for _, c := range wire {
		tapped[c] = true
	}
	c := *h
	c.Ops = nil
	for _, o := range h.Ops {
		if o.Invoke.Src == WireSrc || o.Invoke.Src == "" && !tapped[o.Invoke.Client] {
			c.Ops = append(c.Ops, o)
		}
	}
	return &c
}

// UnseenPrefix begins the F of a worker's call that no model reads (a count primitive's request,
// "lcp_acquire_permits"): the lock commands it sent are not among the client records.
const UnseenPrefix = "lcp_"

// WithoutUnseenKeys is a shallow copy of h without the operations on keys that some call with
// UnseenPrefix touched: the other clients' commands on such a key are only part of what changed it (a
// mixed run's Go clients beside a worker whose wire history is incomplete), and a model would judge a
// count it cannot see. A pure worker run loses nothing here: its models read none of its calls.
func (h *History) WithoutUnseenKeys() *History {
	unseen := map[string]bool{}
	for _, o := range h.Ops {
		if strings.HasPrefix(o.Invoke.F, UnseenPrefix) {
			unseen[o.Invoke.Key] = true
		}
	}
	if len(unseen) == 0 {
		return h
	}
	c := *h
	c.Ops = nil
	for _, o := range h.Ops {
		if !unseen[o.Invoke.Key] {
			c.Ops = append(c.Ops, o)
		}
	}
	return &c
}
