package topology

import (
	"strings"
	"testing"
)

// An external deployment refuses each fault from what the fault declares it needs (nemesis.Fault.Needs),
// exactly as the switch of fault names it replaced did: bare is a deployment with nothing but its nodes,
// full one with toxiproxy, every node's container and front proxy.
func TestExternalRefusesFromTheFaultsNeeds(t *testing.T) {
	bare := External{Topology: Sentinel, Nodes: []ExternalNode{{Name: "n1", Addr: "127.0.0.1:1"}}}
	full := External{Topology: Sentinel, Toxiproxy: "127.0.0.1:1",
		Nodes: []ExternalNode{{Name: "n1", Addr: "127.0.0.1:1", Container: "redis-1", Front: "n1-front"}}}
	const (
		process = "process control"
		clock   = "clockshift"
		held    = "toxic of lockcheck's own proxies"
		taps    = "taps between the nodes"
		front   = "primary's front"
		link    = "link faults go through toxiproxy"
	)
	for _, c := range []struct{ fault, bare, full string }{
		{"kill", process, ""}, {"pause", process, ""},
		{"clock", clock, clock}, {"clock-strobe", clock, clock}, {"clock-drift", clock, clock},
		{"hold-replies", held, held},
		{"lagging-failover", taps, taps}, {"stalled-failover", taps, taps}, {"partition-nodes", taps, taps},
		{"failover", front, ""},
		{"client-pause", "", ""}, {"client-clock", "", ""}, {"failover-command", "", ""},
		{"partition", link, ""}, {"partition-node", link, ""}, {"partition-halves", link, ""},
		{"partition-ring", link, ""}, {"latency", link, ""}, {"drop-reply", link, ""}, {"delay-pexpire", link, ""},
		{"client-stall", link, ""}, {"resource-delay", link, ""},
	} {
		for _, d := range []struct {
			name string
			e    External
			want string
		}{{"bare", bare, c.bare}, {"full", full, c.full}} {
			got := d.e.Refusal(c.fault)
			if (got == "") != (d.want == "") || !strings.Contains(got, d.want) {
				t.Errorf("%s on a %s deployment: refused %q, want %q", c.fault, d.name, got, d.want)
			}
		}
	}
}
