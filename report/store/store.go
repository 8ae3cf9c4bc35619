// Package store lists the runs of a results directory and serves them over HTTP: an index of every run
// (read again on each request, so runs that finish while it serves appear) and the runs' files.
package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
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

// maxDepth bounds how deep runs are looked for (a suite keeps its runs a level or two down).
const maxDepth = 4

// List finds the runs under dir: every directory holding a results.json or a history.jsonl, newest first.
func List(dir string) ([]Run, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	var runs []Run
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable corner of the store is skipped, the rest is listed
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		depth := 0
		if rel != "." {
			depth = strings.Count(rel, string(filepath.Separator)) + 1
		}
		if d.Name() == "nodes" || depth > maxDepth {
			return filepath.SkipDir
		}
		if r, ok := readRun(p, filepath.ToSlash(rel)); ok {
			runs = append(runs, r)
			return filepath.SkipDir
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

func readRun(dir, rel string) (Run, bool) {
	r := Run{Dir: rel, Verdict: "none"}
	res, rerr := os.ReadFile(filepath.Join(dir, "results.json"))
	hist := filepath.Join(dir, "history.jsonl")
	_, herr := os.Stat(hist)
	if rerr != nil && herr != nil {
		return r, false
	}
	if t, ok := dirTime(filepath.Base(dir)); ok {
		r.Time = t
	} else if fi, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
		r.Time = fi.ModTime()
	} else if fi, err := os.Stat(hist); err == nil {
		r.Time = fi.ModTime()
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
			for _, c := range v.Checkers {
				if c.Valid == checker.Invalid && c.Violation != "" {
					at := float64(c.At) / 1e9
					if !r.HasFirst || at < r.FirstAt {
						r.FirstAt, r.HasFirst = at, true
					}
				}
			}
		}
	}
	if rerr != nil { // running, or killed: what the history's meta record says
		if m, err := firstMeta(hist); err == nil {
			r.Lock, r.Topology, r.Seed, r.Client = m.Lock, m.Topology, m.Seed, m.Versions["client"]
			r.Nemesis = strings.Join(m.Nemesis, ",")
			if r.Nemesis == "" {
				r.Nemesis = "none"
			}
		}
	}
	if end, err := lastTime(hist); err == nil {
		r.Duration = float64(end) / 1e9
	}
	for _, name := range []string{"index.html", "history.check.summary.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			r.Page = name
			break
		}
	}
	for _, name := range []string{"results.json", "history.html", "history.jsonl", "history.check.json", "history.check.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			r.Files = append(r.Files, name)
		}
	}
	return r, true
}

type meta struct {
	Lock     string            `json:"lock"`
	Topology string            `json:"topology"`
	Nemesis  []string          `json:"nemesis"`
	Seed     int64             `json:"seed"`
	Versions map[string]string `json:"versions"`
}

// firstMeta reads the meta record, a history's first line.
func firstMeta(p string) (meta, error) {
	var m meta
	f, err := os.Open(p)
	if err != nil {
		return m, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, 1<<20), 1<<16).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return m, err
	}
	var rec struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &rec); err != nil || rec.Type != "meta" {
		return m, fmt.Errorf("%s: no meta record", p)
	}
	return m, json.Unmarshal(rec.Data, &m)
}

// lastTime is the time of a history's last complete record, read from its tail (a history can be large).
func lastTime(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	const tail = 64 << 10
	off := max(fi.Size()-tail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var rec struct {
			Time *int64 `json:"time"`
		}
		if json.Unmarshal(lines[i], &rec) == nil && rec.Time != nil {
			return *rec.Time, nil
		}
	}
	return 0, fmt.Errorf("%s: no record", p)
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
