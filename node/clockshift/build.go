// Package clockshift builds and drives the LD_PRELOAD library that shifts a redis-server's wall clock.
package clockshift

import (
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

//go:embed csrc/clockshift.c
var source []byte

var (
	buildMu sync.Mutex
	built   = map[string]bool{}
)

// Library returns the path of the compiled library in dir, compiling it with cc (or $CC) if it is not
// there yet. The Makefile builds the same file into bin/.
func Library(dir string) (string, error) {
	if pre := os.Getenv("LOCKCHECK_CLOCKSHIFT"); pre != "" { // a prebuilt library (the lockcheck image has one)
		return pre, nil
	}
	// LD_PRELOAD resolves a relative path from the server's own working directory: keep it absolute.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	lib := filepath.Join(dir, "libclockshift.so")
	if built[lib] {
		return lib, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "clockshift.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if out, err := exec.Command(cc, "-O2", "-fPIC", "-shared", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the clock library (needs a C compiler: apt-get install -y gcc): %v: %s", err, out)
	}
	built[lib] = true
	return lib, nil
}

// Version identifies the library's source, so an image built with an older one can be told apart.
func Version() string {
	sum := sha256.Sum256(source)
	return hex.EncodeToString(sum[:8])
}

// Env is the environment that makes a process use the library with the offset in file.
func Env(lib, file string) []string {
	return []string{"LD_PRELOAD=" + lib, "LOCKCHECK_CLOCK_FILE=" + file}
}

// Set writes the offset into file (created if missing), with no drift; processes that mapped it see it at
// once.
func Set(file string, d time.Duration) error { return write(file, d, 0, time.Time{}) }

// SetDrift makes the clock run fast (ppm > 0) or slow by ppm parts per million from now on, starting from
// the real time (no offset): a rate, as a clock whose oscillator is off, not a step.
func SetDrift(file string, ppm int64) error { return write(file, 0, ppm, time.Now()) }

func write(file string, d time.Duration, ppm int64, anchor time.Time) error {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b, uint64(int64(d)))
	binary.LittleEndian.PutUint64(b[8:], uint64(ppm))
	if ppm != 0 {
		binary.LittleEndian.PutUint64(b[16:], uint64(anchor.UnixNano()))
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
