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

// Enter starts a critical section on key. token is a fencing token, or 0 for none; a token not above the
// highest one already seen is rejected (the section is recorded, and marked rejected).
func (r *Resource) Enter(key, client string, thread int64, owner string, token int64) *Section {
	s := &Section{r: r, rec: history.Record{Client: client, Thread: thread, Key: key, Owner: owner, Token: token}}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.rec.Enter = r.rec.Clock.Now()
	if token != 0 {
		if token <= r.last[key] {
			s.Rejected = true
			s.rec.Rejected = true
			return s
		}
		r.last[key] = token
	}
	in := r.inside[key]
	if in == nil {
		in = map[*Section]bool{}
		r.inside[key] = in
	}
	for o := range in {
		if o.rec.Owner != owner {
			o.overlap, s.overlap = true, true
		}
	}
	in[s] = true
	return s
}

// Exit ends the section and records it.
func (s *Section) Exit() {
	r := s.r
	r.mu.Lock()
	delete(r.inside[s.rec.Key], s)
	s.rec.Exit = r.rec.Clock.Now()
	r.mu.Unlock()
	r.rec.Section(s.rec, s.overlap)
}
