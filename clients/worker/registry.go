package worker

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/internal/textfile"
	"github.com/lockcheck/lockcheck/kinds"
)

// Spec is one registered worker: a folder under workers/ whose build.sh VERSION OUTDIR leaves OUTDIR/run.
type Spec struct {
	Name     string
	About    string
	Folder   string // under workers/; builds are cached per folder and version
	Language string
	// DefaultVersion is the version built when none is asked for; "" reads Folder/DEFAULT_VERSION.
	DefaultVersion string
	Versions       []string // when set, the only versions there are
	Args           []string // passed to OUTDIR/run
	// ClientClock says whether the client-clock fault can shift the worker's clock (its runtime reads
	// time through libc; a Go binary does not).
	ClientClock bool
	// Lock is the lock kind a run drives when --lock is not given.
	Lock string
	// Emulated, when set, is the library version lockcheck's Go clients emulate: the worker can run
	// beside them on the same locks (--client NAME,go, a differential run).
	Emulated string
	// Broken is set on negative controls: what is wrong; Flags are the fault-free run that shows it.
	Broken string
	Flags  []string
	// Releases is the registry's own list of the library's versions (lockcheck bisect walks it).
	Releases Releases
	// OneLease: the library takes one lease for every lock it hands out, not one per acquire (an acquire
	// with another lease is refused): explore's steps carry none.
	OneLease bool
}

var specs = map[string]Spec{}

// Register adds a worker, and lists it among the client providers that `lockcheck locks` shows.
func Register(s Spec) {
	specs[s.Name] = s
	about := s.About + " (" + s.Language
	if !s.ClientClock {
		about += "; no client-clock"
	}
	if s.Emulated != "" {
		about += "; mixes with go: --client " + s.Name + ",go"
	}
	kinds.RegisterProvider(kinds.Provider{Name: s.Name, About: about + ")", Locks: []string{s.Lock}, Broken: s.Broken})
}

// Names lists the registered workers.
func Names() []string {
	var out []string
	for n := range specs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the registered worker called name.
func Get(name string) (Spec, bool) {
	s, ok := specs[name]
	return s, ok
}

// UnknownError is a worker name or version that does not exist (bad input).
type UnknownError struct{ msg string }

func (e UnknownError) Error() string { return e.msg }

// Lookup finds NAME[@VERSION]: the spec and the version (the default when none is given).
func Lookup(arg string) (Spec, string, error) {
	name, version, _ := strings.Cut(arg, "@")
	s, ok := specs[name]
	if !ok {
		return Spec{}, "", UnknownError{fmt.Sprintf("--client %s: no such worker (have: %s; or run your own with --client-cmd)",
			name, strings.Join(Names(), ", "))}
	}
	// The worker is built into, or run from, the cache: one lockcheck will not use is found before anything starts.
	if _, err := Cache(); err != nil {
		return Spec{}, "", err
	}
	if version == "" {
		version = s.DefaultVersion
	}
	if version == "" {
		dir, err := Folder(s.Folder)
		if err == nil {
			b, rerr := os.ReadFile(filepath.Join(dir, "DEFAULT_VERSION"))
			err = rerr
			version = strings.TrimSpace(string(b))
		}
		if err != nil || version == "" {
			return Spec{}, "", UnknownError{fmt.Sprintf("--client %s: no version given and no default (%v): use %s@VERSION", name, err, name)}
		}
	}
	// The version names the build's folder in the cache: a path would build, and clear, a folder outside it.
	if err := safefile.Name("--client "+name+": version", version); err != nil {
		return Spec{}, "", UnknownError{err.Error()}
	}
	if len(s.Versions) > 0 && !slices.Contains(s.Versions, version) {
		return Spec{}, "", UnknownError{fmt.Sprintf("--client %s@%s: no such version (have: %s)", name, version, strings.Join(s.Versions, ", "))}
	}
	return s, version, nil
}

// Folder finds workers/<folder>: under $LOCKCHECK_WORKERS, in the source tree lockcheck was built from,
// beside the executable (bin/../workers), or else in the sources carried inside the binary (written out
// under the cache on first use), so that a binary installed or copied alone builds every shipped worker.
// The working directory is not searched: a repository lockcheck runs in does not choose its workers.
func Folder(folder string) (string, error) {
	var roots []string
	if r := os.Getenv("LOCKCHECK_WORKERS"); r != "" {
		roots = append(roots, r)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		roots = append(roots, filepath.Join(filepath.Dir(file), "..", "..", "workers"))
	}
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Join(filepath.Dir(exe), "..", "workers"))
	}
	for _, r := range roots {
		d := filepath.Join(r, folder)
		if _, err := os.Stat(filepath.Join(d, "build.sh")); err == nil {
			return filepath.Abs(d)
		}
	}
	root, err := embeddedRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(root, "workers", folder)
	if _, err := os.Stat(filepath.Join(d, "build.sh")); err != nil {
		return "", fmt.Errorf("no worker folder %s in this lockcheck (set LOCKCHECK_WORKERS to a folder of workers)", folder)
	}
	return d, nil
}

// sourceStamp is a digest of the worker's source folder: a build made from other sources (the worker was
// changed since, e.g. a new library option) is stale although its library version is the same. Folders
// that package managers or builds fill are left out.
func sourceStamp(src string) string {
	h := sha256.New()
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		switch d.Name() {
		case "node_modules", "target", ".venv", "venv", "__pycache__", ".git":
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// inside checks that dir is below root, lexically (no ".." climbs out), before anything is removed there.
func inside(root, dir string) error {
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("worker build folder %s is not inside its cache folder %s", dir, root)
	}
	return nil
}

// ExitNoSuchVersion is build.sh's exit status for a version its registry does not have (or that is not a
// version of its library at all): bad input, not a failed build.
const ExitNoSuchVersion = 4

// Build returns the command that starts the worker, building it on first use into
// CacheDir()/workers/<folder>/<version>/ under a lock file, so that parallel runs build once. It says one
// line on say while it builds. A failed build is not cached (the next use builds again) and names its log;
// a version the registry does not have is an UnknownError.
func Build(ctx context.Context, s Spec, version string, say io.Writer) ([]string, error) {
	src, err := Folder(s.Folder)
	if err != nil {
		return nil, err
	}
	// Every caller should have come through Lookup, but the folder is removed below: a version that is not a
	// name, or a folder that is not inside its cache folder, is refused here too.
	if err := safefile.Name("--client "+s.Name+": version", version); err != nil {
		return nil, UnknownError{err.Error()}
	}
	cache, err := Cache()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cache, "workers", s.Folder)
	out := filepath.Join(base, version)
	if err := inside(base, out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	argv := append([]string{filepath.Join(out, "run")}, s.Args...)
	// The cache is this user's alone (Cache), so what is in it was put there by lockcheck; still, nothing
	// in it is followed through a link.
	unlock, err := safefile.Lock(out+".lock", 0o644)
	if err != nil {
		return nil, err
	}
	defer unlock()
	stamp := sourceStamp(src)
	if b, err := readNoLink(filepath.Join(out, ".built")); err == nil && string(b) == stamp && isRegular(out, argv[0]) {
		return argv, nil
	}
	_ = os.RemoveAll(out) // a build that died half-way
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(say, "lockcheck: building worker %s@%s into %s (first use; cached after)\n", s.Name, version, out)
	logPath := out + ".build.log"
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(src, "build.sh"), version, out)
	cmd.Dir, cmd.Stdout, cmd.Stderr = src, logf, logf
	err = cmd.Run()
	logf.Close()
	if err == nil {
		if _, serr := os.Stat(argv[0]); serr != nil {
			err = fmt.Errorf("it left no %s", argv[0])
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == ExitNoSuchVersion {
		// A typo is not worth a cache entry: only the lock file is kept (another run may wait on it).
		why := strings.TrimPrefix(textfile.LastLine(logPath), "build.sh: ")
		_ = os.RemoveAll(out)
		_ = os.Remove(logPath)
		return nil, UnknownError{fmt.Sprintf("--client %s@%s: the registry has no %s %s (%s)", s.Name, version, s.Name, version, why)}
	}
	if why, ok := unreachable(s, logPath); err != nil && ok { // no network: not the build's fault, and it says so
		return nil, fmt.Errorf("building worker %s@%s: %s; full log in %s", s.Name, version, why, logPath)
	}
	if err != nil { // not marked built: the next use builds afresh; the folder keeps the build's own logs
		return nil, fmt.Errorf("building worker %s@%s failed (%v): %s; full log in %s", s.Name, version, err,
			textfile.LastLine(logPath), logPath)
	}
	return argv, os.WriteFile(filepath.Join(out, ".built"), []byte(stamp), 0o644)
}

// Shiftable reports whether the client-clock fault can shift the clock of the program argv starts: not a
// Go binary (its runtime reads the clock through the vDSO itself) nor a statically linked one (nothing to
// preload into). A script or another dynamic executable is taken to read time through libc.
func Shiftable(argv []string) (bool, string) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return true, "" // found out when it starts
	}
	f, err := elf.Open(path)
	if err != nil {
		return true, "" // not ELF: a script, whose interpreter is
	}
	defer f.Close()
	if f.Section(".go.buildinfo") != nil || f.Section(".note.go.buildid") != nil {
		return false, path + " is a Go binary, which reads the clock without libc"
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true, ""
		}
	}
	return false, path + " is statically linked"
}

// renewals are the silent-renewal controls' run: holds longer than the lease, which the application extends
// every third of it, and a client frozen right after its grant for longer than the lease, so that another
// owner is granted the lock before the frozen holder's next extend.
var renewals = []string{"--nemesis", "client-pause", "--nemesis-trigger", "true", "--nemesis-interval", "1s",
	"--nemesis-duration", "1s", "--lease", "300ms", "--hold", "200ms-500ms"}

func init() {
	flags := []string{"--lease", "300ms", "--hold", "400ms-1s"}
	Register(Spec{Name: "naive", Folder: "naive", Language: "go", Versions: []string{"1"}, DefaultVersion: "1",
		Lock: "naive", Flags: flags, About: "reference worker: SET NX PX, unconditional DEL (negative control of the protocol)",
		Broken: "lets a holder that outlives its lease delete the next holder's lock"})
	Register(Spec{Name: "naive-safe", Folder: "naive", Language: "go", Versions: []string{"1"}, DefaultVersion: "1",
		Args: []string{"--safe"}, Lock: "naive", // with a lease longer than the holds (the defaults), it is safe
		About: "reference worker: SET NX PX, compare-and-delete release (the control's safe twin)"})
	// The silent-renewal control and its honest twin show only where a lock is lost (renewals).
	Register(Spec{Name: "naive-shared-token", Folder: "naive", Language: "go", Versions: []string{"1"}, DefaultVersion: "1",
		Args: []string{"--shared-token"}, Lock: "naive", About: "reference worker: one token per client, shared by its threads",
		Broken: "takes the lock again for any thread of the client holding it, so two threads of one client hold it at once"})
	Register(Spec{Name: "naive-silent-renew", Folder: "naive", Language: "go", Versions: []string{"1"}, DefaultVersion: "1",
		Args: []string{"--renew", "silent"}, Lock: "mutex", Flags: renewals,
		About:  "reference worker: SET NX PX, extend and release answer ok on a lock it lost (negative control of told-of-loss)",
		Broken: "answers its holder's extend and release ok after another owner was granted the lock, so the holder is never told"})
	Register(Spec{Name: "naive-honest-renew", Folder: "naive", Language: "go", Versions: []string{"1"}, DefaultVersion: "1",
		Args: []string{"--renew", "honest"}, Lock: "mutex", Flags: renewals,
		About: "reference worker: SET NX PX, compare-and-extend and compare-and-delete that say when the lock is lost (the silent-renewal control's twin)"})
	Register(Spec{Name: "lying-permits", Folder: "lying-permits", Language: "go", Versions: []string{"1"}, DefaultVersion: "1", Lock: "expirable-semaphore", Flags: []string{"--lease", "300ms", "--hold", "400ms-1s"}, About: "negative control of API-level judging: a permit-expirable semaphore whose release_permit says released for a lapsed permit", Broken: "answers released=true to release_permit for a permit whose lease ran out"})
	Register(Spec{Name: "redisson", Folder: "redisson", Language: "java", ClientClock: true, Lock: "reentrant",
		Emulated: "Redisson 4.7", Releases: MavenCentral("org.redisson", "redisson"),
		About: "Redisson (Java): the real library, built with Maven per version"})
	Register(Spec{Name: "spring-integration", Folder: "spring-integration", Language: "java", ClientClock: true, Lock: "mutex", OneLease: true,
		Releases: MavenCentral("org.springframework.integration", "spring-integration-redis"),
		About:    "Spring Integration's RedisLockRegistry (Java): obtain(key).tryLock(wait)/unlock(), renewLock, SPIN_LOCK or PUB_SUB_LOCK; single and sentinel"})
	Register(Spec{Name: "redis-py", Folder: "redis-py", Language: "python", ClientClock: true, Lock: "mutex", Releases: PyPI("redis"),
		About: "redis-py's Lock (Python): SET NX PX, Lua release and extend; single and sentinel"})
	Register(Spec{Name: "pottery", Folder: "pottery", Language: "python", ClientClock: true, Lock: "mutex", Releases: PyPI("pottery"),
		About: "pottery's Redlock (Python) over the masters; single and redlock"})
	Register(Spec{Name: "python-redis-lock", Folder: "python-redis-lock", Language: "python", ClientClock: true, Lock: "mutex",
		Releases: PyPI("python-redis-lock"), About: "python-redis-lock's Lock (Python): SET NX EX, BLPOP wake-up, Lua release, extend and reset; single and sentinel"})
	Register(Spec{Name: "aioredlock", Folder: "aioredlock", Language: "python", ClientClock: true, Lock: "mutex",
		Releases: PyPI("aioredlock"), About: "aioredlock (Python asyncio): Redlock over the masters, extend, auto-extend; single and redlock"})
	Register(Spec{Name: "redis-semaphore", Folder: "redis-semaphore", Language: "node", ClientClock: true, Lock: "mutex", Releases: NPM("redis-semaphore"),
		About: "npm redis-semaphore (Node.js): Mutex (--lock semaphore, expirable-semaphore: Semaphore, MultiSemaphore), their Redlock twins on redlock, its refresh and onLockLost; single, sentinel, redlock"})
	Register(Spec{Name: "node-redlock", Folder: "node-redlock", Language: "node", ClientClock: true, Lock: "mutex", Releases: NPM("redlock"),
		About: "npm redlock (Node.js), 4.x and 5.x APIs over ioredis; single, redlock, sentinel, cluster"})
	// The Go libraries' workers are static binaries (one per library version): no client-clock.
	Register(Spec{Name: "redsync", Folder: "redsync", Language: "go", Lock: "mutex", Releases: GoProxy("github.com/go-redsync/redsync/v4"),
		About: "go-redsync/redsync v4 (Go): Redlock over the masters, one pool per node; single and redlock"})
	Register(Spec{Name: "redislock", Folder: "redislock", Language: "go", Lock: "mutex", Releases: GoProxy("github.com/bsm/redislock"),
		About: "bsm/redislock (Go): SET NX PX, Lua release and refresh; single and sentinel"})
}
