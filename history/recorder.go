package history

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/lockcheck/lockcheck/internal/redact"
)

// Counts are live totals of completed operations, for the status line.
type Counts struct {
	Ok, Fail, Unknown, Sections, Overlaps int64
}

// Recorder appends records to a history file as they happen: one write per record, so a crash leaves a
// checkable prefix.
type Recorder struct {
	Clock Clock

	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	err    error
	failed chan struct{} // closed at the first write error
	ended  bool          // the end record is written: nothing may follow it
	buf    []byte        // reused under mu
	nextID atomic.Int64

	ok, fail, unknown, sections, overlaps atomic.Int64
	outOfFDs                              atomic.Int64 // completions that failed for want of descriptors
	fault                                 atomic.Value // string: the fault in force, for the status line

	observe atomic.Pointer[func(Record)]    // see Observe
	red     atomic.Pointer[redact.Redactor] // see Redact
}

// Create opens path for a new history.
func Create(path string, clock Clock) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history: %w", err)
	}
	r := NewRecorder(f, clock)
	r.closer = f
	return r, nil
}

// NewRecorder writes records to w.
func NewRecorder(w io.Writer, clock Clock) *Recorder {
	r := &Recorder{Clock: clock, w: w, failed: make(chan struct{})}
	r.fault.Store("")
	return r
}

// Write appends one record. The first write error is kept, signalled on Failed and returned by Err and
// Close; later records are dropped, so the file stays a prefix of the run.
func (r *Recorder) Write(rec Record) { r.write(rec, false) }

// write stamps the record with the clock under the lock when stamp is set, so the file is in time order.
func (r *Recorder) write(rec Record, stamp bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if stamp {
		rec.Time = r.Clock.Now()
	}
	if r.err != nil || r.ended {
		return
	}
	r.ended = rec.Type == End
	rec = redacted(r.red.Load(), rec) // before clipping, which could cut a secret in two
	if len(rec.Error) > MaxText || len(rec.Detail) > MaxText {
		rec.Error, rec.Detail = ClipText(rec.Error, MaxText), ClipText(rec.Detail, MaxText)
	}
	r.buf = append(appendRecord(r.buf[:0], &rec), '\n')
	if len(r.buf) > MaxLine { // escaping can grow a text sixfold: clip everything harder
		rec = clipRecord(rec, 1<<10)
		r.buf = append(appendRecord(r.buf[:0], &rec), '\n')
	}
	if len(r.buf) > MaxLine && rec.Type == Meta {
		// Never write a line the reader refuses; the caller bounds the meta's parts before this.
		r.err = fmt.Errorf("the meta record is %d bytes, over the %d a history line may have: a lockcheck bug (its parts are bounded), not bad input", len(r.buf), MaxLine)
		close(r.failed)
		return
	}
	if _, err := r.w.Write(r.buf); err != nil {
		r.err = err
		close(r.failed)
	}
}

// Redact makes every record written from now on carry none of red's secrets: a worker is handed the
// password and its texts (errors, events, library, version) and the commands on its links come from
// outside the run; results.json and the pages are made from the history (issue 29, item 3).
func (r *Recorder) Redact(red *redact.Redactor) { r.red.Store(red) }

// Redactor is the one Redact set, or nil.
func (r *Recorder) Redactor() *redact.Redactor { return r.red.Load() }

// redacted is rec with red's secrets replaced in all its texts. It allocates only when it replaces.
func redacted(red *redact.Redactor, rec Record) Record {
	if red == nil {
		return rec
	}
	rec.Client, rec.Key, rec.Node, rec.Owner = red.String(rec.Client), red.String(rec.Key), red.String(rec.Node), red.String(rec.Owner)
	rec.Src, rec.F, rec.Error = red.String(rec.Src), red.String(rec.F), red.String(rec.Error)
	rec.Phase, rec.Detail = red.String(rec.Phase), red.String(rec.Detail)
	copied := false
	for i, t := range rec.Targets {
		if s := red.String(t); s != t {
			if !copied { // the caller's slice stays as it was
				rec.Targets, copied = append([]string(nil), rec.Targets...), true
			}
			rec.Targets[i] = s
		}
	}
	rec.Data = red.JSON(rec.Data)
	return rec
}

// Failed is closed when a write fails (a full disk): the run must stop, since nothing more is recorded.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// Err is the first write error, or nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// End writes the end record, the history's last line: how the run ended, with detail (the signal, or the
// error). A history without it was cut short. Records written after it are dropped.
func (r *Recorder) End(reason EndReason, detail string) {
	rec := Record{Type: End, F: string(reason)}
	if reason == EndFailed {
		rec.Error = detail
	} else {
		rec.Detail = detail
	}
	r.write(rec, true)
}

// Close flushes nothing (every record is already written) and closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closer != nil {
		if err := r.closer.Close(); err != nil && r.err == nil {
			r.err = err
			close(r.failed)
		}
		r.closer = nil
	}
	return r.err
}

// Op is an operation that has been invoked and not yet completed. It keeps only what its completion
// repeats, not a whole Record: one is allocated per lock command.
type Op struct {
	r                           *Recorder
	id, thread                  int64
	client, key, node, owner, f string
	wire                        bool // a wire record (Src set): the live counts leave it out, as the final stats do
}

// Invoke records the start of an operation and returns the handle that completes it.
func (r *Recorder) Invoke(rec Record) *Op {
	rec.Type = Invoke
	rec.ID = r.nextID.Add(1)
	r.write(rec, true)
	r.notify(rec)
	return &Op{r: r, id: rec.ID, client: rec.Client, thread: rec.Thread, key: rec.Key, node: rec.Node,
		owner: rec.Owner, f: rec.F, wire: rec.Src != ""}
}

// Ok records that the operation took effect, with its numeric result if any, and extra arguments learned
// while it ran (e.g. try_at).
func (o *Op) Ok(value *int64, args map[string]int64) { o.complete(Ok, value, args, "") }

// Fail records that the operation surely took no effect.
func (o *Op) Fail(value *int64, err error) {
	o.r.noteErr(err)
	o.complete(Fail, value, nil, errText(err))
}

// Unknown records that the outcome cannot be known.
func (o *Op) Unknown(err error) {
	o.r.noteErr(err)
	o.complete(Unknown, nil, nil, errText(err))
}

func (o *Op) complete(t Type, value *int64, args map[string]int64, errText string) {
	rec := Record{Type: t, ID: o.id, Client: o.client, Thread: o.thread, Key: o.key, Node: o.node, Owner: o.owner,
		F: o.f, Value: value, Args: args, Error: errText}
	o.r.write(rec, true)
	o.r.notify(rec)
	switch {
	case o.wire:
	case t == Ok:
		o.r.ok.Add(1)
	case t == Fail:
		o.r.fail.Add(1)
	default:
		o.r.unknown.Add(1)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Section records a critical section on the protected resource; overlap says whether the resource saw
// another holder inside it (for the live count only: the checker decides from the records).
func (r *Recorder) Section(rec Record, overlap bool) {
	rec.Type = Section
	rec.Time = rec.Exit
	r.Write(rec)
	r.sections.Add(1)
	if overlap {
		r.overlaps.Add(1)
	}
}

// Fault records a nemesis event and remembers the fault in force for the status line.
func (r *Recorder) Fault(kind, phase string, targets []string, detail string) {
	r.FaultStep("", kind, phase, targets, detail)
}

// FaultStep is Fault for a schedule's fault step, which the record names.
func (r *Recorder) FaultStep(step, kind, phase string, targets []string, detail string) {
	r.write(Record{Type: Fault, Client: "nemesis", F: kind, Phase: phase, Targets: targets, Detail: detail, Step: step}, true)
	switch phase {
	case "start":
		r.fault.Store(kind)
	case "stop", "final":
		r.fault.Store("")
	}
}

// Counts returns the live totals.
func (r *Recorder) Counts() Counts {
	return Counts{Ok: r.ok.Load(), Fail: r.fail.Load(), Unknown: r.unknown.Load(),
		Sections: r.sections.Load(), Overlaps: r.overlaps.Load()}
}

// CurrentFault is the fault in force, or "".
func (r *Recorder) CurrentFault() string { return r.fault.Load().(string) }
