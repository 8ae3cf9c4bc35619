// Package history records what every client and the nemesis did, as one stream of JSON lines on one clock.
package history

import (
	"encoding/json"
	"sync/atomic"
	"time"
)

// Type says what a record is.
type Type string

// Record types. An operation is an invoke followed by exactly one of ok, fail or unknown with the same ID.
const (
	Meta    Type = "meta"    // first line: seed, options, versions, fault plan
	Invoke  Type = "invoke"  // a client starts an operation
	Ok      Type = "ok"      // it completed and took effect as its value says
	Fail    Type = "fail"    // it completed and surely took no effect
	Unknown Type = "unknown" // it may or may not have taken effect (timeout, lost connection)
	Fault   Type = "fault"   // the nemesis started or stopped a fault
	Section Type = "cs"      // a critical section on the harness-owned protected resource
	End     Type = "end"     // last line: how the run ended (F is an EndReason); a history without it is cut short
	Event   Type = "event"   // a worker's own report (f: lost or renewed), kept for people; checkers skip it
)

// The wire recorder's verdict on itself, an event record with Client WireClient written when a worker
// run's taps stopped: F WireComplete when every lock command on every client link was recorded (records
// with Src "wire"), else WireIncomplete with the Detail saying what is missing.
const (
	WireSrc        = "wire" // Record.Src of the wire recorder's records (network/wire.Src)
	WireClient     = "wire"
	WireComplete   = "wire-complete"
	WireIncomplete = "wire-incomplete"
)

// EndReason is an end record's F: how the run ended.
type EndReason string

// End reasons. Only a completed run's history can be judged valid.
const (
	EndCompleted   EndReason = "completed"   // the workload ran its --time, the final heal and teardown followed
	EndInterrupted EndReason = "interrupted" // a signal stopped the run early (Detail names it)
	EndFailed      EndReason = "failed"      // a harness error stopped the run (Error says which)
)

// Bounds on numbers in a history, so that no crafted value can overflow the checkers' arithmetic (a lease
// in ms is multiplied by 10^6 and added to a time).
const (
	MaxTime  = int64(1) << 62 // ns, about 146 years
	MaxArgMs = int64(1e12)    // an args value in ms (names ending in _ms), about 31 years
)

// A node that died outside the fault plan is a fault record with F NodeDied, Phase Unplanned, the node as
// its target and how it ended as its detail: the run around it is at best unknown.
const (
	NodeDied  = "node-died"
	Unplanned = "unplanned"
)

// Record is one line of history.jsonl. Times are nanoseconds since the run started, on one monotonic clock.
type Record struct {
	Type   Type   `json:"type"`
	Time   int64  `json:"time"`
	ID     int64  `json:"id,omitempty"`     // pairs an invoke with its completion
	Client string `json:"client,omitempty"` // client name (c1...), or "nemesis"
	Thread int64  `json:"thread,omitempty"`
	Key    string `json:"key,omitempty"`
	Node   string `json:"node,omitempty"`  // the node a lock command went to (n1...)
	Owner  string `json:"owner,omitempty"` // the lock owner id, Redisson's <uuid>:<thread>
	Src    string `json:"src,omitempty"`   // "wire": a lock command decoded from the link, not told by the client
	F      string `json:"f,omitempty"`     // operation (acquire, release, renew) or fault kind
	// Args holds numeric arguments: lease_ms, wait_ms, try_at (time of the attempt that won).
	Args  map[string]int64 `json:"args,omitempty"`
	Value *int64           `json:"value,omitempty"` // numeric result: ttl on a refused acquire, unlock result
	Error string           `json:"error,omitempty"`
	// Step names the schedule step (--schedule) that made this call or started this fault.
	Step string `json:"step,omitempty"`

	// Fault records.
	Phase   string   `json:"phase,omitempty"` // start or stop
	Targets []string `json:"targets,omitempty"`
	Detail  string   `json:"detail,omitempty"`

	// Critical-section records.
	Enter    int64 `json:"enter,omitempty"`
	Exit     int64 `json:"exit,omitempty"`
	Token    int64 `json:"token,omitempty"`
	Rejected bool  `json:"rejected,omitempty"` // the resource refused a stale fencing token
	Until    int64 `json:"until,omitempty"`    // the end of the holder's validity window (Redlock), if any

	Data json.RawMessage `json:"data,omitempty"` // meta payload
}

// Int64 returns a pointer to v, for Record.Value.
func Int64(v int64) *int64 { return &v }

// Clock is the run's single monotonic clock. Its copies share one zero, so Restart moves it for all.
type Clock struct{ base *atomic.Pointer[time.Time] }

// NewClock starts a clock at zero now.
func NewClock() Clock {
	c := Clock{base: new(atomic.Pointer[time.Time])}
	c.Restart()
	return c
}

// Restart moves the clock's zero to now, for every copy: a run's clock starts with its workload, and
// start-up (deployment and clients, before anything is recorded) is its own figure.
func (c Clock) Restart() {
	now := time.Now()
	c.base.Store(&now)
}

// Since is how long the clock has run.
func (c Clock) Since() time.Duration { return time.Duration(c.Now()) }

// Now is the time since the clock's zero, in nanoseconds.
func (c Clock) Now() int64 { return int64(time.Since(*c.base.Load())) }

// At converts a time.Time taken in this process to the run clock (monotonic readings are kept by time.Now).
func (c Clock) At(t time.Time) int64 { return int64(t.Sub(*c.base.Load())) }
