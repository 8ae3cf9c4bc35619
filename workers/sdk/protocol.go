// Package sdk is the lock-client protocol (LCP/1, docs/protocol.md) in Go: its message types, which
// lockcheck's driver shares, and Serve, which turns a Go lock library into a worker (implement Mutex,
// call Serve from main).
package sdk

// Protocol is the protocol version this package speaks.
const Protocol = 1

// Message is every LCP/1 message, both ways; each type uses the fields the spec gives it. Reply fields
// are pointers so that false and 0 are written, and absent ones are not.
type Message struct {
	Type      string `json:"type"`
	MsgID     int64  `json:"msg_id,omitempty"`
	InReplyTo int64  `json:"in_reply_to,omitempty"`

	// init
	Protocol       int               `json:"protocol,omitempty"`
	Client         string            `json:"client,omitempty"`
	Seed           int64             `json:"seed,omitempty"`
	Topology       *Topology         `json:"topology,omitempty"`
	Password       string            `json:"password,omitempty"`
	Lock           *Lock             `json:"lock,omitempty"`
	Options        *Options          `json:"options,omitempty"`
	LibraryOptions map[string]string `json:"library_options,omitempty"`

	// init_ok
	Library string   `json:"library,omitempty"`
	Version string   `json:"version,omitempty"`
	Runtime string   `json:"runtime,omitempty"`
	Kinds   []string `json:"kinds,omitempty"`
	Caps    []string `json:"caps,omitempty"`
	// LeaseGranularityMs says the library's leases are whole multiples of it (whole seconds: 1000):
	// lockcheck then sends only such leases (docs/protocol.md, "Leases the library cannot honour").
	LeaseGranularityMs int64 `json:"lease_granularity_ms,omitempty"`

	// requests
	Thread  int64    `json:"thread,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	Key     string   `json:"key,omitempty"`
	Mode    string   `json:"mode,omitempty"`
	WaitMs  int64    `json:"wait_ms,omitempty"`
	LeaseMs int64    `json:"lease_ms,omitempty"`
	N       int64    `json:"n,omitempty"`
	Permit  *string  `json:"permit,omitempty"` // release_permit's id; acquire_permit_ok's ("" for none)

	// replies
	Granted  *bool  `json:"granted,omitempty"`
	Token    *int64 `json:"token,omitempty"`
	ValidMs  *int64 `json:"valid_ms,omitempty"`
	Extended *bool  `json:"extended,omitempty"`
	Set      *bool  `json:"set,omitempty"`
	Released *bool  `json:"released,omitempty"`
	Value    *int64 `json:"value,omitempty"`
	Done     *bool  `json:"done,omitempty"`
	Held     *bool  `json:"held,omitempty"`   // held: the calling thread holds the lock
	Locked   *bool  `json:"locked,omitempty"` // is_locked: someone holds it

	// error
	Code *int   `json:"code,omitempty"`
	Text string `json:"text,omitempty"`

	// event
	Event string `json:"event,omitempty"`
}

// Topology is init's deployment: every address is the client's own proxy; NAT maps announced addresses
// to them.
type Topology struct {
	Kind       string            `json:"kind"`
	Nodes      []Node            `json:"nodes"`
	Sentinels  []string          `json:"sentinels,omitempty"`
	MasterName string            `json:"master_name,omitempty"`
	NAT        map[string]string `json:"nat,omitempty"`
}

// Node is one data node.
type Node struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// Lock is the lock kind and family a run drives.
type Lock struct {
	Kind   string `json:"kind"`
	Family string `json:"family"`
}

// Options are lockcheck's run options, in milliseconds.
type Options struct {
	LeaseMs    int64 `json:"lease_ms"`
	WatchdogMs int64 `json:"watchdog_ms"`
	WaitMs     int64 `json:"wait_ms"`
	TimeoutMs  int64 `json:"timeout_ms"`
	// Permits is --permits for the counted families (semaphore, expirable-semaphore), absent otherwise: every
	// client's capacity, for a library whose limit is a constructor argument rather than a value in Redis.
	Permits int64 `json:"permits,omitempty"`
}

// Request types.
const (
	TypeInit           = "init"
	TypeAcquire        = "acquire"
	TypeRelease        = "release"
	TypeExtend         = "extend"
	TypeSetPermits     = "set_permits"
	TypeAcquirePermits = "acquire_permits"
	TypeReleasePermits = "release_permits"
	TypeAcquirePermit  = "acquire_permit"
	TypeReleasePermit  = "release_permit"
	TypeAvailable      = "available"
	TypeSetCount       = "set_count"
	TypeCountDown      = "count_down"
	TypeAwait          = "await"
	TypeHeld           = "held"         // isHeldByCurrentThread (cap reads): reply held
	TypeIsLocked       = "is_locked"    // isLocked (cap reads): reply locked
	TypeForceUnlock    = "force_unlock" // forceUnlock (cap force-unlock): reply released, true when it deleted a hold
	TypeShutdown       = "shutdown"
	TypeError          = "error"
	TypeEvent          = "event"
)

// Error codes (docs/protocol.md, Errors). Any code not listed as definite is indefinite.
const (
	CodeTimeout      = 0
	CodeNotSupported = 10
	CodeUnavailable  = 11
	CodeMalformed    = 12
	CodeCrash        = 13
	CodeInterrupted  = 14
	CodeNotHeld      = 40
	CodeNoSync       = 41
)

// Definite reports whether an error code proves the call took no effect.
func Definite(code int) bool {
	switch code {
	case CodeNotSupported, CodeUnavailable, CodeMalformed, CodeInterrupted, CodeNotHeld:
		return true
	}
	return false
}

// Error is a protocol error reply.
type Error struct {
	Code int
	Text string
}

func (e *Error) Error() string { return e.Text }

// Errorf is an error reply with code.
func Errorf(code int, text string) *Error { return &Error{Code: code, Text: text} }

// ErrNotHeld is the release/extend answer when this owner does not hold the lock.
var ErrNotHeld = &Error{Code: CodeNotHeld, Text: "not held by this owner"}

// Bool, Int64 and String return pointers, for reply fields.
func Bool(v bool) *bool       { return &v }
func Int64(v int64) *int64    { return &v }
func String(v string) *string { return &v }

// CapSingleThread, in init_ok's caps, says the library cannot run two threads on one client instance:
// lockcheck then refuses --threads above 1 for the worker. Without it, a worker must answer requests of
// threads 1..N of one client concurrently (Serve does).
const CapSingleThread = "single-thread"

// Caps of the cross-thread operations. Without them lockcheck sends no such request (a worker that gets
// one anyway answers error 10, not supported, as Serve does for any request it has no method for).
const (
	// CapReads: the worker answers held and is_locked.
	CapReads = "reads"
	// CapForceUnlock: the worker answers force_unlock, which releases the lock whoever holds it.
	CapForceUnlock = "force-unlock"
	// CapThreadBound: the library ties a hold to the thread or token that took it, so a release by a thread
	// that does not hold the lock is refused (error 40); lockcheck then sends such stray releases.
	CapThreadBound = "thread-bound"
)
