package coverage

// The model's transitions, family by family: what a correct lock may show. They are the models' rules
// (checker's mutexmodel.go, rwmodel.go, countmodels.go) read for state classes, not timings: a refusal
// by a lock whose lease may have run out is allowed where that lease was not surely over, and so on. A
// run may show a transition not listed here: that is a step the model would refuse (a grant to a second
// owner while the first surely holds), worth a look of its own.

// allowedSet gathers transitions, each once.
type allowedSet struct {
	fam  string
	seen map[Transition]bool
	out  []Transition
}

func newAllowed(fam string) *allowedSet { return &allowedSet{fam: fam, seen: map[Transition]bool{}} }

// add adds every combination of the outcomes and leases given, waiting or not as waits says.
func (a *allowedSet) add(before, op string, outcomes, leases []string, waits []bool) {
	for _, o := range outcomes {
		for _, l := range leases {
			for _, w := range waits {
				t := Transition{Family: a.fam, Before: before, Op: op, Outcome: o, Lease: l, Waiting: w}
				if !a.seen[t] {
					a.seen[t] = true
					a.out = append(a.out, t)
				}
			}
		}
	}
}

var (
	anyWait   = []bool{false, true}
	noLease   = []string{None}
	allLeases = []string{Shorter, Equal, Longer, None}
)

// resent are the outcomes of a release, resent or not: an unlock is sent again after a lost reply.
func resent(os ...string) []string {
	out := append([]string(nil), os...)
	for _, n := range []string{"2", "3+"} {
		for _, o := range os {
			out = append(out, "resent-"+n+":"+o)
		}
	}
	return out
}

func mutexAllowed(name string, fair bool) []Transition {
	a := newAllowed(name)
	for _, st := range []string{Free, Lapsed, HeldOnce, Reentered} {
		queues := []string{""}
		if fair {
			queues = []string{"/queue-0", "/queue-1", "/queue-many"}
		}
		for _, q := range queues {
			waits := anyWait
			switch q {
			case "/queue-0":
				waits = []bool{false}
			case "/queue-1", "/queue-many":
				waits = []bool{true}
			}
			b := st + q
			held := st == HeldOnce || st == Reentered
			strayOut := []string{Refused, Unknown}
			if fair && !held {
				strayOut = append(strayOut, Released) // a fair unlock answers 1 for a lock that is gone
			}
			a.add(b, StrayRelease, resent(strayOut...), noLease, waits)
			a.add(b, StrayRelease, []string{Replayed}, noLease, waits)
			a.add(b, StrayRenew, []string{Refused, Unknown}, noLease, waits)
			a.add(b, Read, []string{Yes, No, Unknown}, noLease, waits)
			if fair {
				a.add(b, Dequeue, []string{Ok, Unknown}, noLease, waits)
			}
			if !held {
				acq := []string{Granted, Unknown}
				if fair || st == Lapsed {
					acq = append(acq, Refused) // the fair lock may refuse a free lock; a lapse may not be over yet
				}
				a.add(b, Acquire, acq, noLease, waits)
				a.add(b, Expire, []string{Refused, Unknown}, noLease, waits)
				a.add(b, ForceRelease, []string{Refused, Unknown}, noLease, waits)
				if st == Lapsed {
					a.add(b, Expire, []string{Ok}, noLease, waits)
					a.add(b, ForceRelease, []string{Ok}, noLease, waits)
				}
				continue
			}
			a.add(b, Acquire, []string{Refused, Unknown}, allLeases, waits)
			a.add(b, Reenter, []string{Granted, Refused, Unknown}, allLeases, waits) // SET NX refuses its own holder
			a.add(b, Renew, []string{Ok, Unknown}, allLeases, waits)
			a.add(b, Expire, []string{Ok, Unknown}, allLeases, waits)
			a.add(b, ForceRelease, []string{Ok, Unknown}, noLease, waits)
			if st == HeldOnce {
				a.add(b, Release, resent(Released, Unknown), noLease, waits)
			} else {
				a.add(b, Release, resent(Kept, Unknown), noLease, waits)
			}
		}
	}
	return a.out
}

func rwAllowed(name string) []Transition {
	a := newAllowed(name)
	for _, b := range []string{Free, Lapsed, Readers1, Readers2, ReadersMany, Writer, WriterReentered, WriterReaders} {
		free := b == Free || b == Lapsed
		readers := b == Readers1 || b == Readers2 || b == ReadersMany
		writer := b == Writer || b == WriterReentered || b == WriterReaders
		leases := allLeases
		if free {
			leases = noLease
		}
		a.add(b, StrayRelease, resent(Refused, Unknown), noLease, anyWait)
		a.add(b, StrayRelease, []string{Replayed}, noLease, anyWait)
		a.add(b, StrayRenew, []string{Refused, Unknown}, noLease, anyWait)
		switch {
		case free:
			a.add(b, ReadAcquire, []string{Granted, Unknown}, leases, anyWait)
			a.add(b, WriteAcquire, []string{Granted, Unknown}, leases, anyWait)
			if b == Lapsed {
				a.add(b, ReadAcquire, []string{Refused}, leases, anyWait)
				a.add(b, WriteAcquire, []string{Refused}, leases, anyWait)
			}
			continue
		case readers:
			a.add(b, ReadAcquire, []string{Granted, Unknown}, leases, anyWait)
			a.add(b, ReadReenter, []string{Granted, Unknown}, leases, anyWait)
			a.add(b, WriteAcquire, []string{Refused, Unknown}, leases, anyWait) // no upgrade, nor a writer beside readers
			// kept: the caller re-entered its read hold, or others still read; released (1) once every other
			// reader's timeout has run out
			a.add(b, ReadRelease, resent(Kept, Released, Unknown), noLease, anyWait)
		case writer:
			a.add(b, ReadAcquire, []string{Refused, Unknown}, leases, anyWait)
			a.add(b, ReadUnderWrite, []string{Granted, Unknown}, leases, anyWait)
			a.add(b, WriteAcquire, []string{Refused, Unknown}, leases, anyWait)
			a.add(b, WriteReenter, []string{Granted, Unknown}, leases, anyWait)
			out := []string{Kept, Unknown}
			if b == Writer {
				out = []string{Released, Unknown}
			}
			a.add(b, WriteRelease, resent(out...), noLease, anyWait)
			if b == WriterReaders {
				a.add(b, ReadReenter, []string{Granted, Unknown}, leases, anyWait)
				a.add(b, ReadRelease, resent(Kept, Unknown), noLease, anyWait)
			}
		}
		a.add(b, Renew, []string{Ok, Unknown}, leases, anyWait)
	}
	return a.out
}

func semAllowed(name string, expirable bool) []Transition {
	a := newAllowed(name)
	a.add(Unset, SetPermits, []string{Ok, Unknown}, noLease, anyWait)
	a.add(Unset, Acquire, []string{Refused, Unknown}, noLease, anyWait)
	a.add(Unset, Read, []string{Ok, Unknown}, noLease, anyWait)
	for _, b := range []string{Permits0, PermitsSome, PermitsAll} {
		a.add(b, SetPermits, []string{Refused, Unknown}, noLease, anyWait)
		a.add(b, Read, []string{Ok, Unknown}, noLease, anyWait)
		acq := []string{Refused, Unknown}
		if b != Permits0 {
			acq = []string{Granted, Refused, Unknown} // refused: more permits asked than are left
		}
		a.add(b, Acquire, acq, noLease, anyWait)
		switch {
		case !expirable:
			a.add(b, Release, []string{Ok, Unknown}, noLease, anyWait)
		case b != PermitsAll:
			a.add(b, Release, []string{Released, Refused, Unknown}, noLease, anyWait) // refused: its lease ran out
			a.add(b, StrayRelease, []string{Refused, Unknown}, noLease, anyWait)
		default:
			a.add(b, StrayRelease, []string{Refused, Unknown}, noLease, anyWait)
		}
	}
	return a.out
}

func latchAllowed(name string) []Transition {
	a := newAllowed(name)
	never := []bool{false} // no one waits to acquire a latch
	for _, b := range []string{Open, Count1, CountMany} {
		set := []string{Refused, Unknown}
		wait := []string{No, Unknown}
		if b == Open {
			// An await that gave up is placed at its return: the count may have reached zero since it last looked.
			set, wait = []string{Ok, Unknown}, []string{Yes, No, Unknown}
		}
		a.add(b, SetCount, set, noLease, never)
		a.add(b, CountDown, []string{Ok, Unknown}, noLease, never)
		a.add(b, Read, []string{Ok, Unknown}, noLease, never)
		a.add(b, Await, wait, noLease, never)
	}
	return a.out
}
