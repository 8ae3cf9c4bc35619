// Package safefile reads the files lockcheck is handed (lock specs, suites, shard artifacts, a store's
// results) as a hostile input would hand them: only regular files, only up to a size bound, and never
// blocking on a FIFO or reading a device forever. Names taken from such files go through Name.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode"
)

// Bounds for the small files lockcheck reads whole.
const (
	SpecMax    = 1 << 20  // a lock spec, a spec's script file, an external deployment file
	SuiteMax   = 1 << 20  // a suite file
	ResultsMax = 16 << 20 // a run's results.json, a suite.json
)

// Open opens path for reading if, and only if, it is a regular file (a symlink to one is followed). The
// open itself never blocks: O_NONBLOCK keeps a FIFO from waiting for a writer before it is refused.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return regular(path, f, err)
}

// OpenIn is Open for a name that must stay inside root (a store being served, a shard being merged, a
// spec's directory): neither ".." nor a symlink leads it out of root.
func OpenIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return regular(name, f, err)
}

// regular keeps an opened file only if it is a regular one; name is the file as its caller named it.
func regular(name string, f *os.File, err error) (*os.File, fs.FileInfo, error) {
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a regular file (%s)", name, Kind(fi.Mode()))
	}
	return f, fi, nil
}

// Read returns the whole of the regular file at path, refusing one over max bytes without reading it.
func Read(path string, max int64) ([]byte, error) {
	f, fi, err := Open(path)
	return readAll(path, max, f, fi, err)
}

// ReadIn is Read for a name that must stay inside root (see OpenIn).
func ReadIn(root *os.Root, name string, max int64) ([]byte, error) {
	f, fi, err := OpenIn(root, name)
	return readAll(name, max, f, fi, err)
}

// readAll reads an opened file whole, up to max bytes; name is the file as its caller named it.
func readAll(name string, max int64, f *os.File, fi fs.FileInfo, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %s a file of this kind may have", name, fi.Size(), Size(max))
	}
	// The file may grow between the stat and the read: read one byte past the bound to see it.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: more than the %s a file of this kind may have", name, Size(max))
	}
	return b, err
}

// ErrName is wrapped by every error Name returns.
var ErrName = errors.New("not a name")

// Name checks that s can stand as one path element under a directory lockcheck owns (a worker
// version, a suite name, a run id): not empty, at most 128 bytes, no separator, not "." or "..", no
// leading dot or dash, and only letters, digits and ._+-@:~ (so no control or shell characters).
func Name(what, s string) error {
	bad := func(why string) error { return fmt.Errorf("%s %q: %w: %s", what, s, ErrName, why) }
	switch {
	case s == "":
		return bad("empty")
	case len(s) > 128:
		return bad("longer than 128 bytes")
	case s == "." || s == ".." || strings.HasPrefix(s, "."):
		return bad("starts with a dot")
	case strings.HasPrefix(s, "-"):
		return bad("starts with a dash")
	}
	for _, r := range s {
		if r == '/' || r == '\\' {
			return bad("has a path separator")
		}
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._+-@:~", r)) {
			return bad(fmt.Sprintf("has the character %q (letters, digits and ._+-@:~ only)", r))
		}
	}
	return nil
}

// Size prints a byte bound the way the error lines say it.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Dir checks that path is a directory (a symlink to one is followed), and says what it is otherwise.
func Dir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory (%s)", path, Kind(fi.Mode()))
	}
	return nil
}

// Kind names what a file of mode m is, for a message: "a FIFO", "a character device".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}

// Lock takes an exclusive lock on the file at path (created with perm if missing, never through a link),
// waiting for another process that holds it; unlock releases it. Builds into a shared cache take it so
// that two runs build one copy.
func Lock(path string, perm os.FileMode) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
