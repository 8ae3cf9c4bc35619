// Package corpus reads checker/testdata/corpus: histories recorded by real lockcheck runs, each with the
// porcupine verdict it must get (index.txt says how that verdict was established). The checker's tests
// judge every one; `make bench` times them.
package corpus

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
)

// Entry is one recorded history and the verdict it must get.
type Entry struct {
	Name string           // file <Name>.jsonl.gz
	Want checker.Validity // porcupine's verdict
	Hard bool             // porcupine's own search could not decide it in 60 s
	Run  string           // the run that recorded it
	How  string           // how Want was established, independently of the frontier search
}

// Dir is the corpus directory in the source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "checker", "testdata", "corpus")
}

// Load reads the index: one entry a line, tab-separated name, verdict (valid/invalid), hard or easy, the
// run, how the verdict was established; # starts a comment.
func Load() ([]Entry, error) {
	path := filepath.Join(Dir(), "index.txt")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) != 5 {
			return nil, fmt.Errorf("%s:%d: want 5 tab-separated fields, got %d", path, n, len(fs))
		}
		e := Entry{Name: fs[0], Hard: fs[2] == "hard", Run: fs[3], How: fs[4]}
		switch fs[1] {
		case "valid":
			e.Want = checker.Valid
		case "invalid":
			e.Want = checker.Invalid
		default:
			return nil, fmt.Errorf("%s:%d: verdict %q: want valid or invalid", path, n, fs[1])
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// History reads the entry's history.
func (e Entry) History() (*history.History, error) {
	f, err := os.Open(filepath.Join(Dir(), e.Name+".jsonl.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return history.Read(z)
}

// Judge runs porcupine on the entry as a run's analysis would (the family's model and commands, named by
// the meta record), bounded by timeout, and says how long the check took.
func (e Entry) Judge(ctx context.Context, timeout time.Duration) (checker.Result, time.Duration, error) {
	lin, h, err := e.Checker(timeout)
	if err != nil {
		return checker.Result{}, 0, err
	}
	start := time.Now()
	res := lin.Check(ctx, h)
	return res, time.Since(start), nil
}

// Checker reads the entry's history and builds the porcupine checker its family uses.
func (e Entry) Checker(timeout time.Duration) (*checker.Linearizable, *history.History, error) {
	h, err := e.History()
	if err != nil {
		return nil, nil, err
	}
	if h.Meta == nil {
		return nil, nil, fmt.Errorf("%s: no meta record", e.Name)
	}
	if h.RunErr != nil {
		return nil, nil, fmt.Errorf("%s: meta record: %v", e.Name, h.RunErr)
	}
	checks := kinds.Checks(h.Run.Checks)
	f, err := kinds.FamilyNamed(checks.Family)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", e.Name, err)
	}
	lin, _ := f.Checkers(checks, timeout)
	return lin, h, nil
}
