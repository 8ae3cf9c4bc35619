package sdk

import (
	"context"
	"net"
)

// NATDialer dials every address through nat (announced address -> the client's own proxy), as a worker on
// a Sentinel or Cluster topology must; other addresses are dialled as they are.
func NATDialer(nat map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := nat[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}
