package nemesis_test

import (
	"context"
	"testing"
	"time"
)

// delay-pexpire on a real node: a held client's PEXPIRE waits at its proxy until the heal while its other
// commands, and the PEXPIRE of a client left out (a release's caller, under a trigger), pass; at the heal
// it applies, and its caller hears.
func TestDelayPexpireOnARealNode(t *testing.T) {
	ctx := context.Background()
	topo, env, f, targets := everyLinkFault(t, "delay-pexpire")
	targets = targets[:1] // as a release by c2 aims it (TestDelayPexpireLeavesTheReleaserOut): c1's link only
	held, free := "c1", "c2"
	hc, fc := linkClient(t, topo, held), linkClient(t, topo, free)
	direct := admin(topo, "n1")
	defer direct.Close()
	_, heal, err := f.Start(ctx, env, targets)
	if err != nil {
		t.Fatal(err)
	}
	replied := make(chan error, 1)
	go func() { replied <- hc.PExpire(ctx, "held", time.Hour).Err() }()
	if err := hc.Set(ctx, "held", "v", 0).Err(); err != nil {
		t.Fatalf("the held client's SET on another connection: %v", err)
	}
	if err := fc.Set(ctx, "free", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := fc.PExpire(ctx, "free", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("the other client's PEXPIRE during the fault: %v, %v", ok, err)
	}
	select {
	case err := <-replied:
		t.Fatalf("the held PEXPIRE was answered during the fault (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if d := direct.PTTL(ctx, "held").Val(); d != -1 {
		t.Fatalf("pttl %v during the fault: the held PEXPIRE applied", d)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-replied:
		if err != nil {
			t.Fatalf("the held PEXPIRE after the heal: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held PEXPIRE never came through after the heal")
	}
	if d := direct.PTTL(ctx, "held").Val(); d < time.Minute {
		t.Fatalf("pttl %v after the heal, want the delivered PEXPIRE's hour", d)
	}
}
