package checker

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// names builds the derived strings of a command (its thread, node/key and owner) once per distinct
// input: built per operation they were three allocations each, 80 B per command of a million-command
// history held until its check ends, all copies of a few hundred strings. The history's own strings are
// shared, so the lookups cost a hash and no allocation.
type names struct {
	threads map[threadID]string
	keys    map[[2]string]string
	owners  map[[2]string]string
}

type threadID struct {
	client string
	thread int64
}

func newNames() *names {
	return &names{threads: map[threadID]string{}, keys: map[[2]string]string{}, owners: map[[2]string]string{}}
}

// thread is threadName(r).
func (n *names) thread(r *history.Record) string {
	id := threadID{r.Client, r.Thread}
	s, ok := n.threads[id]
	if !ok {
		s = threadName(*r)
		n.threads[id] = s
	}
	return s
}

// key is nodeKey(r).
func (n *names) key(r *history.Record) string {
	if r.Node == "" {
		return r.Key
	}
	id := [2]string{r.Node, r.Key}
	s, ok := n.keys[id]
	if !ok {
		s = nodeKey(*r)
		n.keys[id] = s
	}
	return s
}

// owner is ownerName(r).
func (n *names) owner(r *history.Record) string {
	id := [2]string{r.Client, r.Owner}
	s, ok := n.owners[id]
	if !ok {
		s = ownerName(*r)
		n.owners[id] = s
	}
	return s
}

// threadName names a record's row: client/thread, or client/watchdog for its own-initiative commands.
func threadName(r history.Record) string {
	if r.Thread == 0 {
		return r.Client + "/watchdog"
	}
	return fmt.Sprintf("%s/%d", r.Client, r.Thread)
}
