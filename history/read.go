package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// History is a parsed history file.
type History struct {
	Meta      *Record     // nil when the file has none
	Ops       []Operation // operations in invoke order
	Faults    []Record
	Sections  []Record
	Events    []Record // workers' lost/renewed reports
	Truncated bool     // the last line was cut short (the run was killed mid-write) and was dropped
}

// Operation is an invoked operation with its completion; Complete is nil when none was recorded, which counts as
// unknown.
type Operation struct {
	Invoke   Record
	Complete *Record
}

// Outcome is ok, fail or unknown.
func (o Operation) Outcome() Type {
	if o.Complete == nil {
		return Unknown
	}
	return o.Complete.Type
}

// ReadFile parses a history file. A cut-short last line is dropped (and reported in Truncated); any other
// malformed line is an error that names it.
func ReadFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	return Read(f)
}

// Read parses history lines from r.
func Read(r io.Reader) (*History, error) {
	h := &History{}
	open := map[int64]int{}
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec Record
			if jerr := json.Unmarshal(line, &rec); jerr != nil {
				if err == io.EOF { // the writer died mid-line: keep the prefix
					h.Truncated = true
					break
				}
				return nil, fmt.Errorf("history line %d: %v", n, jerr)
			}
			if aerr := h.add(rec, open); aerr != nil {
				return nil, fmt.Errorf("history line %d: %v", n, aerr)
			}
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

func (h *History) add(rec Record, open map[int64]int) error {
	switch rec.Type {
	case Meta:
		h.Meta = &rec
	case Invoke:
		if _, dup := open[rec.ID]; dup {
			return fmt.Errorf("operation %d invoked twice", rec.ID)
		}
		open[rec.ID] = len(h.Ops)
		h.Ops = append(h.Ops, Operation{Invoke: rec})
	case Ok, Fail, Unknown:
		i, ok := open[rec.ID]
		if !ok {
			return fmt.Errorf("completion of operation %d that was never invoked", rec.ID)
		}
		if h.Ops[i].Complete != nil {
			return fmt.Errorf("operation %d completed twice", rec.ID)
		}
		if rec.Time < h.Ops[i].Invoke.Time {
			return fmt.Errorf("operation %d completes before it was invoked", rec.ID)
		}
		c := rec
		h.Ops[i].Complete = &c
	case Fault:
		h.Faults = append(h.Faults, rec)
	case Event:
		h.Events = append(h.Events, rec)
	case Section:
		if rec.Exit < rec.Enter {
			return fmt.Errorf("critical section exits before it enters")
		}
		h.Sections = append(h.Sections, rec)
	default:
		return fmt.Errorf("unknown record type %q", rec.Type)
	}
	return nil
}

// End is the time of the last record, used as the end of open fault windows.
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
	Healed     bool // a stop record was seen
}

// Windows pairs fault start and stop records. A fault never stopped runs to the end of the history.
func (h *History) Windows() []Window {
	var out []Window
	openIdx := map[string]int{}
	for _, f := range h.Faults {
		if f.Phase == "plan" {
			continue
		}
		k := f.F + fmt.Sprint(f.Targets)
		if f.Phase == "start" {
			openIdx[k] = len(out)
			out = append(out, Window{Kind: f.F, Targets: f.Targets, Detail: f.Detail, Start: f.Time, End: -1})
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
	end := h.End()
	for i := range out {
		if out[i].End < 0 {
			out[i].End = end
		}
	}
	return out
}
