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
	threads map[threadID]*threadNames
	keys    map[[2]string]string
}

// threadNames are a thread's name and its latest owner's: a thread keeps one owner id for long, so
// comparing it is cheaper than hashing the 40-byte id per command.
type threadNames struct {
	name, ownerID, owner string
	haveOwner            bool
}

type threadID struct {
	client string
	thread int64
}

func newNames() *names {
	return &names{threads: map[threadID]*threadNames{}, keys: map[[2]string]string{}}
}

func (n *names) of(r *history.Call) *threadNames {
	id := threadID{r.Client, r.Thread}
	t, ok := n.threads[id]
	if !ok {
		t = &threadNames{name: threadName(*r)}
		n.threads[id] = t
	}
	return t
}

// thread is threadName(r).
func (n *names) thread(r *history.Call) string { return n.of(r).name }

// key is nodeKey(r).
func (n *names) key(r *history.Call) string {
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
func (n *names) owner(r *history.Call) string {
	t := n.of(r)
	if !t.haveOwner || t.ownerID != r.Owner {
		t.ownerID, t.owner, t.haveOwner = r.Owner, ownerName(*r), true
	}
	return t.owner
}

// threadName names a record's row: client/thread, or client/watchdog for its own-initiative commands.
func threadName(r history.Call) string {
	if r.Thread == 0 {
		return r.Client + "/watchdog"
	}
	return fmt.Sprintf("%s/%d", r.Client, r.Thread)
}
