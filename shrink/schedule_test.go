package shrink

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// A recorded naive overlap (testdata/naive-overlap: the final run of a real shrink, one client of two
// threads) becomes a schedule of its owners' acquires and releases: the holder's grant, the waiter granted
// when the lease ran out, and a release for each hold the violation ends inside. It reads back.
func TestAsScheduleOfARecordedOverlap(t *testing.T) {
	s := recordedSchedule(t, "testdata/naive-overlap")
	back, err := schedule.Parse(s.Marshal(), "schedule.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Marshal())
	}
	acquires, releases := map[string]int{}, map[string]int{}
	var last time.Duration
	for _, st := range back.Steps {
		switch {
		case st.Acquire == schedule.Lock:
			acquires[st.Actor()]++
			if st.Lease == nil || *st.Lease != 300*time.Millisecond {
				t.Errorf("acquire %+v: want the recorded 300ms lease", st)
			}
		case st.Release:
			releases[st.Actor()]++
		case st.Fault != "":
			t.Errorf("fault step %+v in a fault-free run", st)
		}
		if st.At < last {
			t.Errorf("steps out of time order at %+v", st)
		}
		last = st.At
	}
	if len(acquires) != 2 || back.Lock != "naive" || !strings.Contains(back.About, "Two owners held lock-0") {
		t.Fatalf("acquires by %v, lock %q, about %q:\n%s", acquires, back.Lock, back.About, s.Marshal())
	}
	for a, n := range acquires {
		if releases[a] != n {
			t.Errorf("%s: %d acquires, %d releases: every hold ends in the schedule", a, n, releases[a])
		}
	}
	if Span(back) != last+time.Second {
		t.Errorf("span %s, last step at %s", Span(back), last)
	}
	// The run command keeps the lock and drops the random workload's shape.
	c := Cmd{Given: []Flag{{"clients", "1"}, {"lock", "naive"}, {"hold", "400ms-475ms"}, {"time", "2s"}, {"quiet", "1s"}}}
	got := strings.Join(c.ScheduleRun("s.yaml", 3*time.Second).Args(), " ")
	if got != "--lock=naive --quiet=1s --schedule=s.yaml --time=3s" {
		t.Fatalf("schedule run %q", got)
	}
}

// A story without a violation time has nothing to schedule.
func TestAsScheduleNeedsAViolation(t *testing.T) {
	if _, err := AsSchedule(&history.History{}, &report.Story{}, "naive", "mutex"); err == nil {
		t.Fatal("no error for a story without a violation")
	}
}

// A schedule's run has no random workload or fault plan to make smaller: only its time and quiet time are
// tried (its clients, holds, leases and faults are its steps).
func TestReducersLeaveASchedulesStepsAlone(t *testing.T) {
	c, err := FromRun([]string{"lockcheck", "run", "--lock=naive", "--schedule=/s.yaml", "--time=8s", "--quiet=2s"},
		[]byte(`{"clients": 3, "threads": 2, "hold": "400ms-1s", "lease": "300ms-1s", "wait": "0-2s", "reentry": 0.2, "keys": 2, "schedule": "/s.yaml"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Get("schedule") != "" {
		t.Fatal("the recorded --schedule was taken from the run directory")
	}
	c = c.Give("schedule", "/s.yaml") // as the user names it again
	var tried []string
	for _, r := range Reducers {
		if len(r.Next(c)) > 0 {
			tried = append(tried, r.Flag)
		}
	}
	if strings.Join(tried, ",") != "time,quiet" {
		t.Fatalf("reducers with candidates for a schedule's run: %v, want time and quiet", tried)
	}
	if len(Reducers[4].Next(c.Without("schedule").With("schedule", ""))) == 0 {
		t.Fatal("without a schedule the clients are halved")
	}
}

// TestSelectorTargetsOfLinks: a link fault's recorded targets (c1->n1) become the clients and nodes a
// schedule step names, each once, so that the schedule reads back.
func TestSelectorTargetsOfLinks(t *testing.T) {
	got := selectorTargets([]string{"c1->n1", "c2->n1", "n2"}, map[string]bool{"c1": true, "c2": true})
	if want := []string{"c1", "n1", "c2", "n2"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// c3 is no actor of the schedule: its link is left out (a step naming it is refused).
	got = selectorTargets([]string{"c1->n1", "c3->n1", "c3"}, map[string]bool{"c1": true})
	if want := []string{"c1", "n1"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A schedule that failed 0 of its runs is said in one line (the file kept), not printed at full length
// before the command that matters; one that failed prints its steps and its command.
func TestScheduleResultThatDidNotReproduce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "schedule.yaml")
	if err := os.WriteFile(file, []byte("steps:\n  - {client: c1, acquire: lock}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &ScheduleResult{Run: "/r/run", File: file, Runs: 3, Command: "lockcheck run --schedule " + file}
	var b strings.Builder
	r.Print(&b, Signature{})
	if out := b.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, "0 of 3") || !strings.Contains(out, file) ||
		strings.Contains(out, "acquire") {
		t.Fatalf("0 of 3:\n%s", out)
	}
	r.Caught = 2
	b.Reset()
	r.Print(&b, Signature{})
	if out := b.String(); !strings.Contains(out, "acquire: lock") || !strings.Contains(out, r.Command) {
		t.Fatalf("2 of 3:\n%s", out)
	}
}

// A recorded read-write overlap (testdata/rw-reentry-pause: explore's finding on --lock rwlock, a reader's
// read re-entry, a node pause, and a delay-pexpire that also hit c3, whose acquire was refused): the
// re-entry is written as the read it was (it was written as a write, an upgrade Redisson refuses), and the
// fault names no client the schedule does not play (c3: the run of the schedule refused the step).
func TestAsScheduleOfAReadReentry(t *testing.T) {
	s := recordedSchedule(t, "testdata/rw-reentry-pause")
	modes := map[string][]schedule.Op{}
	for _, st := range s.Steps {
		if st.Acquire != "" {
			modes[st.Actor()] = append(modes[st.Actor()], st.Acquire)
		}
		if slices.Contains(st.Targets, "c3") {
			t.Errorf("fault step %+v names c3, which the schedule does not play", st)
		}
	}
	if got := modes["c2"]; !slices.Equal(got, []schedule.Op{schedule.Read, schedule.Read}) {
		t.Fatalf("c2's acquires %v, want its read and its read re-entry:\n%s", got, s.Marshal())
	}
}

// TestAsScheduleOfAQueuedWaiter: a fifo violation (recorded on examples/twins/fair-fixed-slot, explore's
// queue-outlives-slot shape): c1 holds on the watchdog for 7 s, c2 queues at once, c3 arrives 6.5 s in and
// is granted first. The schedule must keep the holder and c2's place in the queue at their times, and the
// holder's release where it came: begun at the violation, it played c2 queuing 6.5 s late and no holder,
// and failed 0 of 5 runs where the run failed 5 of 5.
func TestAsScheduleOfAQueuedWaiter(t *testing.T) {
	s := recordedSchedule(t, "testdata/fair-fifo-queued")
	at := map[string]time.Duration{}
	for _, st := range s.Steps {
		what := "release"
		if st.Acquire != "" {
			what = "acquire"
		}
		if _, seen := at[st.Client+" "+what]; !seen {
			at[st.Client+" "+what] = st.At
		}
	}
	near := func(k string, want time.Duration) bool {
		d, ok := at[k]
		return ok && d > want-300*time.Millisecond && d < want+300*time.Millisecond
	}
	if !near("c1 acquire", 0) || !near("c2 acquire", 100*time.Millisecond) || !near("c3 acquire", 6500*time.Millisecond) ||
		!near("c1 release", 7*time.Second) {
		t.Fatalf("the steps' times %v, want c1 holding from 0 to 7 s, c2 queued at 0.1 s, c3 at 6.5 s:\n%s", at, s.Marshal())
	}
}

// recordedSchedule reads a recorded run (its history and results) and writes its violation as a schedule.
func recordedSchedule(t *testing.T, dir string) *schedule.Schedule {
	t.Helper()
	h, err := history.ReadFile(dir + "/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res, err := report.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := AsSchedule(h, res.Story, h.Run.Lock, h.Run.Checks.Family)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAsScheduleOfAWritersRead: rw-read-unlock-drops-write's finding, recorded: c1 writes, reads inside its
// write and lets the read go, and the twin's read unlock deleted the write, so c3's write got in. The
// writer's read has an owner of its own and no section (it joins the write's), so the timed steps took it
// for a second write and never failed again (0 of 5); the lock command under it says read.
func TestAsScheduleOfAWritersRead(t *testing.T) {
	s := recordedSchedule(t, "testdata/rw-writer-reads")
	var c1 []schedule.Op
	for _, st := range s.Steps {
		if st.Client == "c1" && st.Acquire != "" {
			c1 = append(c1, st.Acquire)
		}
	}
	if want := []schedule.Op{schedule.Write, schedule.Read}; !slices.Equal(c1, want) {
		t.Fatalf("c1's acquires %v, want %v:\n%s", c1, want, s.Marshal())
	}
}

// TestAsScheduleOfAnUnplacedOwner: rw-read-reentry-timeout-key's finding, recorded: c1 reads, re-enters
// with a 1 s lease and lets the re-entry go, and at 2 s its outer release is refused (the twin's re-entry
// wrote the outer hold's timeout key). The story cannot place the owner's grant (an answer that fits no
// legal order), so the timed steps began half a second before the refusal and kept only it: 0 of 5. They
// now begin at the hold the owner was inside then, with its re-entry.
func TestAsScheduleOfAnUnplacedOwner(t *testing.T) {
	s := recordedSchedule(t, "testdata/rw-unplaced-owner")
	var c1 []string
	for _, st := range s.Steps {
		if st.Client == "c1" {
			what := "release"
			if st.Acquire != "" {
				what = string(st.Acquire)
			}
			c1 = append(c1, what)
		}
	}
	if want := []string{"read", "read", "release", "release"}; !slices.Equal(c1, want) {
		t.Fatalf("c1's steps %v, want %v:\n%s", c1, want, s.Marshal())
	}
}
