// Package schedule is `lockcheck run --schedule FILE`: a bug report's steps as a small YAML file (which
// client takes which lock with which lease, when, how long it stays, which fault comes between), played
// once or in a loop against the run's clients and judged by the run's own checkers. Its operations are
// recorded as the mutex workload records them and its critical sections go through the same Resource, so
// every checker, the story, the page and shrink read a schedule run unchanged. docs/schedules.md is the
// format's reference.
package schedule

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/prose"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads"
	"gopkg.in/yaml.v3"
)

// Op is what an acquire step asks for: the lock of a mutex, one half of a read-write lock, or one permit
// of a semaphore.
type Op string

// The acquire operations.
const (
	Lock   Op = "lock"
	Read   Op = "read"
	Write  Op = "write"
	Permit Op = "permit"
)

// families maps each lock family a schedule plays to the acquire operations its steps may use.
var families = map[string][]Op{
	"mutex": {Lock}, "rwlock": {Read, Write}, "semaphore": {Permit}, "expirable-semaphore": {Permit},
}

// Schedule is one file's steps. Path and SHA256 name the file it was read from ("" for one built in code).
type Schedule struct {
	About string
	Lock  string // the kind it was written for (--lock, --lock-spec and --client on the command line win)
	Loop  bool   // play the steps again, every hold released first, until the run's --time ends
	Steps []Step

	Path, SHA256 string
	Text         []byte // the file as read: the run keeps a copy beside its history, the hash checks it

	aimed map[int][]nemesis.Target // fault steps' targets, drawn by Aim
}

// Step is one line of a schedule: an acquire, a leave, a release or a fault, with when it starts.
//
// An actor (Client and Thread) plays its own steps in file order, one at a time. A step starts once its At
// has come (from the start of the cycle, on the run's clock), the actor's previous step is done, and, with
// After, the step of that name is done (then Delay more). A fault step is done once it has started; it
// heals For later.
type Step struct {
	Name  string        // optional; unique; what After names
	At    time.Duration // earliest start, from the cycle's start
	After string        // the name of an earlier step that must be done first
	Delay time.Duration // with After: how long after it

	Client string // c1..c64: an actor's client (not for a fault)
	Thread int64  // its thread, the owner within the client (0 reads as 1)
	Key    string // "" reads as lock-0 (workloads.KeyName)

	Acquire Op             // lock, read or write; an actor already holding the key re-enters (nested 1)
	Lease   *time.Duration // nil: the run's --lease; 0: no fixed lease (a watchdog keeps it, if the lock has one)
	Wait    *time.Duration // nil: the run's --wait
	Release bool           // release the actor's latest acquire (re-entries first)
	// Leave ends the actor's critical section on the key without releasing the lock: its work is done and
	// its release comes later (delayed, paused, lost on the way), as a holder's can.
	Leave bool

	Fault   string        // a registered fault (lockcheck's --nemesis names)
	Targets []string      // the fault's clients and nodes (c1, n2); none: the fault's own draw from the seed
	For     time.Duration // how long the fault lasts
}

// Limits of a schedule.
const (
	MaxClients = 64 // c1..c64
	MaxThreads = 64 // a client's threads
	MaxKeys    = 64 // lock-0..lock-63
	MaxSteps   = 1000
	MaxFile    = 1 << 20
	// MinFor is the shortest fault a step may hold: a shorter one is nothing a node or client can feel,
	// and in a loop it only floods the history (a 1 ns client-pause wrote 642 018 fault records in 3 s).
	MinFor = 10 * time.Millisecond
	// CycleFloor is the shortest cycle a loop plays: one that can play faster is slowed to it (Paced).
	CycleFloor = 100 * time.Millisecond
	// FaultBurst and FaultRate bound the faults a schedule plays, as a worker's events are bounded: FaultBurst
	// at once, then FaultRate a second; a fault step over the budget is not played (nor recorded), and the
	// run says how many were not.
	FaultBurst = 1000
	FaultRate  = 10
)

// Label is the step as error lines name it: its index from 1, and its name.
func (s *Schedule) Label(i int) string {
	n := s.Steps[i].Name
	if n == "" {
		n = "unnamed"
	}
	return fmt.Sprintf("step %d (%s)", i+1, n)
}

// ThreadID is the step's thread, 1 when none is named.
func (st Step) ThreadID() int64 { return max(st.Thread, 1) }

// KeyName is the step's key, lock-0 when none is named.
func (st Step) KeyName() string {
	if st.Key == "" {
		return workloads.KeyName(0)
	}
	return st.Key
}

// Actor names who plays an acquire or release step: "c1", or "c1/2" for its second thread.
func (st Step) Actor() string {
	if st.ThreadID() == 1 {
		return st.Client
	}
	return st.Client + "/" + strconv.FormatInt(st.ThreadID(), 10)
}

// Load reads and validates a schedule file: a regular file of at most MaxFile bytes.
func Load(path string) (*Schedule, error) {
	b, err := safefile.Read(path, MaxFile)
	if err != nil {
		return nil, fmt.Errorf("--schedule: %s", oneLine(err.Error()))
	}
	return Parse(b, path)
}

// Parse validates a schedule's text; path names it in errors. Every error is one line naming the file and,
// where it is a step's, the step by index and name.
func Parse(b []byte, path string) (*Schedule, error) {
	s, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %s", path, oneLine(err.Error()))
	}
	sum := sha256.Sum256(b)
	s.Path, s.SHA256, s.Text = path, hex.EncodeToString(sum[:]), b
	return s, nil
}

type rawFile struct {
	About string      `yaml:"about"`
	Lock  string      `yaml:"lock"`
	Loop  bool        `yaml:"loop"`
	Steps []yaml.Node `yaml:"steps"`
}

type rawStep struct {
	Name    string    `yaml:"name"`
	At      string    `yaml:"at"`
	After   string    `yaml:"after"`
	Delay   string    `yaml:"delay"`
	Client  string    `yaml:"client"`
	Thread  yaml.Node `yaml:"thread"` // read as a whole number here: yaml.v3 would play 1.5 as 1
	Key     string    `yaml:"key"`
	Acquire string    `yaml:"acquire"`
	Lease   *string   `yaml:"lease"`
	Wait    *string   `yaml:"wait"`
	Release *bool     `yaml:"release"`
	Leave   *bool     `yaml:"leave"`
	Fault   string    `yaml:"fault"`
	Targets []string  `yaml:"targets"`
	For     string    `yaml:"for"`
}

// stepKeys are a step's keys, in the order Marshal writes them.
var stepKeys = []string{"name", "at", "after", "delay", "client", "thread", "key", "acquire", "lease", "wait",
	"release", "leave", "fault", "targets", "for"}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	clientRE = regexp.MustCompile(`^c([1-9][0-9]{0,2})$`)
	keyRE    = regexp.MustCompile(`^lock-(0|[1-9][0-9]{0,2})$`)
	faultRE  = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	targetRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	// nemesisFlag is the "--nemesis NAME: " of the fault checks' errors: a schedule has no such flag.
	nemesisFlag = regexp.MustCompile(`--nemesis \S+: `)
)

func parse(b []byte) (*Schedule, error) {
	var r rawFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file: want about, lock, loop and steps")
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("more than one YAML document")
	}
	if len(r.Steps) == 0 {
		return nil, errors.New("no steps")
	}
	if len(r.Steps) > MaxSteps {
		return nil, fmt.Errorf("%d steps, more than %d", len(r.Steps), MaxSteps)
	}
	if r.Lock != "" && !nameRE.MatchString(r.Lock) {
		return nil, fmt.Errorf("lock %q: want a lock's name (lockcheck locks lists them)", r.Lock)
	}
	about, err := prose.Line("about", r.About, prose.Max) // printed by every run: a spec's about: is refused alike
	if err != nil {
		return nil, err
	}
	s := &Schedule{About: about, Lock: r.Lock, Loop: r.Loop}
	for i := range r.Steps {
		st, err := step(&r.Steps[i])
		s.Steps = append(s.Steps, st)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", s.Label(i), err)
		}
	}
	return s, s.validate()
}

// step reads one step, refusing a key it does not know.
func step(n *yaml.Node) (Step, error) {
	if n.Kind != yaml.MappingNode {
		return Step{}, fmt.Errorf("line %d: want a mapping such as {client: c1, acquire: lock}", n.Line)
	}
	var named Step // the step's name alone, so that an error names it
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			named.Name = n.Content[i+1].Value
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(stepKeys, k) {
			return named, fmt.Errorf("unknown key %q (have: %s)", k, strings.Join(stepKeys, ", "))
		}
	}
	var r rawStep
	if err := n.Decode(&r); err != nil {
		return named, yamlError(err)
	}
	st := Step{Name: r.Name, After: r.After, Client: r.Client, Key: r.Key, Acquire: Op(r.Acquire),
		Fault: r.Fault, Targets: r.Targets}
	if r.Thread.Kind != 0 && r.Thread.Tag != "!!null" {
		n, perr := strconv.ParseInt(r.Thread.Value, 10, 64)
		if r.Thread.Kind != yaml.ScalarNode || perr != nil {
			return st, fmt.Errorf("thread %q: want a whole number, 1..%d", r.Thread.Value, MaxThreads)
		}
		st.Thread = n
	}
	if r.Release != nil {
		if !*r.Release {
			return st, errors.New("release: false: leave the key out, or say release: true")
		}
		st.Release = true
	}
	if r.Leave != nil {
		if !*r.Leave {
			return st, errors.New("leave: false: leave the key out, or say leave: true")
		}
		st.Leave = true
	}
	var err error
	dur := func(what, v string) time.Duration {
		if v == "" || err != nil {
			return 0
		}
		d, perr := time.ParseDuration(v)
		switch {
		case perr != nil:
			err = fmt.Errorf("%s %q: want a duration such as 500ms or 2s", what, v)
		case d < 0:
			err = fmt.Errorf("%s %s: must not be negative", what, v)
		case d > workloads.MaxRange:
			err = fmt.Errorf("%s %s: at most %s", what, v, workloads.MaxRange)
		}
		return d
	}
	st.At, st.Delay, st.For = dur("at", r.At), dur("delay", r.Delay), dur("for", r.For)
	if r.Lease != nil {
		d := dur("lease", *r.Lease)
		st.Lease = &d
	}
	if r.Wait != nil {
		d := dur("wait", *r.Wait)
		st.Wait = &d
	}
	return st, err
}

// validate checks what holds whatever the lock: one operation per step, actors and keys in range, After
// naming an earlier step, no release without an earlier acquire by the same actor.
func (s *Schedule) validate() error {
	names := map[string]int{}
	holds := map[string]int{} // per actor and key, acquires minus releases so far
	for i, st := range s.Steps {
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%s: %s", s.Label(i), fmt.Sprintf(format, a...))
		}
		if st.Name != "" {
			if !nameRE.MatchString(st.Name) {
				return fail("name %q: want letters, digits, '.', '_' or '-'", st.Name)
			}
			if j, ok := names[st.Name]; ok {
				return fail("the name is taken by %s", s.Label(j))
			}
		}
		ops := 0
		for _, set := range []bool{st.Acquire != "", st.Release, st.Leave, st.Fault != ""} {
			if set {
				ops++
			}
		}
		if ops != 1 {
			return fail("want exactly one of acquire, leave, release and fault")
		}
		if st.After != "" {
			if _, ok := names[st.After]; !ok {
				return fail("after %q: no earlier step has that name (after names a step above it)", st.After)
			}
		} else if st.Delay != 0 {
			return fail("delay is counted from the step named by after: give after, or use at")
		}
		if st.Name != "" {
			names[st.Name] = i
		}
		if st.Fault != "" {
			switch {
			case st.Client != "" || st.Thread != 0 || st.Key != "" || st.Lease != nil || st.Wait != nil:
				return fail("a fault step takes targets and for, not client, thread, key, lease or wait")
			case !faultRE.MatchString(st.Fault):
				return fail("fault %q: want a fault's name (lockcheck run --help lists them)", st.Fault)
			case st.For <= 0:
				return fail("fault %s: say how long it lasts (for: 2s)", st.Fault)
			case st.For < MinFor:
				return fail("fault %s: for %s: at least %s (a shorter fault is nothing a node or client can feel)", st.Fault, st.For, MinFor)
			}
			for _, t := range st.Targets {
				if !targetRE.MatchString(t) {
					return fail("target %q: want a client or node such as c1 or n2", t)
				}
			}
			continue
		}
		if len(st.Targets) > 0 || st.For != 0 {
			return fail("targets and for belong to a fault step")
		}
		m := clientRE.FindStringSubmatch(st.Client)
		if m == nil {
			return fail("client %q: want c1..c%d", st.Client, MaxClients)
		}
		if n, _ := strconv.Atoi(m[1]); n > MaxClients {
			return fail("client %s: at most c%d", st.Client, MaxClients)
		}
		if st.Thread < 0 || st.Thread > MaxThreads {
			return fail("thread %d: want 1..%d", st.Thread, MaxThreads)
		}
		if st.Key != "" {
			n := MaxKeys
			if m := keyRE.FindStringSubmatch(st.Key); m != nil {
				n, _ = strconv.Atoi(m[1])
			}
			if n >= MaxKeys {
				return fail("key %q: want lock-0..lock-%d", st.Key, MaxKeys-1)
			}
		}
		hk := st.Actor() + " " + st.KeyName()
		if st.Leave {
			if st.Lease != nil || st.Wait != nil {
				return fail("a leave takes no lease or wait")
			}
			if holds[hk] == 0 {
				return fail("%s leaves %s without an earlier acquire of its own", st.Actor(), st.KeyName())
			}
			continue
		}
		if st.Release {
			if st.Lease != nil || st.Wait != nil {
				return fail("a release takes no lease or wait")
			}
			if holds[hk] == 0 {
				return fail("%s releases %s without an earlier acquire of its own", st.Actor(), st.KeyName())
			}
			holds[hk]--
			continue
		}
		switch st.Acquire {
		case Lock, Read, Write, Permit:
		default:
			return fail("acquire %q: want lock (a mutex), read or write (a read-write lock), or permit (a semaphore)", st.Acquire)
		}
		holds[hk]++
	}
	return nil
}

// Caps are what the run's lock can do, for Check.
type Caps struct {
	Lock      string // its name, for messages
	Family    string // mutex, rwlock, semaphore or expirable-semaphore; any other family is refused
	Reentrant bool
	Group     bool          // a multi lock (several keys per acquisition): refused
	Time      time.Duration // the run's --time: every At must come before it (0: unchecked)
}

// Check refuses a schedule the run's lock cannot play: an operation of another family, a re-entry on a
// lock that has none, a step timed past the run's end.
func (s *Schedule) Check(c Caps) error {
	fail := func(i int, format string, a ...any) error {
		return fmt.Errorf("schedule %s: %s: %s", s.Path, s.Label(i), fmt.Sprintf(format, a...))
	}
	switch {
	case families[c.Family] == nil:
		return fmt.Errorf("schedule %s: lock %s is of the %s family: a schedule plays mutexes, read-write locks and semaphores", s.Path, c.Lock, c.Family)
	case c.Group:
		return fmt.Errorf("schedule %s: lock %s takes several keys per acquisition: a schedule plays single-key locks", s.Path, c.Lock)
	}
	holds := map[string]int{}
	for i, st := range s.Steps {
		if c.Time > 0 && st.At >= c.Time {
			return fail(i, "at %s is not before --time %s: raise --time", st.At, c.Time)
		}
		hk := st.Actor() + " " + st.KeyName()
		switch {
		case st.Release:
			holds[hk]--
		case st.Acquire != "":
			if ops := families[c.Family]; !slices.Contains(ops, st.Acquire) {
				want := string(ops[0])
				if len(ops) == 2 {
					want += " or " + string(ops[1])
				}
				return fail(i, "acquire %s: lock %s is a %s: its steps acquire %s", st.Acquire, c.Lock, c.Family, want)
			}
			// A second permit is a hold of its own, not a re-entry.
			if holds[hk] > 0 && !c.Reentrant && st.Acquire != Permit {
				return fail(i, "%s acquires %s again while it holds it, and lock %s is not re-entrant", st.Actor(), st.KeyName(), c.Lock)
			}
			holds[hk]++
		}
	}
	return nil
}

// Clients is the highest client a step names (the run's --clients), Threads the highest thread, Keys the
// highest key's index plus one.
func (s *Schedule) Clients() int {
	return max(1, s.highest(func(st Step) int { return clientIndex(st.Client) }))
}

// Shortest is the least time a cycle can take: steps start no sooner than their at, their actor's previous
// step and their after's delay, and a cycle lasts until its faults have healed. Acquires may answer at once.
func (s *Schedule) Shortest() time.Duration {
	start := make([]time.Duration, len(s.Steps))
	prev := map[string]int{} // an actor's latest step
	index := map[string]int{}
	var cycle time.Duration
	for i, st := range s.Steps {
		start[i] = st.At
		if st.After != "" {
			start[i] = max(start[i], start[index[st.After]]+st.Delay)
		}
		if st.Fault == "" {
			if j, ok := prev[st.Actor()]; ok {
				start[i] = max(start[i], start[j])
			}
			prev[st.Actor()] = i
		}
		if st.Name != "" {
			index[st.Name] = i
		}
		cycle = max(cycle, start[i]+st.For)
	}
	return cycle
}

// Paced reports whether a loop's cycles are slowed to CycleFloor: its cycle can play faster.
func (s *Schedule) Paced() bool { return s.Loop && s.Shortest() < CycleFloor }

// Threads is the highest thread an actor names (at least 1).
func (s *Schedule) Threads() int {
	return max(1, s.highest(func(st Step) int { return int(st.ThreadID()) }))
}

// Keys is how many keys the steps reach (at least 1).
func (s *Schedule) Keys() int {
	return max(1, s.highest(func(st Step) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(st.KeyName(), "lock-"))
		return n + 1
	}))
}

func (s *Schedule) highest(f func(Step) int) int {
	n := 0
	for _, st := range s.Steps {
		if st.Fault == "" {
			n = max(n, f(st))
		}
	}
	return n
}

func clientIndex(c string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(c, "c"))
	return n
}

// LongestFault is the longest any of its fault steps lasts (0 for none): a call that a fault holds up may
// block that long.
func (s *Schedule) LongestFault() time.Duration {
	var d time.Duration
	for _, st := range s.Steps {
		if st.Fault != "" {
			d = max(d, st.For)
		}
	}
	return d
}

// Faults lists the faults the steps start, in order of first use.
func (s *Schedule) Faults() []string {
	var out []string
	for _, st := range s.Steps {
		if st.Fault != "" && !slices.Contains(out, st.Fault) {
			out = append(out, st.Fault)
		}
	}
	return out
}

// Aim checks every fault step against env's names (a registered fault the deployment can have, targets
// among its clients and nodes that the fault uses) and draws its targets from seed, as a plan draws its
// faults': named targets narrow the draw, as --nemesis-targets does. Play starts the faults on these.
func (s *Schedule) Aim(seed int64, env *nemesis.Env) error {
	s.aimed = map[int][]nemesis.Target{}
	for i, st := range s.Steps {
		if st.Fault == "" {
			continue
		}
		fail := func(err error) error {
			msg := strings.ReplaceAll(oneLine(err.Error()), "--nemesis-targets", "targets")
			msg = nemesisFlag.ReplaceAllString(strings.ReplaceAll(msg, " in --nemesis", ""), "")
			return fmt.Errorf("schedule %s: %s: fault %s: %s", s.Path, s.Label(i), st.Fault, msg)
		}
		if _, err := nemesis.Parse(st.Fault, env); err != nil {
			return fail(err)
		}
		sel, err := nemesis.ParseSelector(strings.Join(st.Targets, ","), env)
		if err != nil {
			return fail(err)
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 0x7363686564756c65+uint64(i)))
		t, err := nemesis.Aim(st.Fault, sel, rng, env)
		if err != nil {
			return fail(err)
		}
		s.aimed[i] = t
	}
	return nil
}

// Aimed is the targets Aim drew for step i (nil for a step that is no fault, or before Aim).
func (s *Schedule) Aimed(i int) []nemesis.Target { return s.aimed[i] }

// Marshal writes the schedule as a file Parse reads back to the same steps: the top keys, then one flow
// mapping per step with its keys in a fixed order (name, at, after, delay, client, thread, key, acquire,
// lease, wait, release, leave, fault, targets, for), zero values left out.
func (s *Schedule) Marshal() []byte {
	var b strings.Builder
	if s.About != "" {
		fmt.Fprintf(&b, "about: %s\n", strconv.Quote(s.About))
	}
	if s.Lock != "" {
		fmt.Fprintf(&b, "lock: %s\n", s.Lock)
	}
	fmt.Fprintf(&b, "loop: %t\nsteps:\n", s.Loop)
	for _, st := range s.Steps {
		var kv []string
		add := func(k, v string) { kv = append(kv, k+": "+v) }
		if st.Name != "" {
			add("name", st.Name)
		}
		if st.At != 0 {
			add("at", st.At.String())
		}
		if st.After != "" {
			add("after", st.After)
		}
		if st.Delay != 0 {
			add("delay", st.Delay.String())
		}
		if st.Client != "" {
			add("client", st.Client)
		}
		if st.Thread != 0 {
			add("thread", strconv.FormatInt(st.Thread, 10))
		}
		if st.Key != "" {
			add("key", st.Key)
		}
		if st.Acquire != "" {
			add("acquire", string(st.Acquire))
		}
		if st.Lease != nil {
			add("lease", st.Lease.String())
		}
		if st.Wait != nil {
			add("wait", st.Wait.String())
		}
		if st.Release {
			add("release", "true")
		}
		if st.Leave {
			add("leave", "true")
		}
		if st.Fault != "" {
			add("fault", st.Fault)
		}
		if len(st.Targets) > 0 {
			add("targets", "["+strings.Join(st.Targets, ", ")+"]")
		}
		if st.For != 0 {
			add("for", st.For.String())
		}
		fmt.Fprintf(&b, "  - {%s}\n", strings.Join(kv, ", "))
	}
	return []byte(b.String())
}

// yamlError is a decoder's error without its "yaml: " prefix and the Go type names of unknown fields.
func yamlError(err error) error {
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "unmarshal errors:")
	msg = regexp.MustCompile(`field (\S+) not found in type \S+`).ReplaceAllString(msg, "unknown key $1 (have: about, lock, loop, steps)")
	msg = regexp.MustCompile(` into [a-z]*\.?\w+`).ReplaceAllString(msg, "")
	return errors.New(msg)
}

// oneLine keeps an error to one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
