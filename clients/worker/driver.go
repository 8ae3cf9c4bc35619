// Package worker drives an out-of-process lock client over the lock-client protocol (LCP/1,
// docs/protocol.md): one worker process per lockcheck client, requests on its stdin, replies and events on
// its stdout. To the workloads, nemesis and checkers a worker is one more lock client: it implements the
// family interfaces of package locks and records every call in the history as the Go clients record their
// commands.
package worker

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// Slack is the fixed part of the hung-worker bound, the time a request may go unanswered
// (docs/protocol.md: the request's wait + --lease + 4 × --timeout + 5 s). 4 × timeout is a command and its
// three retries (Redisson's default), the slack the retry delays between them and a loaded machine.
const Slack = 5 * time.Second

// Startup is what init gets beyond the bound of a request: the worker's runtime starts first (8 JVMs on a
// loaded 2-core machine took over 20 s).
const Startup = 60 * time.Second

// maxLine is the longest line a worker may print (1 MiB).
const maxLine = 1 << 20

// drainWait bounds Close's wait for the end of a worker's stdout once the worker and its tree are gone: a
// process the sweep could not find may still hold the pipe open.
const drainWait = time.Second

// Config starts one worker for one lockcheck client.
type Config struct {
	Client string   // c1, c2, ...
	Argv   []string // the worker command
	Dir    string   // the run directory: stderr goes to Dir/clients/<client>/stderr.log
	// ClockLib, when set, starts the worker with the clockshift library preloaded (the client-clock fault);
	// its offset file is Dir/clients/<client>/clock.offset.
	ClockLib string
	Init     sdk.Message // the init request; type, msg_id and protocol are filled in
	Rec      *history.Recorder
	Gate     *locks.Gate // holds the workload's thread while the worker is frozen
	// OnFail is called once, from the driver's goroutines, when the worker exits, prints garbage or hangs
	// (not when Close stops it). The error names the client and what its worker did.
	OnFail func(error)
	Slack  time.Duration // 0: Slack
	// Startup is init's extra time (0: Startup).
	Startup time.Duration
	// Readers is the run's count of read holds, shared by all its clients (read-write locks).
	Readers *Readers
	// Ctx, when cancelled (Ctrl-C, SIGTERM), ends the wait for init_ok at once: the worker is killed and
	// Start fails. nil: the wait is bounded by Startup only.
	Ctx context.Context
	// Events holds the run's worker events until its meta record is written (nil: they are written at once).
	Events *Events
}

// Client is one running worker.
type Client struct {
	cfg       Config
	cmd       *exec.Cmd
	stdin     *os.File
	stdout    *os.File
	tree      *tree
	Info      sdk.Message      // init_ok
	red       *redact.Redactor // the run's (its recorder's), else one for the password init hands over
	caps      map[string]bool
	clockFile string
	exited    chan struct{} // closed once the process has been reaped and what it left killed
	waitErr   error         // how it exited, set before exited is closed
	readDone  chan struct{} // closed once its stdout has been read to the end
	logDone   chan struct{} // closed once its stderr has been copied to stderr.log

	wmu sync.Mutex // one line at a time on stdin

	mu          sync.Mutex
	nextID      int64
	pending     map[int64]*call
	dead        error // set once the worker is gone; later calls fail at once
	closing     bool
	stopped     bool // SIGSTOPped by the client-pause fault
	stoppedAt   time.Time
	pausedTotal time.Duration
	holds       map[holdKey]int   // re-entry depth per (thread, key), for release's value
	unsure      map[holdKey]bool  // an acquire ended unknown since the depth was last zero
	lost        map[holdKey]bool  // a lost event came since the last grant
	losses      locks.LossSignals // the same, as a signal the workload can wait on (locks.LossSignal)
	armed       atomic.Bool       // freeze after the next grant
	budget      eventBudget       // what its events may cost, used by the reader only
}

type holdKey struct {
	thread int64
	key    string
}

type call struct {
	req    sdk.Message
	sent   time.Time
	paused time.Duration // pausedTotal when sent: time frozen by lockcheck does not count
	bound  hungBound
	done   chan result
}

// hungBound is how long a worker may leave a request unanswered before it is declared hung and killed:
// the request's wait, the run's --lease (not a lease the watchdog's timeout stands in for: no reply waits
// for a lease), 4 × --timeout and the slack; init gets Startup more.
type hungBound struct {
	Wait, Lease, Timeout, Slack, Startup time.Duration
}

// boundOf is the bound of a request that waits up to wait, under the run's options (nil: none); slack 0 is
// Slack.
func boundOf(wait time.Duration, o *sdk.Options, slack time.Duration) hungBound {
	b := hungBound{Wait: wait, Slack: cmp.Or(slack, Slack)}
	if o != nil {
		b.Lease, b.Timeout = time.Duration(o.LeaseMs)*time.Millisecond, time.Duration(o.TimeoutMs)*time.Millisecond
	}
	return b
}

// Total is the bound.
func (b hungBound) Total() time.Duration { return b.Wait + b.Lease + 4*b.Timeout + b.Slack + b.Startup }

// String says the bound and how it is made: "22s: wait 5s + lease 0s + 4 × timeout 3s + 5s".
func (b hungBound) String() string {
	s := fmt.Sprintf("%s: wait %s + lease %s + 4 × timeout %s + %s", b.Total(), b.Wait, b.Lease, b.Timeout, b.Slack)
	if b.Startup > 0 {
		s += fmt.Sprintf(" + start-up %s", b.Startup)
	}
	return s
}

type result struct {
	m   sdk.Message
	err error
}

// Error is a worker's error reply, or the loss of the worker. Definite says whether the call surely took
// no effect (outcome.Definite asks it).
type Error struct {
	Client string
	Code   int // -1 for the loss of the worker
	Text   string
	sure   bool
}

func (e *Error) Error() string {
	if e.Code < 0 {
		return e.Text
	}
	return fmt.Sprintf("worker %s: error %d: %s", e.Client, e.Code, e.Text)
}

// Definite reports whether the call surely took no effect.
func (e *Error) Definite() bool { return e.sure }

// RefusedError is a worker that cannot drive the run asked for (its lock kind or topology): bad input.
type RefusedError struct {
	msg   string
	Kinds []string // the kinds the worker drives
}

func (e RefusedError) Error() string { return e.msg }

// Start spawns the worker, sends init and checks init_ok: a worker that cannot drive the lock kind is
// stopped and named in the error.
func Start(cfg Config) (*Client, error) {
	if cfg.Slack <= 0 {
		cfg.Slack = Slack
	}
	if cfg.Startup <= 0 {
		cfg.Startup = Startup
	}
	if cfg.Gate == nil {
		cfg.Gate = locks.NewGate()
	}
	if len(cfg.Argv) == 0 {
		return nil, errors.New("worker: no command")
	}
	dir := filepath.Join(cfg.Dir, "clients", cfg.Client)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, red: cfg.Rec.Redactor(), pending: map[int64]*call{}, holds: map[holdKey]int{}, unsure: map[holdKey]bool{}, lost: map[holdKey]bool{},
		exited: make(chan struct{}), readDone: make(chan struct{}), logDone: make(chan struct{}), tree: newTree(),
		budget: newEventBudget()}
	if c.red == nil {
		c.red = redact.New(cfg.Init.Password)
	}
	// A pause armed just after a grant was read (--nemesis-trigger fires on the grant) freezes the workload
	// at the gate, but the reader's armed check has passed: stop the process there too, or its watchdog
	// keeps renewing through the "pause".
	cfg.Gate.OnFreeze(c.freeze)
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	errR, errW, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	defer errW.Close() // the child holds its own descriptor
	go func() {
		defer close(c.logDone)
		logStderr(errR, logf, c.red)
	}()
	cmd.Stderr = errW
	cmd.Env = append(os.Environ(), treeEnv+"="+c.tree.tag) // inherited by its descendants (tree.go)
	if cfg.ClockLib != "" {
		c.clockFile = filepath.Join(dir, "clock.offset")
		if err := clockshift.Set(c.clockFile, 0); err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, clockshift.Env(cfg.ClockLib, c.clockFile)...)
	}
	// Plain pipes, not exec's: Wait must not wait for the end of stdout (a descendant may hold it open) nor
	// close stdin under a writer.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	becomeSubreaper()
	err = node.StartChild(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		err = fmt.Errorf("client %s: start worker %q: %w", cfg.Client, strings.Join(cfg.Argv, " "), err)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			return nil, RefusedError{msg: err.Error()} // the user's command cannot be run: bad input
		}
		return nil, err
	}
	c.cmd, c.stdin, c.stdout = cmd, inW, outR
	c.tree.started(cmd.Process.Pid)
	go c.read(outR)
	go c.wait()
	go c.watch()

	init := cfg.Init
	init.Type, init.Protocol = sdk.TypeInit, sdk.Protocol
	reply, err := c.call(init, nil)
	reply = printableReply(reply)
	long := overlong(reply)
	switch {
	case err != nil:
	// An init the worker cannot use carries the user's settings (a --client-option it does not have, or a value
	// of the wrong type): bad input, not a harness failure.
	case reply.Type == sdk.TypeError && reply.Code != nil && (*reply.Code == sdk.CodeNotSupported || *reply.Code == sdk.CodeMalformed):
		err = RefusedError{msg: fmt.Sprintf("client %s: the worker refused the run: %s", cfg.Client, reply.Text)}
	case reply.Type == sdk.TypeError:
		err = fmt.Errorf("client %s: the worker failed to start: %s", cfg.Client, reply.Text)
	case reply.Type != "init_ok":
		err = fmt.Errorf("client %s: worker answered init with %q", cfg.Client, reply.Type)
	case long != "": // before anything quotes the names
		err = RefusedError{msg: fmt.Sprintf("client %s: the worker's init_ok %s (docs/protocol.md, Handshake)", cfg.Client, long)}
	case reply.Type == "init_ok" && (reply.LeaseGranularityMs < 0 || reply.LeaseGranularityMs > MaxLeaseGranularity.Milliseconds()):
		err = RefusedError{msg: fmt.Sprintf("client %s: worker %s %s announced lease_granularity_ms %d: want 0 (none) to %d",
			cfg.Client, reply.Library, reply.Version, reply.LeaseGranularityMs, MaxLeaseGranularity.Milliseconds())}
	case init.Lock != nil && !slices.Contains(reply.Kinds, init.Lock.Kind):
		err = RefusedError{fmt.Sprintf("client %s: worker %s %s cannot drive lock %s (it drives: %s; pick one with --lock)",
			cfg.Client, reply.Library, reply.Version, init.Lock.Kind, strings.Join(reply.Kinds, ", ")), reply.Kinds}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Info = reply
	c.caps = map[string]bool{}
	for _, k := range reply.Caps {
		c.caps[k] = true
	}
	return c, nil
}

// call writes req and waits for its reply. invoke, if set, runs just before the line is written (the
// operation's invoke stamp); it does not run when the worker is already gone, and then the error is
// definite (nothing was sent).
func (c *Client) call(req sdk.Message, invoke func()) (sdk.Message, error) {
	c.mu.Lock()
	if c.dead != nil {
		err := c.dead
		c.mu.Unlock()
		return sdk.Message{}, &Error{Client: c.cfg.Client, Code: -1, Text: err.Error(), sure: true}
	}
	c.nextID++
	req.MsgID = c.nextID
	bound := boundOf(time.Duration(req.WaitMs)*time.Millisecond, c.cfg.Init.Options, c.cfg.Slack)
	if req.Type == sdk.TypeInit {
		bound.Startup = c.cfg.Startup
	}
	cl := &call{req: req, bound: bound, done: make(chan result, 1)}
	c.pending[req.MsgID] = cl
	cl.sent, cl.paused = time.Now(), c.pausedLocked(time.Now())
	c.mu.Unlock()

	line, _ := json.Marshal(req)
	c.wmu.Lock()
	if invoke != nil {
		invoke()
	}
	_, werr := c.stdin.Write(append(line, '\n'))
	c.wmu.Unlock()
	if werr != nil {
		// A closed pipe most often means the worker is gone: read reports its exit status, which says more
		// than the pipe (and raced it under load). Only a worker still running a while later closed its
		// stdin itself.
		go func() {
			select {
			case <-c.exited:
			case <-time.After(stdinGrace):
				c.fail(fmt.Errorf("client %s: worker stopped reading its stdin: %v", c.cfg.Client, werr))
			}
		}()
	}
	var stop <-chan struct{} // only init waits on the run's context: a run's requests have their bounds
	if req.Type == sdk.TypeInit && c.cfg.Ctx != nil {
		stop = c.cfg.Ctx.Done()
	}
	select {
	case r := <-cl.done:
		if r.err != nil && stop != nil && c.cfg.Ctx.Err() != nil { // the run's stop killed it (watch)
			return sdk.Message{}, fmt.Errorf("client %s: stopped while waiting for the worker's init_ok: %w", c.cfg.Client, context.Cause(c.cfg.Ctx))
		}
		return r.m, r.err
	case <-stop:
		c.fail(nil) // killed now, and not reported as a failure of the worker: the run was stopped
		return sdk.Message{}, fmt.Errorf("client %s: stopped while waiting for the worker's init_ok: %w", c.cfg.Client, context.Cause(c.cfg.Ctx))
	}
}

// stdinGrace is how long a worker whose stdin refused a write has to be seen exiting before the refusal
// itself is reported.
const stdinGrace = 2 * time.Second

// pausedLocked is the total time the worker has spent frozen by lockcheck, up to now.
func (c *Client) pausedLocked(now time.Time) time.Duration {
	d := c.pausedTotal
	if c.stopped {
		d += now.Sub(c.stoppedAt)
	}
	return d
}

// read dispatches the worker's stdout: replies to their callers, events to the history. Anything that is
// not a JSON object ends the worker.
func (c *Client) read(stdout io.Reader) {
	defer close(c.readDone)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), maxLine+1)
	for sc.Scan() {
		line := sc.Bytes()
		m, err := decode(line)
		if err != nil {
			c.fail(fmt.Errorf("client %s: worker printed %s: %q", c.cfg.Client, err, clip(line)))
			break
		}
		if m.InReplyTo == 0 {
			if m.Type != sdk.TypeEvent {
				c.fail(fmt.Errorf("client %s: worker sent a %q message that answers nothing: %q", c.cfg.Client, m.Type, clip(line)))
				break
			}
			c.event(m)
			continue
		}
		c.mu.Lock()
		cl := c.pending[m.InReplyTo]
		delete(c.pending, m.InReplyTo)
		c.mu.Unlock()
		if cl == nil {
			c.fail(fmt.Errorf("client %s: worker answered msg_id %d, which was not waiting for an answer", c.cfg.Client, m.InReplyTo))
			break
		}
		if m.Type != sdk.TypeError && m.Type != cl.req.Type+"_ok" {
			c.fail(fmt.Errorf("client %s: worker answered %s (msg_id %d) with %q", c.cfg.Client, cl.req.Type, m.InReplyTo, m.Type))
			cl.done <- result{err: c.lostError()}
			break
		}
		if field := missing(cl.req.Type, m); field != "" {
			// Taken as false, an acquire_ok without granted would be a refusal the worker never said.
			c.fail(fmt.Errorf("client %s: worker answered %s (msg_id %d) with %s without %q, which the protocol requires",
				c.cfg.Client, cl.req.Type, m.InReplyTo, m.Type, field))
			cl.done <- result{err: c.lostError()}
			break
		}
		if granted(m) && c.armed.CompareAndSwap(true, false) {
			c.freeze() // inside its critical section, as a GC pause after acquire would
		}
		cl.done <- result{m: m}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		// Killed before it is waited for: it is most likely blocked writing the rest of that line.
		c.fail(fmt.Errorf("client %s: worker printed a line longer than 1 MiB", c.cfg.Client))
	}
	if r, ok := c.budget.record(c.cfg.Client, c.cfg.Rec.Clock.Now()); ok { // its last event has been read
		c.cfg.Events.write(c.cfg.Rec, r)
	}
	<-c.exited
	c.mu.Lock()
	closing, n := c.closing, len(c.pending)
	c.mu.Unlock()
	if closing {
		c.fail(nil)
		return
	}
	status := "exit status 0"
	if c.waitErr != nil {
		status = c.waitErr.Error()
	}
	c.fail(fmt.Errorf("client %s: worker exited (%s) with %d request(s) unanswered", c.cfg.Client, status, n))
}

// wait waits for the worker to exit, kills what it left (descendants that outlive it are no longer
// anyone's), then reaps it. Until it is reaped its pid cannot be reused, so the group it leads is its own.
func (c *Client) wait() {
	c.waitErr = exitThenKill(c.cmd, c.tree)
	close(c.exited)
}

// decode reads one line of a worker's stdout: a JSON object, or an error that says what is wrong with it
// ("a line that is not a JSON object", "a message whose "granted" is a string, not a boolean").
func decode(line []byte) (sdk.Message, error) {
	var m sdk.Message
	if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		return m, errors.New("a line that is not a JSON object")
	}
	err := json.Unmarshal(line, &m)
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return m, fmt.Errorf("a message whose %q is %s, not %s", te.Field, jsonValue(te.Value), jsonType(te.Type))
	case err != nil:
		return m, fmt.Errorf("a line that is not valid JSON (%v)", err)
	}
	return m, nil
}

// jsonValue names the kind of JSON value json.UnmarshalTypeError describes ("string", "number 1.5").
func jsonValue(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// jsonType names the JSON type a Go field takes.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonType(t.Elem()), "a "), "an ") + "s"
	}
	return "an object"
}

// missing names the field a request's _ok reply must carry (docs/protocol.md) when the reply lacks it.
func missing(request string, m sdk.Message) string {
	var field string
	var present bool
	switch request {
	case sdk.TypeAcquire, sdk.TypeAcquirePermits:
		field, present = "granted", m.Granted != nil
	case sdk.TypeExtend:
		field, present = "extended", m.Extended != nil
	case sdk.TypeSetPermits, sdk.TypeSetCount:
		field, present = "set", m.Set != nil
	case sdk.TypeAcquirePermit:
		field, present = "permit", m.Permit != nil
	case sdk.TypeReleasePermit:
		field, present = "released", m.Released != nil
	case sdk.TypeAvailable:
		field, present = "value", m.Value != nil
	case sdk.TypeAwait:
		field, present = "done", m.Done != nil
	default:
		return ""
	}
	if m.Type == sdk.TypeError || present {
		return ""
	}
	return field
}

// printable is worker text made safe for a terminal: control characters (an ANSI escape begins with
// one), bidirectional overrides and invalid UTF-8 are written as Go escapes (\x1b); the rest is kept.
func printable(s string) string {
	unsafe := func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }
	if utf8.ValidString(s) && strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// The bounds of init_ok's names, as made printable: every one is in the meta record (the version twice), which
// must fit a history line whatever a worker sends.
const (
	MaxName  = 256 // bytes of library, version, runtime, and of each kind and cap
	MaxNames = 64  // kinds, and caps
)

// overlong says which of init_ok's names is over its bound, or "".
func overlong(m sdk.Message) string {
	for _, f := range []struct {
		name string
		v    string
	}{{"library", m.Library}, {"version", m.Version}, {"runtime", m.Runtime}} {
		if len(f.v) > MaxName {
			return fmt.Sprintf("%q is %d bytes, over the %d it may have", f.name, len(f.v), MaxName)
		}
	}
	for _, f := range []struct {
		name string
		v    []string
	}{{"kinds", m.Kinds}, {"caps", m.Caps}} {
		if len(f.v) > MaxNames {
			return fmt.Sprintf("%q has %d names, over the %d it may have", f.name, len(f.v), MaxNames)
		}
		for i, v := range f.v {
			if len(v) > MaxName {
				return fmt.Sprintf("%q[%d] is %d bytes, over the %d a name may have", f.name, i, len(v), MaxName)
			}
		}
	}
	return ""
}

// printableReply is a reply whose texts lockcheck prints (init_ok's names, an error's text) made printable.
func printableReply(m sdk.Message) sdk.Message {
	m.Library, m.Version, m.Runtime, m.Text = printable(m.Library), printable(m.Version), printable(m.Runtime), printable(m.Text)
	for _, l := range []*[]string{&m.Kinds, &m.Caps} {
		clean := make([]string, len(*l))
		for i, v := range *l {
			clean[i] = printable(v)
		}
		if *l != nil {
			*l = clean
		}
	}
	return m
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// granted reports whether a reply grants a lock or permit (where an armed client-pause freezes it).
func granted(m sdk.Message) bool {
	switch m.Type {
	case "acquire_ok", "acquire_permits_ok":
		return m.Granted != nil && *m.Granted
	case "acquire_permit_ok":
		return m.Permit != nil && *m.Permit != ""
	}
	return false
}

// watch kills a worker that leaves a request unanswered past its bound, not counting time frozen (it is
// hung), and kills the worker when the run is stopped (Ctrl-C, SIGTERM): a worker that answers nothing or
// never reads its stdin must not hold the run, and its pending calls end unknown.
func (c *Client) watch() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var stopped <-chan struct{}
	if c.cfg.Ctx != nil {
		stopped = c.cfg.Ctx.Done()
	}
	for {
		select {
		case <-c.readDone:
			return
		case <-stopped:
			c.end(fmt.Errorf("client %s: worker stopped with the run (%v)", c.cfg.Client, context.Cause(c.cfg.Ctx)), false)
			return
		case now := <-t.C:
			c.mu.Lock()
			var late *call
			var active time.Duration
			paused := c.pausedLocked(now)
			for _, cl := range c.pending {
				if a := now.Sub(cl.sent) - (paused - cl.paused); a > cl.bound.Total() {
					late, active = cl, a
					break
				}
			}
			c.mu.Unlock()
			if late != nil {
				c.fail(fmt.Errorf("client %s: worker hung: it left %s (msg_id %d, thread %d) unanswered for %s (bound %s)",
					c.cfg.Client, late.req.Type, late.req.MsgID, late.req.Thread, active.Round(100*time.Millisecond), late.bound))
				return
			}
		}
	}
}

func (c *Client) lostError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	text := "worker gone"
	if c.dead != nil {
		text = c.dead.Error()
	}
	return &Error{Client: c.cfg.Client, Code: -1, Text: text}
}

// fail ends the worker once: SIGKILL to its whole tree (tree.go), every pending call completes with an
// indefinite error, and OnFail hears why (err nil: a normal close).
func (c *Client) fail(err error) { c.end(err, err != nil) }

// end is fail; report says whether OnFail hears of it (not when the run itself stopped the worker).
func (c *Client) end(err error, report bool) {
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return
	}
	if err == nil {
		c.dead = fmt.Errorf("client %s: worker closed", c.cfg.Client)
	} else {
		c.dead = err
	}
	pending := c.pending
	c.pending = map[int64]*call{}
	c.mu.Unlock()
	c.tree.kill()
	for _, cl := range pending {
		cl.done <- result{err: &Error{Client: c.cfg.Client, Code: -1, Text: c.dead.Error()}}
	}
	if report && c.cfg.OnFail != nil {
		c.cfg.OnFail(err)
	}
}

// event records a worker's lost/renewed report; a log event goes to its stderr.log. What is over the
// client's budget is counted, not recorded (events.go), except the first lost event of a held lock.
func (c *Client) event(m sdk.Message) {
	logged := m.Text // stderr.log holds the worker's text as it was, as it holds its stderr
	m.Text = printable(m.Text)
	key := m.Key
	if key == "" && len(m.Keys) > 0 {
		key = m.Keys[0]
	}
	// A loss of a lock the thread holds, not yet told, is recorded whatever the budget: one per grant at most.
	fresh := false
	if m.Event == "lost" { // the workload stops touching the resource (locks.Extender.Lost)
		c.mu.Lock()
		for _, k := range append([]string{m.Key}, m.Keys...) {
			h := holdKey{m.Thread, k}
			fresh = fresh || c.holds[h] > 0 && !c.lost[h]
			c.lost[h] = true
		}
		c.mu.Unlock()
		for _, k := range append([]string{m.Key}, m.Keys...) {
			c.losses.Fire(k, c.owner(m.Thread))
		}
	}
	now := c.cfg.Rec.Clock.Now()
	if !fresh && !c.budget.take(time.Now(), m.Event) {
		return
	}
	if m.Event == "log" {
		if f, err := os.OpenFile(filepath.Join(c.cfg.Dir, "clients", c.cfg.Client, "stderr.log"),
			os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(f, "event log: %s\n", c.red.String(logged)) // but not the password
			f.Close()
		}
		return
	}
	rec := history.Record{Type: history.Event, Time: now, Client: c.cfg.Client,
		Thread: m.Thread, Key: key, Owner: c.owner(m.Thread), F: m.Event, Detail: m.Text}
	if !c.cfg.Events.write(c.cfg.Rec, rec) {
		c.budget.drop(m.Event)
	}
}

// Close shuts the worker down (stdin closed; SIGKILL 5 s later if it has not exited), kills whatever is
// left of its tree, and returns once its stdout has been read (nothing more reaches the history).
func (c *Client) Close() error {
	c.mu.Lock()
	c.closing = true
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		c.cont()
	}
	_ = c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.tree.kill()
		<-c.exited
	}
	select {
	case <-c.readDone:
	case <-time.After(drainWait):
		_ = c.stdout.Close() // held open by a process the sweep could not find
		<-c.readDone
	}
	select { // the log is whole when Close returns, unless a process the sweep missed holds stderr
	case <-c.logDone:
	case <-time.After(drainWait):
	}
	return nil
}

// Name is the client's name in the history.
func (c *Client) Name() string { return c.cfg.Client }

// Gate holds the workload's thread while the worker is frozen.
func (c *Client) Gate() *locks.Gate { return c.cfg.Gate }

// Arm freezes the worker (SIGSTOP) right after its next grant is read, and the workload's thread at the
// gate.
func (c *Client) Arm() {
	c.armed.Store(true)
	c.cfg.Gate.Arm()
}

// Pause freezes the worker (SIGSTOP) and the workload's thread at the gate now.
func (c *Client) Pause() {
	c.cfg.Gate.Pause()
	c.freeze()
}

// Resume lets a frozen worker run (SIGCONT) and disarms it.
func (c *Client) Resume() {
	c.armed.Store(false)
	c.cont()
	c.cfg.Gate.Resume()
}

// SetClockOffset shifts the worker's wall clock (it was started with the clock library).
func (c *Client) SetClockOffset(d time.Duration) {
	if c.clockFile != "" {
		_ = clockshift.Set(c.clockFile, d)
	}
}

func (c *Client) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.dead != nil {
		return
	}
	if c.tree.signal(syscall.SIGSTOP) == nil {
		c.tree.waitStopped() // before any request written after this can reach a thread still running
		c.stopped, c.stoppedAt = true, time.Now()
	}
}

func (c *Client) cont() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		return
	}
	_ = c.tree.signal(syscall.SIGCONT)
	c.pausedTotal += time.Since(c.stoppedAt)
	c.stopped = false
}

// Pid is the worker's process id (its process group's too).
func (c *Client) Pid() int { return c.cmd.Process.Pid }
