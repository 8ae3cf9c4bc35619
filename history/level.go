package history

import "slices"

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
