package nemesis_test

import (
	"testing"

	"github.com/lockcheck/lockcheck/nemesis"
)

// stalled-failover holds every replica, so WAIT counts none (what Redisson up to 3.16.6 ignored, #3994),
// and the replica promoted after the primary's isolation lacks the write.
func TestStalledReplicasArePromotedWithoutTheWrite(t *testing.T) {
	if primary := isolatingFailover(t, "stalled-failover", nemesis.ParseTargets([]string{"shard:0", "lagging-replica:all"}), 0); primary != "n2" && primary != "n3" {
		t.Fatalf("primary %q after the fault, want a stalled replica", primary)
	}
}
