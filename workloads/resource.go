// Package workloads drives lock clients with concurrent generators and owns the protected resource that the
// critical sections touch.
package workloads

import (
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// Resource is the thing a lock protects. It lives in the harness, outside every fault, and records each
// critical section (who, which key, enter, exit, token) so that overlaps are observable in real time, as
// Jepsen's lock-protected set is.
type Resource struct {
	rec *history.Recorder
	// Capacity is how many may be inside one key at once: 0 for a lock (one owner, or many readers), N for
	// a semaphore's N permits.
	Capacity int

	mu     sync.Mutex
	inside map[string]map[*Section]bool // per key, sections now inside
	last   map[string]int64             // per key, highest fencing token accepted
}

// Section is one stay inside the critical section.
type Section struct {
	r        *Resource
	rec      history.Record
	overlap  bool
	Rejected bool // a fenced entry whose token was stale
}

// NewResource records sections through rec.
func NewResource(rec *history.Recorder) *Resource {
	return &Resource{rec: rec, inside: map[string]map[*Section]bool{}, last: map[string]int64{}}
}

// Entry describes who enters: mode is "" (exclusive), "read", "write" or "permit"; token is a fencing
// token or 0; until is the end of the holder's validity window on the run clock, or 0.
type Entry struct {
	Key, Client, Owner, Mode string
	Thread, Token, Until     int64
}

// Enter starts a critical section. A fenced entry writes its token: a token below the highest one the key
// has seen is rejected (the section is recorded, marked rejected). Exit writes again with the same check,
// so a holder overtaken by a newer token finds its last write refused.
func (r *Resource) Enter(e Entry) *Section {
	s := &Section{r: r, rec: history.Record{Client: e.Client, Thread: e.Thread, Key: e.Key, Owner: e.Owner,
		Token: e.Token, F: e.Mode, Until: e.Until}}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.rec.Enter = r.rec.Clock.Now()
	if !r.write(s) {
		return s
	}
	in := r.inside[e.Key]
	if in == nil {
		in = map[*Section]bool{}
		r.inside[e.Key] = in
	}
	in[s] = true
	if r.Capacity > 0 {
		if len(in) > r.Capacity {
			for o := range in {
				o.overlap = true
			}
		}
		return s
	}
	for o := range in {
		if o != s && o.rec.Owner != e.Owner && !(o.rec.F == "read" && e.Mode == "read") {
			o.overlap, s.overlap = true, true
		}
	}
	return s
}

// write applies a fenced write under r.mu; it reports false (and marks the section) when the token is stale.
func (r *Resource) write(s *Section) bool {
	t := s.rec.Token
	if t == 0 {
		return true
	}
	if t < r.last[s.rec.Key] {
		s.Rejected, s.rec.Rejected = true, true
		return false
	}
	r.last[s.rec.Key] = t
	return true
}

// Exit makes the section's last write and records it.
func (s *Section) Exit() {
	r := s.r
	r.mu.Lock()
	if !s.Rejected {
		r.write(s)
	}
	delete(r.inside[s.rec.Key], s)
	s.rec.Exit = r.rec.Clock.Now()
	r.mu.Unlock()
	r.rec.Section(s.rec, s.overlap)
}
