package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

// History is a parsed history file. Its records share their strings, Args maps and Value pointers with
// one another (a long history repeats the same few): they are read-only.
type History struct {
	Meta      *Record     // nil when the file has none
	MetaLine  int         // the meta record's line number
	Run       *RunMeta    // the meta record's data, decoded; nil when there is none or it does not decode
	RunErr    error       // why the meta record's data does not decode (the checkers then take defaults)
	Ops       []Operation // operations in invoke order
	Faults    []Record
	Sections  []Record
	Ended     *Record  // the end record; nil when the run never wrote one (killed, or still running)
	Events    []Record // workers' lost/renewed reports
	Truncated bool     // the last line was cut short (the run was killed mid-write) and was dropped
	// Steps names, by operation id, the schedule step (--schedule) that invoked it: kept apart from
	// Operation, which must stay small, since only a schedule run's few operations have one.
	Steps map[int64]string
}

// StepOf is the schedule step that invoked an operation ("" for none).
func (h *History) StepOf(o Operation) string { return h.Steps[o.Invoke.ID] }

// MaxLine bounds a history line: the longest real record is a meta record of a few KB, and an unbounded
// line (lockcheck check /dev/zero) would take all memory.
const MaxLine = 1 << 20

// Operation is an invoked operation with its completion; Complete is nil when none was recorded, which counts as
// unknown. Both halves keep only an operation's fields, not a whole Record (a million operations: 630 MB
// as Records, 230 MB so).
type Operation struct {
	Invoke   Call
	Complete *Result
}

// Call is an operation's invoke record.
type Call struct {
	Time   int64            `json:"time"`
	ID     int64            `json:"id,omitempty"`
	Client string           `json:"client,omitempty"`
	Thread int64            `json:"thread,omitempty"`
	Key    string           `json:"key,omitempty"`
	Node   string           `json:"node,omitempty"`
	Owner  string           `json:"owner,omitempty"`
	Src    string           `json:"src,omitempty"`
	F      string           `json:"f,omitempty"`
	Args   map[string]int64 `json:"args,omitempty"`
}

// ThreadName names the call's client thread as stories and checkers name owners: "c1", or "c1/2" where the
// record has a thread.
func (c Call) ThreadName() string {
	if c.Thread == 0 {
		return c.Client
	}
	return c.Client + "/" + strconv.FormatInt(c.Thread, 10)
}

// Result is an operation's completion record: what its invoke does not already say.
type Result struct {
	Type  Type             `json:"type"`
	Time  int64            `json:"time"`
	Value *int64           `json:"value,omitempty"`
	Args  map[string]int64 `json:"args,omitempty"` // learned while it ran: try_at, nosync
	Error string           `json:"error,omitempty"`
}

// CallOf is the invoke part of rec.
func CallOf(rec Record) Call {
	return Call{Time: rec.Time, ID: rec.ID, Client: rec.Client, Thread: rec.Thread, Key: rec.Key, Node: rec.Node,
		Owner: rec.Owner, Src: rec.Src, F: rec.F, Args: rec.Args}
}

// ResultOf is the completion part of rec.
func ResultOf(rec Record) Result {
	return Result{Type: rec.Type, Time: rec.Time, Value: rec.Value, Args: rec.Args, Error: rec.Error}
}

// OperationOf pairs an invoke record with its completion record (nil: none recorded), as the reader does.
func OperationOf(inv Record, done *Record) Operation {
	o := Operation{Invoke: CallOf(inv)}
	if done != nil {
		r := ResultOf(*done)
		o.Complete = &r
	}
	return o
}

// Record is the invoke as a whole record.
func (c Call) Record() Record {
	return Record{Type: Invoke, Time: c.Time, ID: c.ID, Client: c.Client, Thread: c.Thread, Key: c.Key,
		Node: c.Node, Owner: c.Owner, Src: c.Src, F: c.F, Args: c.Args}
}

// CompleteRecord is the completion as a whole record (nil: none), the operation's fields taken from its invoke.
func (o Operation) CompleteRecord() *Record {
	if o.Complete == nil {
		return nil
	}
	c := o.Complete
	return &Record{Type: c.Type, Time: c.Time, ID: o.Invoke.ID, Client: o.Invoke.Client, Thread: o.Invoke.Thread,
		Key: o.Invoke.Key, Node: o.Invoke.Node, Owner: o.Invoke.Owner, Src: o.Invoke.Src, F: o.Invoke.F,
		Value: c.Value, Args: c.Args, Error: c.Error}
}

// Outcome is ok, fail or unknown.
func (o Operation) Outcome() Type {
	if o.Complete == nil {
		return Unknown
	}
	return o.Complete.Type
}

// ReadFile parses a history file. A last line that is a cut-short record is dropped (and reported in
// Truncated); any other malformed line is an error that names it.
func ReadFile(path string) (*History, error) {
	// A regular file only: opening a FIFO would wait for a writer for ever, and a device (/dev/zero) has no
	// end; neither can hold a history lockcheck wrote, nor take the check's files beside it.
	f, _, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	n, cs, err := countInvokes(f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return read(f, n, cs)
}

// countInvokes counts the lines that start as the recorder writes an invoke, and a critical section: Ops
// and Sections are then allocated once, not grown by copies that would each hold the old and the new
// array (a million operations: 300 MB each; their sections, 260 MB of copies in all).
func countInvokes(r io.Reader) (int, int, error) {
	prefix, section := []byte(`{"type":"invoke",`), []byte(`{"type":"cs",`)
	br := bufio.NewReaderSize(r, 1<<16)
	n, cs, start := 0, 0, true
	for {
		chunk, err := br.ReadSlice('\n')
		if start && bytes.HasPrefix(chunk, prefix) {
			n++
		} else if start && bytes.HasPrefix(chunk, section) {
			cs++
		}
		start = err == nil
		if err == io.EOF {
			return n, cs, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return 0, 0, err
		}
	}
}

// Read parses history lines from r.
func Read(r io.Reader) (*History, error) { return read(r, 0, 0) }

// read parses history lines from r, with room for ops operations and cs sections (hints).
func read(r io.Reader, ops, cs int) (*History, error) {
	h := &History{Ops: make([]Operation, 0, ops)}
	if cs > 0 { // else nil, as before
		h.Sections = make([]Record, 0, cs)
	}
	d := newDecoder()
	ids := newIDs()
	br := bufio.NewReaderSize(r, 1<<16)
	var line []byte
	var rec Record // one for every line: add copies what it keeps
	records := 0
	for n := 1; ; n++ {
		var err error
		line, err = readLine(br, line[:0])
		if err == errLong {
			return nil, fmt.Errorf("history line %d: longer than %d bytes: not a lockcheck history", n, MaxLine)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if jerr := d.decode(line, &rec); jerr != nil {
				if err == io.EOF && cutShort(line) && h.Ended == nil { // the writer died mid-line: keep the prefix
					h.Truncated = true
					break
				}
				return nil, fmt.Errorf("history line %d: %v", n, jerr)
			}
			if aerr := h.add(d, &rec, ids, n, records); aerr != nil {
				return nil, fmt.Errorf("history line %d: %v", n, aerr)
			}
			records++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
	}
	sort.SliceStable(h.Sections, func(i, j int) bool { return h.Sections[i].Enter < h.Sections[j].Enter })
	return h, nil
}

var errLong = errors.New("line too long")

// readLine appends the next line (with its newline, if any) to buf, refusing one longer than MaxLine.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLine+1 {
			return buf, errLong
		}
		buf = append(buf, chunk...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// cutShort reports whether a last line that does not parse is the beginning of a JSON object that a write
// cut short, rather than garbage: only such a line may be dropped as truncated.
func cutShort(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	var v json.RawMessage
	return json.NewDecoder(bytes.NewReader(line)).Decode(&v) == io.ErrUnexpectedEOF
}

// add takes record number seen (from 0) on line n. rec is reused for the next line: what add keeps, it
// copies (a Record that escaped here was a heap allocation per line, 1.2 GB for a million operations).
func (h *History) add(d *decoder, rec *Record, ids *idSet, n, seen int) error {
	if h.Ended != nil {
		return fmt.Errorf("a %q record after the end record", rec.Type)
	}
	if err := checkNumbers(rec); err != nil {
		return err
	}
	switch rec.Type {
	case Meta:
		if h.Meta != nil {
			return fmt.Errorf("a second meta record (the first is on line %d)", h.MetaLine)
		}
		if seen > 0 {
			return fmt.Errorf("the meta record must be the first record")
		}
		m := *rec
		h.Meta, h.MetaLine = &m, n
		h.Run, h.RunErr = DecodeMeta(m.Data)
	case End:
		switch EndReason(rec.F) {
		case EndCompleted, EndInterrupted, EndFailed:
		default:
			return fmt.Errorf("end record with unknown reason %q (want %s, %s or %s)", rec.F, EndCompleted, EndInterrupted, EndFailed)
		}
		e := *rec
		h.Ended = &e
	case Invoke:
		if !ids.invoke(rec.ID, len(h.Ops)) {
			return fmt.Errorf("operation %d invoked twice", rec.ID)
		}
		h.Ops = append(h.Ops, Operation{Invoke: CallOf(*rec)})
		if rec.Step != "" {
			if h.Steps == nil {
				h.Steps = map[int64]string{}
			}
			h.Steps[rec.ID] = rec.Step
		}
	case Ok, Fail, Unknown:
		i, ok := ids.complete(rec.ID)
		if !ok {
			if ids.invoked(rec.ID) {
				return fmt.Errorf("operation %d completed twice", rec.ID)
			}
			return fmt.Errorf("completion of operation %d that was never invoked", rec.ID)
		}
		if rec.Time < h.Ops[i].Invoke.Time {
			return fmt.Errorf("operation %d completes before it was invoked", rec.ID)
		}
		h.Ops[i].Complete = d.keep(ResultOf(*rec))
	case Fault:
		h.Faults = append(h.Faults, *rec)
	case Event:
		h.Events = append(h.Events, *rec)
	case Section:
		if rec.Exit < rec.Enter {
			return fmt.Errorf("critical section exits before it enters")
		}
		h.Sections = append(h.Sections, *rec)
	default:
		return fmt.Errorf("unknown record type %q", rec.Type)
	}
	return nil
}

// checkNumbers refuses times and arguments no run writes, which could overflow the checkers' arithmetic
// (a lease of 10^13 ms) or turn a double grant into a legal one (a negative lease).
func checkNumbers(rec *Record) error {
	for _, t := range []struct {
		name string
		v    int64
	}{{"time", rec.Time}, {"enter", rec.Enter}, {"exit", rec.Exit}, {"until", rec.Until}} {
		if t.v < 0 || t.v > MaxTime {
			return fmt.Errorf("%s %d out of range [0, %d]", t.name, t.v, MaxTime)
		}
	}
	for k, v := range rec.Args {
		limit := MaxTime
		if strings.HasSuffix(k, "_ms") {
			limit = MaxArgMs
		}
		if v < 0 || v > limit {
			return fmt.Errorf("args.%s %d out of range [0, %d]", k, v, limit)
		}
	}
	return nil
}

// End is the time of the last record, used as the end of open fault windows.
// WorkloadStart is when the workload began on the history's clock: 0 where the clock starts with it (a
// meta record with ready_ms), else the meta record's time (older histories, whose clock started before the
// deployment).
func (h *History) WorkloadStart() int64 {
	if h == nil || h.Meta == nil || h.Run != nil && h.Run.ReadyMs > 0 {
		return 0
	}
	return h.Meta.Time
}

func (h *History) End() int64 {
	var end int64
	for _, o := range h.Ops {
		end = max(end, o.Invoke.Time)
		if o.Complete != nil {
			end = max(end, o.Complete.Time)
		}
	}
	for _, f := range h.Faults {
		end = max(end, f.Time)
	}
	for _, s := range h.Sections {
		end = max(end, s.Exit)
	}
	return end
}

// Window is one fault's span.
type Window struct {
	Kind       string
	Targets    []string
	Detail     string
	Start, End int64
	Healed     bool   // a stop record was seen
	Step       string `json:",omitempty"` // the schedule step that started it
}

// Windows pairs fault start and stop records. A fault never stopped runs to the end of the history.
func (h *History) Windows() []Window {
	out := []Window{} // not nil: results.json says "faults": [] on a fault-free run, not null
	openIdx := map[string]int{}
	for _, f := range h.Faults {
		if f.Phase == "plan" {
			continue
		}
		k := f.F + fmt.Sprint(f.Targets)
		if f.Phase == "start" {
			openIdx[k] = len(out)
			out = append(out, Window{Kind: f.F, Targets: f.Targets, Detail: f.Detail, Start: f.Time, End: -1, Step: f.Step})
			continue
		}
		if f.Phase != "stop" {
			continue // an error, a final heal, or a note inside a fault ("frozen")
		}
		if i, ok := openIdx[k]; ok {
			out[i].End, out[i].Healed = f.Time, true
			delete(openIdx, k)
		}
	}
	end := int64(-1) // read only when a window is open: End reads every record, and checkers ask often
	for i := range out {
		if out[i].End < 0 {
			if end < 0 {
				end = h.End()
			}
			out[i].End = end
		}
	}
	return out
}
