package topology

import (
	"context"
	"net"
	"testing"
	"time"
)

// Stop ends in bounded time and still stops the nodes when a step hangs (here a closer, as an external
// deployment's engine or API that stopped answering would).
func TestStopIsBoundedWhenAStepHangs(t *testing.T) {
	topo, err := Start(context.Background(), Spec{Kind: Single, Clients: []string{"c1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	addr := topo.Nodes[0].Addr()
	hang := make(chan struct{})
	defer close(hang)
	topo.closers = append(topo.closers, func() { <-hang })
	begin := time.Now()
	topo.Stop()
	if took := time.Since(begin); took > StopWait+5*time.Second {
		t.Fatalf("Stop took %v with one step hanging", took)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the node outlived Stop")
	}
}
