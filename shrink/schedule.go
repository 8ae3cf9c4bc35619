package shrink

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// lead is how long before the first owner's grant a schedule begins: the acquires in flight then (a
// waiter that is granted the moment the holder's lease runs out) are part of the story.
const lead = 500 * time.Millisecond

// AsSchedule is a caught run's first violation as a schedule (docs/schedules.md): every acquire that was
// granted (or may have been) and every release of the story's key, from shortly before its first owner was
// granted to the end of the violation (its owners' releases), at the times they were called, with the faults in force then. Its steps are
// timed, not chained: they replay the recorded interleaving, which a random workload lined up by chance.
// family is the run's lock family (mutex or rwlock: a read-write lock's acquires take their mode from the
// critical section that followed them).
func AsSchedule(h *history.History, story *report.Story, lock, family string) (*schedule.Schedule, error) {
	if story == nil || story.At <= 0 {
		return nil, fmt.Errorf("the run's story has no violation time")
	}
	own := h.OnlySrc("")
	onKey := func(c history.Call) bool { return story.Key == "" || c.Key == story.Key }
	from := story.At
	for _, o := range story.Owners {
		if o.Granted >= 0 && o.Granted < from {
			from = o.Granted
		}
		if o.Entered > 0 && o.Entered < from {
			from = o.Entered
		}
		// An owner whose grant the story does not place (an answer that fits no legal order): the hold it
		// was inside then, re-entries and all, is the story.
		if o.Granted < 0 && o.Entered <= 0 {
			if t := holdStart(own, o.Name, story.Key, story.At); t >= 0 && t < from {
				from = t
			}
		}
	}
	// An acquire in flight then and granted later (or never answered) queued when it was called: a waiter's
	// place in the queue is part of the story (fifo's first waiter), so the schedule begins before it.
	for _, op := range own.Ops {
		c := op.Invoke
		if c.F == "tryLock" && c.Time < from && (op.Complete == nil || op.Complete.Time >= from && op.Complete.Type != history.Fail) && onKey(c) {
			from = c.Time
		}
	}
	from = max(0, from-int64(lead))
	// To the end of the violation: the owners' releases are what make their holds last as long as they did
	// (a schedule played once ends when its last step is done).
	to := story.At + story.For
	for _, o := range story.Owners {
		to = max(to, o.Left)
	}
	// and to the grants of the acquires in flight then (fifo's violation is an arrival granted later)
	end := to
	for _, op := range own.Ops {
		c := op.Invoke
		if c.F == "tryLock" && c.Time <= to && op.Complete != nil && op.Complete.Type == history.Ok && onKey(c) {
			end = max(end, op.Complete.Time)
		}
	}
	to = end
	type held struct {
		client string
		thread int64
		key    string
	}
	depth := map[held]int{}
	// Holds granted before the schedule begins and still held then keep the lock busy through it: their
	// acquires come first, at its start (the holder of a fifo story, whose waiters queued behind it).
	before := map[held][]int{}
	for i, op := range own.Ops {
		c := op.Invoke
		if c.Time >= from || !onKey(c) {
			continue
		}
		a := held{c.Client, c.Thread, c.Key}
		switch {
		case c.F == "tryLock" && op.Complete != nil && op.Complete.Type == history.Ok && op.Complete.Time < from:
			before[a] = append(before[a], i)
		case c.F == "unlock" && len(before[a]) > 0:
			before[a] = before[a][:len(before[a])-1]
		}
	}
	openAtFrom := map[int]bool{}
	for _, is := range before {
		for _, i := range is {
			openAtFrom[i] = true
		}
	}
	var steps []timedStep
	for i, op := range own.Ops {
		c := op.Invoke
		if c.Time > to || op.Complete != nil && op.Complete.Time < from && !openAtFrom[i] || c.Time < from && c.F != "tryLock" || !onKey(c) {
			continue
		}
		a := held{c.Client, c.Thread, c.Key}
		st := schedule.Step{Client: c.Client, Thread: threadOf(c.Thread), Key: keyOf(c.Key)}
		switch c.F {
		case "tryLock":
			if op.Complete != nil && op.Complete.Type == history.Fail {
				continue // refused: it changed nothing
			}
			st.Acquire = modeOf(own, op, family)
			lease, wait := ms(c.Args["lease_ms"]), ms(c.Args["wait_ms"])
			st.Lease, st.Wait = &lease, &wait
			depth[a]++
		case "unlock":
			if depth[a] == 0 {
				continue // its acquire was before the schedule begins
			}
			st.Release = true
			depth[a]--
		default:
			continue // reads of the lock's state, force-unlocks: not a schedule's operations
		}
		steps = append(steps, timedStep{max(c.Time, from), st})
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no acquire of %s between %s and %s", keyText(story.Key), checker.Secs(from), checker.Secs(to))
	}
	// A hold still open at the violation's end was open through it: its release comes then, not as soon as
	// its actor has no more steps.
	var open []held
	for a, n := range depth {
		for range n {
			open = append(open, a)
		}
	}
	slices.SortFunc(open, func(a, b held) int {
		return cmp.Or(cmp.Compare(a.client, b.client), cmp.Compare(a.thread, b.thread), cmp.Compare(a.key, b.key))
	})
	for _, a := range open {
		steps = append(steps, timedStep{to, schedule.Step{Client: a.client, Thread: threadOf(a.thread), Key: keyOf(a.key), Release: true}})
	}
	actors := map[string]bool{}
	for _, t := range steps {
		actors[t.step.Client] = true
	}
	for _, w := range h.Windows() {
		end := w.End
		if end < 0 {
			end = to
		}
		if w.Start > to || end < from || w.Kind == "" {
			continue
		}
		targets := selectorTargets(w.Targets, actors)
		if len(w.Targets) > 0 && len(targets) == 0 {
			continue // it hit only clients the schedule does not play
		}
		start := max(w.Start, from)
		steps = append(steps, timedStep{start, schedule.Step{Fault: w.Kind, Targets: targets,
			For: max(time.Duration(end-start), schedule.MinFor).Round(time.Millisecond)}}) // a shorter one is refused
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	s := &schedule.Schedule{About: "shrunk: " + story.Text, Lock: lock}
	for _, t := range steps {
		t.step.At = time.Duration(t.at - from).Round(time.Millisecond)
		s.Steps = append(s.Steps, t.step)
	}
	// What it writes must read back: the file is what the user runs.
	if _, err := schedule.Parse(s.Marshal(), "schedule.yaml"); err != nil {
		return nil, fmt.Errorf("the schedule made of the run does not read back: %v", err)
	}
	return s, nil
}

type timedStep struct {
	at   int64
	step schedule.Step
}

// modeOf is an acquire's operation: lock, or for a read-write lock the mode of the critical section its
// owner entered next on that key (the acquire's record does not say it).
func modeOf(h *history.History, op history.Operation, family string) schedule.Op {
	if family != "rwlock" {
		return schedule.Lock
	}
	c := op.Invoke
	if c.Args["nested"] == 1 && op.Complete != nil {
		// A re-entry: the lock command under it says which half where it was recorded (a writer's read
		// has an owner of its own, and no section: it joins the write's).
		for _, w := range h.Ops {
			wc := w.Invoke
			if wc.F == "acquire" && wc.Client == c.Client && wc.Thread == c.Thread && wc.Key == c.Key &&
				c.Time <= wc.Time && wc.Time <= op.Complete.Time {
				if wc.Args["read"] == 1 {
					return schedule.Read
				}
				break
			}
		}
	}
	if c.Args["nested"] == 1 { // a re-entry: the section its actor is inside, where it holds the same half
		for _, s := range h.Sections {
			if s.Owner == c.Owner && s.Key == c.Key && s.Enter <= c.Time && c.Time <= s.Exit {
				if s.F == string(schedule.Read) {
					return schedule.Read
				}
				return schedule.Write
			}
		}
	}
	for _, s := range h.Sections {
		if s.Owner == c.Owner && s.Key == c.Key && s.Enter >= c.Time {
			if s.F == string(schedule.Read) {
				return schedule.Read
			}
			return schedule.Write
		}
	}
	return schedule.Write
}

// ScheduleRun is c as a run of the schedule at path lasting run: the lock, the deployment and the faults'
// parameters kept; the random workload's shape and the fault plan left out (the schedule says them).
func (c Cmd) ScheduleRun(path string, run time.Duration) Cmd {
	return c.Without(workloadFlags...).With("schedule", path).With("time", run.String())
}

// workloadFlags shape the random workload or the fault plan: a schedule's steps stand for them.
var workloadFlags = []string{"clients", "threads", "keys", "hold", "reentry", "readers", "lease", "wait", "group",
	"cross-thread", "force-unlock", "nemesis", "nemesis-interval", "nemesis-duration", "nemesis-targets",
	"nemesis-trigger", "schedule", "time"}

// Span is how long a schedule's run must last: its last step, its longest fault, and a second.
func Span(s *schedule.Schedule) time.Duration {
	var end time.Duration
	for _, st := range s.Steps {
		end = max(end, st.At+st.For)
	}
	return end + time.Second
}

// holdStart is when the hold that owner (client/thread, as a story names it) was inside at time at on key
// began: its outermost granted acquire not unlocked by then (an unlock still unanswered, the refusal that
// is the violation, leaves it held); -1 when it held nothing.
func holdStart(h *history.History, owner, key string, at int64) int64 {
	start, depth := int64(-1), 0
	for _, op := range h.Ops {
		c := op.Invoke
		if c.Time >= at || c.Key != key || c.ThreadName() != owner {
			continue
		}
		switch {
		case c.F == "tryLock" && op.Complete != nil && op.Complete.Type == history.Ok:
			if depth == 0 {
				start = c.Time
			}
			depth++
		case c.F == "unlock" && depth > 0 && op.Complete != nil && op.Complete.Time < at: // answered by then
			depth--
		}
	}
	if depth == 0 {
		return -1
	}
	return start
}

func threadOf(t int64) int64 {
	if t <= 1 {
		return 0
	}
	return t
}

func keyOf(k string) string {
	if k == "lock-0" {
		return ""
	}
	return k
}

func keyText(k string) string {
	if k == "" {
		return "any key"
	}
	return k
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// selectorTargets are a fault window's recorded targets as a schedule step names them: a link (c1->n1) by
// its two ends, which narrow the fault's draw to that client and node, each named once. A client the
// schedule does not play (not among actors), and a link of one, are left out: the schedule's run has no
// such client, and a step naming one is refused.
func selectorTargets(ts []string, actors map[string]bool) []string {
	var out []string
	for _, t := range ts {
		ends := strings.Split(t, "->")
		if slices.ContainsFunc(ends, func(e string) bool { return isClient(e) && !actors[e] }) {
			continue
		}
		for _, end := range ends {
			if end != "" && !slices.Contains(out, end) {
				out = append(out, end)
			}
		}
	}
	return out
}

// isClient says whether a target names a client (c1..c64), not a node or a size.
func isClient(t string) bool {
	if len(t) < 2 || t[0] != 'c' {
		return false
	}
	for _, r := range t[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
