package topology

// NAT maps every address a node is known by (what nodes and Sentinels announce, and its own) to client's
// proxy to that node: an out-of-process client maps announced addresses through it, as the Go clients'
// Dialer does.
func (t *Topology) NAT(client string) map[string]string {
	out := map[string]string{}
	for addr, name := range t.nodeAt {
		if l := t.links[[2]string{client, name}]; l != nil && l.Addr() != addr {
			out[addr] = l.Addr()
		}
	}
	return out
}
