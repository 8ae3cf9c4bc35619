package nemesis

import (
	"strconv"
	"strings"
	"time"
)

// TargetKind says which part of a deployment a Target names.
type TargetKind uint8

const (
	// Named is a node or a client by name ("n1", "c2"): the fault that drew it knows which, and a reader
	// of a history tells them apart by its clients. Anything outside the grammar below reads as Named.
	Named TargetKind = iota
	// ClientClock is a client and how far its clock moves ("c2@+1m0s").
	ClientClock
	// LinkTo is a link from a client, or "*" (a node's shared front) or "bus" (its cluster bus), to a node
	// ("c1->n2").
	LinkTo
	// Shard is the shard a failover hits ("shard:0").
	Shard
	// Kept is a client kept on an isolated primary ("keep:c1").
	Kept
	// Mode is how a failover command runs ("mode:force").
	Mode
	// Lagging is which replica (by rank) a lagging failover holds, or all ("lagging-replica:0", ":all").
	Lagging
)

// Front and Bus name the two link sources that are not clients: the node's shared front proxy (what
// Sentinels and replicas reach it through) and its cluster bus.
const (
	Front = "*"
	Bus   = "bus"
)

// Primary stands for the node that is primary when a fault starts; Plan.Run resolves it.
const Primary = "@primary"

// Target is one thing one occurrence of a fault hits. It is written in histories and plans as the string
// String gives (unchanged from the histories lockcheck always wrote), and ParseTarget is the only reader of
// that grammar.
type Target struct {
	Kind   TargetKind
	Name   string        // Named; ClientClock's and Kept's client; LinkTo's node (or Primary)
	From   string        // LinkTo: a client, Front or Bus
	Shard  int           // Shard
	Offset time.Duration // ClientClock
	Mode   string        // Mode
	Rank   int           // Lagging: the replica's rank; AllReplicas for every one
}

// AllReplicas is Lagging's Rank for every replica.
const AllReplicas = -1

// Constructors, one per kind.
func NameTarget(name string) Target { return Target{Kind: Named, Name: name} }
func LinkTarget(from, node string) Target {
	return Target{Kind: LinkTo, From: from, Name: node}
}
func ClockTarget(client string, d time.Duration) Target {
	return Target{Kind: ClientClock, Name: client, Offset: d}
}
func ShardTarget(k int) Target            { return Target{Kind: Shard, Shard: k} }
func KeepTarget(client string) Target     { return Target{Kind: Kept, Name: client} }
func ModeTarget(mode string) Target       { return Target{Kind: Mode, Mode: mode} }
func LaggingTarget(rank int) Target       { return Target{Kind: Lagging, Rank: rank} }
func (t Target) IsPrimary() bool          { return (t.Kind == Named || t.Kind == LinkTo) && t.Name == Primary }
func (t Target) withNode(n string) Target { t.Name = n; return t }

// ParseTarget reads a target as histories and plans spell it. It never fails: a string outside the
// grammar (a clipped one, say) is kept whole as a name, so it prints back as it was read.
func ParseTarget(s string) Target {
	if from, node, ok := strings.Cut(s, "->"); ok {
		return LinkTarget(from, node)
	}
	if s == Primary {
		return NameTarget(s)
	}
	if prefix, rest, ok := strings.Cut(s, ":"); ok {
		switch prefix {
		case "shard":
			if k, err := strconv.Atoi(rest); err == nil && strconv.Itoa(k) == rest {
				return ShardTarget(k)
			}
		case "keep":
			return KeepTarget(rest)
		case "mode":
			return ModeTarget(rest)
		case "lagging-replica":
			if rest == "all" {
				return LaggingTarget(AllReplicas)
			}
			if k, err := strconv.Atoi(rest); err == nil && k >= 0 && strconv.Itoa(k) == rest {
				return LaggingTarget(k)
			}
		}
		return NameTarget(s)
	}
	if client, off, ok := strings.Cut(s, "@"); ok {
		if d, err := time.ParseDuration(off); err == nil && ClockTarget(client, d).String() == s {
			return ClockTarget(client, d)
		}
	}
	return NameTarget(s)
}

// String is the target as histories and plans spell it.
func (t Target) String() string {
	switch t.Kind {
	case LinkTo:
		return t.From + "->" + t.Name
	case ClientClock:
		if t.Offset < 0 {
			return t.Name + "@" + t.Offset.String()
		}
		return t.Name + "@+" + t.Offset.String()
	case Shard:
		return "shard:" + strconv.Itoa(t.Shard)
	case Kept:
		return "keep:" + t.Name
	case Mode:
		return "mode:" + t.Mode
	case Lagging:
		if t.Rank == AllReplicas {
			return "lagging-replica:all"
		}
		return "lagging-replica:" + strconv.Itoa(t.Rank)
	}
	return t.Name
}

// MarshalText writes the target's string, so plans in JSON read as they always did (as text, JSON escapes
// it exactly as it escaped the plain strings).
func (t Target) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads the target's string.
func (t *Target) UnmarshalText(b []byte) error {
	*t = ParseTarget(string(b))
	return nil
}

// ParseTargets reads a history record's targets.
func ParseTargets(ss []string) []Target {
	out := make([]Target, len(ss))
	for i, s := range ss {
		out[i] = ParseTarget(s)
	}
	return out
}

// TargetStrings spells targets for a history record.
func TargetStrings(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// ShardOf is the shard among targets (0 when none names one).
func ShardOf(targets []Target) int {
	for _, t := range targets {
		if t.Kind == Shard {
			return t.Shard
		}
	}
	return 0
}

// KeptClients are the clients targets keep on an isolated primary.
func KeptClients(targets []Target) []string {
	var out []string
	for _, t := range targets {
		if t.Kind == Kept {
			out = append(out, t.Name)
		}
	}
	return out
}
