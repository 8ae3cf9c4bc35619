package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Interrupted is a run stopped (Ctrl-C, SIGTERM) before it started: whatever was started has been stopped,
// and there is no verdict, not even unknown.
type Interrupted struct{ Err error }

func (e Interrupted) Error() string {
	return "interrupted during start-up: everything started was stopped; no verdict"
}
func (e Interrupted) Unwrap() error { return e.Err }

// IsInterrupted reports whether err is a run interrupted before it started.
func IsInterrupted(err error) bool {
	var i Interrupted
	return errors.As(err, &i)
}

// makeRunDir creates the run directory, a new one: two runs started in the same millisecond into one
// --results (a suite's shards, a script's loop) must not share it, or the second's failed start would
// remove the first's history. A --results that cannot hold one (a file, a read-only file system, no
// permission) is bad input.
func makeRunDir(root, name string) (string, error) {
	if err := ResultsDir(root); err != nil {
		return "", err
	}
	for i := 1; i <= 100; i++ {
		dir := filepath.Join(root, name)
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", dir, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", usagef("--results %s: cannot create a run directory there: %v", root, unwrapPath(err))
		}
	}
	return "", fmt.Errorf("--results %s: 100 run directories named %s already exist", root, name)
}

// unwrapPath drops the path an *fs.PathError repeats, keeping the cause.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pointLatest points <root>/latest at dir, once the run has something to judge.
func pointLatest(dir string) {
	latest := filepath.Join(filepath.Dir(dir), "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Base(dir), latest)
}

// failedStart clears up after a run that never started: its directory goes, unless a node left a log in
// it worth reading, which err then names. latest was never moved to it.
func failedStart(dir string, err error) error {
	logs := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, werr error) error {
		if werr == nil && !d.IsDir() && filepath.Ext(path) == ".log" {
			if info, ierr := d.Info(); ierr == nil && info.Size() > 0 {
				logs = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	if logs {
		return fmt.Errorf("%w (node logs kept in %s)", err, dir)
	}
	_ = os.RemoveAll(dir)
	return err
}

// ResultsDir makes the --results directory of a command that starts runs itself (suite, repro, compare),
// before the first starts, with run's own check: one that cannot hold runs is bad input.
func ResultsDir(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return usagef("--results %s: cannot create a run directory there: %v", root, unwrapPath(err))
	}
	return nil
}
