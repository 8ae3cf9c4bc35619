// Package kind is what each topology kind is, as plain data: the facts the runner, the lock kinds and the
// checkers ask of a kind, so that none of them compares kind names. It imports nothing, so a checker can
// ask it without depending on the package that starts nodes (topology).
package kind

// Kind is one shape of deployment. Its Name is what --topology, the meta record and the worker protocol's
// init message carry.
type Kind struct {
	Name string
	// Masters is set where --nodes chooses the number of independent masters (Redlock); DefaultMasters is
	// that number when --nodes is not given.
	Masters        bool
	DefaultMasters int
	// Nodes is how many data nodes the kind starts where Masters is not set.
	Nodes int
	// Sentinels is how many Sentinel processes watch the nodes (0: none); clients find the primary through
	// them.
	Sentinels int
	// Slots is set where clients find each key's master by Redis Cluster's slots.
	Slots bool
	// FailsOver is set where a replica can be promoted, and so lose acknowledged writes.
	FailsOver bool
	// Direct is set where a client's connection goes to the very node a record names (each master its own
	// connection), so that a command's server is known from its record.
	Direct bool
}

// NodeCount is how many data nodes the kind starts, given --nodes (0: unset).
func (k Kind) NodeCount(masters int) int {
	if k.Masters {
		return masters
	}
	return max(k.Nodes, 1)
}

// Known reports whether k is one of the kinds lockcheck starts.
func (k Kind) Known() bool { return k.Nodes > 0 || k.Masters }

// Named is the kind called name; an unknown name is a Kind with that name and no facts (Known false).
func Named(name string) Kind {
	for _, k := range All {
		if k.Name == name {
			return k
		}
	}
	return Kind{Name: name}
}

// All lists the kinds, in the order --help names them: a new kind is one file here and its name in All.
var All = []Kind{Single, Redlock, Sentinel, Cluster}
