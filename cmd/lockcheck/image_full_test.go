package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const fullImage = "lockcheck/lockcheck:full"

// The full image (issue 25) runs real libraries with nothing but its own local Redis: it is built (or
// reused when its inputs have not changed) by docker/full/build.sh, then `run --client redisson` and
// `run --client redis-py` inside it, on host networking, are valid, and while they run no socket of the
// container's processes has a peer other than loopback. Minutes (a cold build is Debian's packages and
// the registries): LOCKCHECK_IMAGE_FULL=1 only.
func TestImageFullRunsRealClients(t *testing.T) {
	if os.Getenv("LOCKCHECK_IMAGE_FULL") == "" {
		t.Skip("builds lockcheck/lockcheck:full and runs two real clients in it (minutes): LOCKCHECK_IMAGE_FULL=1")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Fatal("no Docker engine answers (make docker-engine starts one)")
	}
	work := filepath.Join(t.TempDir(), "work")
	// Registered after TempDir's removal, so it runs first: a build killed half-way could leave /proc
	// mounted in its tree, which the removal must not walk into.
	t.Cleanup(func() { unmountUnder(t, work) })
	build := exec.Command(filepath.Join("..", "..", "docker", "full", "build.sh"))
	build.Env = append(os.Environ(), "LOCKCHECK_FULL_WORK="+work, "LOCKCHECK_FULL_IMAGE="+fullImage)
	begin := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker/full/build.sh: %v\n%s", err, out)
	} else {
		t.Logf("build.sh in %s: %s", time.Since(begin).Round(time.Second), strings.TrimSpace(string(out)))
	}
	for _, client := range []string{"redisson", "redis-py"} {
		t.Run(client, func(t *testing.T) {
			results := t.TempDir()
			name := fmt.Sprintf("lockcheck-full-test-%d-%s", os.Getpid(), client)
			t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
			out, err := exec.Command("docker", "run", "-d", "--name", name, "--network", "host",
				"-v", results+":/results", fullImage,
				"run", "--client", client, "--time", "20s", "--results", "/results").CombinedOutput()
			if err != nil {
				t.Fatalf("docker run: %v\n%s", err, out)
			}
			pidOut, err := exec.Command("docker", "inspect", "--format", "{{.State.Pid}}", name).Output()
			pid, _ := strconv.Atoi(strings.TrimSpace(string(pidOut)))
			if err != nil || pid <= 0 { // it ended at once
				logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
				t.Fatalf("docker inspect %s: pid %q, %v\n%s", name, pidOut, err, logs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			watched := make(chan sockets, 1)
			watchCtx, stopWatch := context.WithCancel(ctx)
			go func() { watched <- watchSockets(watchCtx, pid) }()
			begin := time.Now()
			waitOut, err := exec.CommandContext(ctx, "docker", "wait", name).Output()
			stopWatch()
			seen := <-watched
			took := time.Since(begin).Round(time.Second)
			logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
			if err != nil {
				t.Fatalf("docker wait: %v\n%s", err, logs)
			}
			code := strings.TrimSpace(string(waitOut))
			t.Logf("%s: exit %s in %s; %d loopback sockets seen", client, code, took, seen.loopback)
			if code != strconv.Itoa(exitValid) {
				t.Errorf("exit %s, want %d (valid)\n%s", code, exitValid, logs)
			}
			if dir, _ := filepath.EvalSymlinks(filepath.Join(results, "latest")); dir == "" {
				t.Errorf("no run directory in %s", results)
			} else if r := readResults(t, dir); r.Valid != true {
				t.Errorf("results.json: valid %v, want true", r.Valid)
			}
			if len(seen.other) > 0 {
				t.Errorf("the container's processes had non-loopback sockets: %v", seen.other)
			}
			if seen.loopback == 0 { // else the watch saw nothing, and its silence proves nothing
				t.Errorf("no socket of the container's processes was seen: the watch did not work")
			}
		})
	}
}

// sockets is what watchSockets saw: how many distinct loopback connections, and any other peer.
type sockets struct {
	loopback int
	other    []string
}

// watchSockets looks, every 20 ms until ctx ends, at the inet sockets held by pid and its descendants
// (with host networking their table is the host's, so each socket is matched by inode) and sorts them
// by peer: loopback, unconnected (a listener), or anything else.
func watchSockets(ctx context.Context, pid int) sockets {
	var s sockets
	loop, other := map[string]bool{}, map[string]bool{}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		inodes := map[string]bool{}
		for _, p := range descendants(pid) {
			fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p))
			for _, fd := range fds {
				l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p, fd.Name()))
				if err == nil && strings.HasPrefix(l, "socket:[") {
					inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
				}
			}
		}
		for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
			f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
			if err != nil {
				continue // the container is gone
			}
			sc := bufio.NewScanner(f)
			sc.Scan() // the header
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) < 10 || !inodes[fields[9]] {
					continue
				}
				local, remote := procAddr(fields[1]), procAddr(fields[2])
				key := table + " " + fields[1] + " " + fields[2]
				switch {
				case remote == nil || remote.IsUnspecified():
					if local == nil || !(local.IsLoopback() || local.IsUnspecified()) {
						other[key] = true
					}
				case remote.IsLoopback():
					loop[key] = true
				default:
					other[fmt.Sprintf("%s %v -> %v", table, local, remote)] = true
				}
			}
			f.Close()
		}
		select {
		case <-ctx.Done():
			s.loopback = len(loop)
			for k := range other {
				s.other = append(s.other, k)
			}
			return s
		case <-tick.C:
		}
	}
}

// procAddr decodes /proc/net/tcp's "0100007F:1F90" (IPv4) or 32 hex digits (IPv6): 32-bit words in host
// (little-endian) order.
func procAddr(s string) net.IP {
	h, _, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b)
}

// descendants lists pid and every process below it, from /proc/*/stat's parent field.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// unmountUnder unmounts whatever is still mounted below dir (deepest first).
func unmountUnder(t *testing.T, dir string) {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			if out, err := exec.Command("umount", "-l", f[1]).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v %s", f[1], err, out)
			}
		}
	}
}

// The full image test's socket watch tells loopback peers from others: a TCP connection on loopback is
// counted, and a UDP socket connected to a documentation address (TEST-NET-1; a UDP connect only sets the
// peer, no packet is sent) is named. Runs in make test: it needs no image.
func TestWatchSocketsSortsPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 9})
	if err != nil {
		t.Skipf("no route to set a UDP peer with: %v", err)
	}
	defer u.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one look: the watch looks before it checks ctx
	s := watchSockets(ctx, os.Getpid())
	if s.loopback == 0 {
		t.Errorf("the loopback connection was not seen: %+v", s)
	}
	if !strings.Contains(strings.Join(s.other, "\n"), "192.0.2.1") {
		t.Errorf("other peers %v, want the UDP socket to 192.0.2.1 among them", s.other)
	}
}
