package nemesis

import (
	"reflect"
	"testing"
)

// A triggered partition cuts the client just granted, every link of it, in place of the drawn minority
// (S7 aimed at the holder); held replies fire at a release (S2) and
// hold every client's links.
func TestPartitionAndHoldAimAtTheCaller(t *testing.T) {
	p := triggeredBy["partition"]
	if p.trigger != "grant" {
		t.Fatalf("partition is fired by %q, want grant", p.trigger)
	}
	ev := Event{Type: "ok", F: "tryLock", Client: "c3"}
	if a := p.aim(ev, ts("c1->n1", "c1->n2", "c2->n1", "c2->n2")); !reflect.DeepEqual(a, ts("c3->n1", "c3->n2")) {
		t.Fatalf("partition aimed at %v, want the holder's links", a)
	}
	h := triggeredBy["hold-replies"]
	all := ts("c1->n1", "c2->n1")
	if a := h.aim(Event{Type: "ok", F: "unlock", Client: "c2"}, all); h.trigger != "release" || !reflect.DeepEqual(a, all) {
		t.Fatalf("hold-replies is fired by %q and aimed at %v; want release, every client's links", h.trigger, a)
	}
}

// A triggered resource-delay delays the writes of the client just granted.
func TestResourceDelayAimsAtTheHolder(t *testing.T) {
	r := triggeredBy["resource-delay"]
	if a := r.aim(Event{Type: "ok", F: "tryLock", Client: "c3"}, ts("c1")); r.trigger != "grant" || !reflect.DeepEqual(a, ts("c3")) {
		t.Fatalf("resource-delay fired by %q, aimed at %v; want grant, the holder c3", r.trigger, a)
	}
}

// A triggered delay-pexpire fires at a release and holds every client's PEXPIREs but the releaser's, which
// may take the lock again unheld.
func TestDelayPexpireLeavesTheReleaserOut(t *testing.T) {
	d := triggeredBy["delay-pexpire"]
	all := ts("c1->n1", "c1->n2", "c2->n1", "c2->n2", "c3->n1", "c3->n2")
	if a := d.aim(Event{Type: "ok", F: "unlock", Client: "c2"}, all); d.trigger != "release" ||
		!reflect.DeepEqual(a, ts("c1->n1", "c1->n2", "c3->n1", "c3->n2")) {
		t.Fatalf("delay-pexpire is fired by %q and aimed at %v; want release, every client's links but c2's", d.trigger, a)
	}
}
