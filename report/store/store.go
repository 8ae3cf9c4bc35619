// Package store lists the runs of a results directory and serves them over HTTP: an index of every run
// (read again on each request, so runs that finish while it serves appear) and the runs' files.
package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/report"
)

// Run is one row of the index.
type Run struct {
	Dir       string    // relative to the store, slash-separated
	Time      time.Time // when it started (from the directory's name, else its results' modification time)
	Lock      string
	Client    string // library and version of a worker run; "" for lockcheck's own client
	Topology  string
	Nemesis   string
	Seed      int64
	Verdict   string // valid, invalid, unknown, or "none" (no results yet: running, or killed)
	FirstAt   float64
	HasFirst  bool
	Duration  float64 // seconds, from the history's last record
	Page      string  // the summary page's file name, if any
	Files     []string
	Broken    string // why results.json could not be read
	sortStamp int64
}

// maxDepth bounds how deep runs are looked for. The deepest lockcheck writes are repro's and bisect's,
// six levels under results/ (repro/TIME/ENTRY/runs/CASE/RUN); two more allow a store one or two levels
// above results/.
const maxDepth = 8

// list finds the runs of the store at root: every directory holding a results.json or a history.jsonl,
// newest first. Whatever the store holds (a symlink out of it, a FIFO or a device named results.json),
// nothing outside it is read, no open blocks, and no read is larger than its bound.
func list(root *os.Root) ([]Run, error) {
	var runs []Run
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // an unreadable corner of the store is skipped, the rest is listed
		}
		if !d.IsDir() { // nor a symlink: latest's run is listed once, under its own name
			return nil
		}
		depth := 0
		if p != "." {
			depth = strings.Count(p, "/") + 1
		}
		if d.Name() == "nodes" || depth > maxDepth {
			return fs.SkipDir
		}
		if r, ok := readRun(root, p); ok {
			runs = append(runs, r)
			return fs.SkipDir
		}
		return nil
	})
	sort.SliceStable(runs, func(i, j int) bool {
		if runs[i].sortStamp != runs[j].sortStamp {
			return runs[i].sortStamp > runs[j].sortStamp
		}
		return runs[i].Dir < runs[j].Dir
	})
	return runs, err
}

// dirTime is the start time in a run directory's name (20260102T150405.000-lock-nemesis).
func dirTime(name string) (time.Time, bool) {
	if len(name) < 19 {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("20060102T150405.000", name[:19], time.Local)
	return t, err == nil
}

// readRun reads the run at rel (slash-separated, inside root). A results.json that is there but cannot be
// read (not a regular file, too large, a symlink out of the store) makes a row that says so.
func readRun(root *os.Root, rel string) (Run, bool) {
	r := Run{Dir: rel, Verdict: "none"}
	at := func(name string) string { return path.Join(rel, name) }
	resInfo, lerr := root.Lstat(at("results.json"))
	hist, histInfo, herr := safefile.OpenIn(root, at("history.jsonl"))
	if herr == nil {
		defer hist.Close()
	}
	if lerr != nil && herr != nil {
		return r, false
	}
	var res []byte
	rerr := lerr
	if lerr == nil {
		res, rerr = safefile.ReadIn(root, at("results.json"), safefile.ResultsMax)
		if rerr != nil {
			r.Broken = "results.json: " + unwrapPath(rerr).Error()
		}
	}
	if t, ok := dirTime(path.Base(rel)); ok {
		r.Time = t
	} else if lerr == nil {
		r.Time = resInfo.ModTime()
	} else {
		r.Time = histInfo.ModTime()
	}
	r.sortStamp = r.Time.UnixNano()
	if rerr == nil {
		var v report.Results
		if err := json.Unmarshal(res, &v); err != nil {
			r.Broken = "results.json: " + err.Error()
		} else {
			r.Verdict = v.Valid.String()
			r.Lock, r.Topology, r.Seed = v.Lock, v.Topology, v.Seed
			r.Nemesis = strings.Join(v.Nemesis, ",")
			if r.Nemesis == "" {
				r.Nemesis = "none"
			}
			r.Client = v.Versions["client"]
			if at := v.FirstViolation(); v.Valid == checker.Invalid && at >= 0 {
				r.FirstAt, r.HasFirst = float64(at)/1e9, true
			}
		}
	}
	if herr == nil {
		if rerr != nil { // running, or killed: what the history's meta record says
			if m, err := history.ReadMeta(io.NewSectionReader(hist, 0, history.MaxLine+1)); err == nil {
				r.Lock, r.Topology, r.Seed, r.Client = m.Lock, m.Topology, m.Seed, m.Versions["client"]
				r.Nemesis = strings.Join(m.Nemesis, ",")
				if r.Nemesis == "" {
					r.Nemesis = "none"
				}
			}
		}
		if end, err := lastTime(hist, histInfo.Size()); err == nil {
			r.Duration = float64(end) / 1e9
		}
	}
	for _, name := range []string{"index.html", "history.check.summary.html"} {
		if regular(root, at(name)) {
			r.Page = name
			break
		}
	}
	for _, name := range []string{"results.json", "history.html", "history.jsonl", "history.check.json", "history.check.html"} {
		if regular(root, at(name)) {
			r.Files = append(r.Files, name)
		}
	}
	return r, true
}

// regular says whether name is a regular file inside root (a symlink to one inside it included).
func regular(root *os.Root, name string) bool {
	fi, err := root.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

// unwrapPath drops the path an *fs.PathError repeats (absolute, so not the store's to show), keeping the
// cause.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lastTime is the time of a history's last complete record, read from its tail (a history can be large).
func lastTime(f *os.File, size int64) (int64, error) {
	const tail = 64 << 10
	off := max(size-tail, 0)
	b := make([]byte, size-off)
	n, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	lines := bytes.Split(bytes.TrimRight(b[:n], "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var rec struct {
			Time *int64 `json:"time"`
		}
		if json.Unmarshal(lines[i], &rec) == nil && rec.Time != nil {
			return *rec.Time, nil
		}
	}
	return 0, errors.New("history.jsonl: no record")
}

// href is a run file's address under the server.
func href(dir, name string) string {
	return "/runs/" + escapePath(path.Join(dir, name))
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
