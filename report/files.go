package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes results.json to path through a temporary file renamed into place, so a failed write (a
// full disk) leaves the previous file or none, never an empty or partial one.
func (r *Results) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// WriteAtomic writes path through a temporary file beside it, renamed into place once write and the close
// succeeded: readers (a browser, serve, a merge) see the previous file or the new one, never a partial one.
func WriteAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// Overwritable refuses to let an output replace a file that lockcheck did not write: anything but a
// regular file, a .json file that is not a results file, an .html file that is neither porcupine's timeline
// nor a summary page, or a .jsonl file that is not a history (a proof excerpt is one).
func Overwritable(path string) error {
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file: not overwriting it", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ours := false
	switch {
	case strings.HasSuffix(path, ".json"):
		var probe struct {
			Valid    json.RawMessage `json:"valid"`
			Checkers json.RawMessage `json:"checkers"`
		}
		ours = json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&probe) == nil && probe.Valid != nil && probe.Checkers != nil
	case strings.HasSuffix(path, ".jsonl"):
		head := make([]byte, 16)
		n, _ := io.ReadFull(f, head)
		ours = bytes.HasPrefix(head[:n], []byte(`{"type":"meta"`))
	case strings.HasSuffix(path, ".html"):
		head := make([]byte, 4096)
		n, _ := io.ReadFull(f, head)
		ours = bytes.Contains(head[:n], []byte("<title>Porcupine</title>")) || bytes.Contains(head[:n], []byte(PageMarker))
	case strings.HasSuffix(path, ".md"):
		head := make([]byte, len(ReportMarker))
		n, _ := io.ReadFull(f, head)
		ours = string(head[:n]) == ReportMarker
	}
	if !ours {
		return fmt.Errorf("%s exists and was not written by lockcheck: not overwriting it", path)
	}
	return nil
}

// ReportMarker opens every bug report lockcheck writes (bugreport), so that a later report may replace it.
const ReportMarker = "<!-- lockcheck report -->\n"

// PageMarker is in the head of every summary page lockcheck writes (report/page), so that a later write may
// replace the page, and nothing else.
const PageMarker = `<meta name="generator" content="lockcheck summary">`
