package worker

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A worker's process group is not all of it: a descendant that calls setsid (or setpgid) leaves the group,
// and, once its parent is gone, would be reparented to pid 1 and outlive the run. So the process that
// starts workers is a child subreaper: such orphans are reparented to it instead, where a sweep finds them
// by the tag every worker's environment carries (descendants inherit it) and by the processes already seen
// in the worker's tree, kills them and reaps them. The nodes lockcheck starts carry no tag and are never in
// a worker's tree.

// treeEnv is the environment variable that tags a worker's processes.
const treeEnv = "LOCKCHECK_WORKER_TREE"

// sweepRounds bounds the kill-and-rescan rounds of a sweep (a tree still forking is killed a round later).
const sweepRounds = 8

var (
	subreaperOnce sync.Once
	treeSeq       atomic.Int64
	rootsMu       sync.Mutex
	roots         = map[int]bool{} // the live workers' own pids: their environments hold their own tags
)

// tree is one worker's processes.
type tree struct {
	tag     string
	mu      sync.Mutex
	seen    map[int]uint64 // pid → start time of every process found in the tree (the worker's first)
	reaping map[int]bool   // orphans reparented to this process, reaped once each
	worker  int            // the worker's pid: reaped by its exec.Cmd, never here
	gone    bool           // the worker has been reaped: its pid may name another process
}

func newTree() *tree {
	return &tree{tag: strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(treeSeq.Add(1), 10),
		seen: map[int]uint64{}, reaping: map[int]bool{}}
}

// started records the worker's pid (its tree's root).
func (t *tree) started(pid int) {
	t.mu.Lock()
	t.worker = pid
	if p, ok := readProc(pid); ok {
		t.seen[pid] = p.start
	}
	t.mu.Unlock()
	rootsMu.Lock()
	roots[pid] = true
	rootsMu.Unlock()
}

// reap reaps the worker, which has exited, through its exec.Cmd: its pid, which is also its process
// group's id, may name another process from then on, so no signal is sent to it after this.
func (t *tree) reap(cmd *exec.Cmd) error {
	t.mu.Lock()
	err := cmd.Wait()
	delete(t.seen, t.worker)
	t.gone = true
	t.mu.Unlock()
	rootsMu.Lock()
	delete(roots, t.worker)
	rootsMu.Unlock()
	return err
}

// signal sends sig to the worker's process group, unless the worker has been reaped.
func (t *tree) signal(sig syscall.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone {
		return syscall.ESRCH
	}
	return syscall.Kill(-t.worker, sig)
}

// stopWait bounds how long a freeze waits for the worker's threads to stop.
const stopWait = 2 * time.Second

// waitStopped waits until every thread of every process of the worker's group has stopped, or stopWait:
// kill returns once SIGSTOP is queued, and a thread running on another CPU stops only when it next enters
// the kernel. A frozen worker was seen answering a request written after the kill (load 18 on 2 cores),
// so a client-pause would have begun later than recorded. Off Linux (no /proc) it returns at once.
func (t *tree) waitStopped() {
	deadline := time.Now().Add(stopWait)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		if t.gone {
			t.mu.Unlock()
			return
		}
		live := t.members(scanProcs(), os.Getpid())
		t.mu.Unlock()
		running := false
		for _, p := range live {
			running = running || taskRunning(p.pid, t.worker)
		}
		if !running {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// taskRunning reports whether a thread of pid, a member of process group pgid, is not (yet) stopped.
func taskRunning(pid, pgid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return false // gone, or no /proc
	}
	for _, task := range tasks {
		f, ok := statFields("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/stat")
		if !ok {
			continue // the thread exited
		}
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			return false // it left the group: SIGSTOP did not reach it
		}
		switch f[0] {
		case "T", "t", "Z", "X":
		default:
			return true
		}
	}
	return false
}

// kill SIGKILLs the whole tree: the sweep first, which sees the worker's descendants while they are still
// its children, then its process group.
func (t *tree) kill() {
	t.sweep()
	_ = t.signal(syscall.SIGKILL)
}

// sweep SIGKILLs every live process of the tree, the worker included while it is not reaped, until none
// is left (or sweepRounds), and reaps those that were reparented here.
func (t *tree) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	self := os.Getpid()
	for range sweepRounds {
		all := scanProcs()
		live := t.members(all, self)
		if len(live) == 0 {
			break
		}
		for _, p := range live {
			if !p.zombie {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			if p.ppid == self && p.pid != t.worker && !t.reaping[p.pid] {
				t.reaping[p.pid] = true
				go func() { // dies at once (SIGKILL), unless in an uninterruptible sleep
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(p.pid, &ws, 0, nil)
				}()
			}
		}
	}
}

// orphanWait bounds how long KillDescendants waits for what it killed to be gone.
const orphanWait = 5 * time.Second

// KillDescendants SIGKILLs every process below this one, and waits until each is gone or a zombie
// (orphanWait at most): the nodes, the workers and whatever the workers started, also descendants that left
// their group and session, which, this process being their subreaper, are below it too. It is for when
// nothing else will stop them: lockcheck's supervisor was killed (kill -9).
func KillDescendants() {
	becomeSubreaper() // also where no worker ran (a suite's runs): what loses its parent here stays below
	self := os.Getpid()
	for deadline := time.Now().Add(orphanWait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		all := scanProcs()
		children := map[int][]int{}
		for pid, p := range all {
			children[p.ppid] = append(children[p.ppid], pid)
		}
		live := 0
		// A process forked after the scan is a child of one killed here, or reparented here: the next scan
		// finds it. A killed process is not a zombie at once: it is killed again, harmlessly.
		for queue := children[self]; len(queue) > 0; queue = queue[1:] {
			if p := all[queue[0]]; !p.zombie {
				live++
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			queue = append(queue, children[queue[0]]...)
		}
		if live == 0 {
			return
		}
	}
}

// members lists the tree's processes in all that are to be killed or reaped: those seen before (the same
// pid and start time), children of this process that carry the tag, and every descendant of those; not
// zombies, except orphans here still to be reaped. It adds them to seen.
func (t *tree) members(all map[int]proc, self int) []proc {
	rootsMu.Lock()
	workers := maps.Clone(roots)
	rootsMu.Unlock()
	children := map[int][]int{}
	var queue []int
	for pid, p := range all {
		children[p.ppid] = append(children[p.ppid], pid)
		if start, ok := t.seen[pid]; ok && start == p.start || pid == t.worker && !t.gone {
			queue = append(queue, pid)
		} else if p.ppid == self && !workers[pid] && tagged(pid, t.tag) {
			queue = append(queue, pid)
		}
	}
	in := map[int]bool{}
	var live []proc
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if in[pid] || pid == self {
			continue
		}
		in[pid] = true
		p := all[pid]
		t.seen[pid] = p.start
		if !p.zombie {
			live = append(live, p)
		} else if p.ppid == self && pid != t.worker && !t.reaping[pid] {
			live = append(live, p) // a zombie orphan: killing it is harmless, and it gets reaped
		}
		queue = append(queue, children[pid]...)
	}
	return live
}

// tagged reports whether process pid's environment holds the tree's tag.
func tagged(pid int, tag string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(treeEnv + "=" + tag)
	for _, kv := range bytes.Split(b, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// proc is one process as /proc/PID/stat shows it.
type proc struct {
	pid, ppid int
	start     uint64 // in clock ticks since boot: with pid, names one process
	zombie    bool
}

// scanProcs reads every process's parent and start time.
func scanProcs() map[int]proc {
	out := map[int]proc{}
	d, err := os.Open("/proc")
	if err != nil {
		return out
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// readProc parses /proc/PID/stat: "pid (comm) state ppid ... starttime (field 22) ...".
func readProc(pid int) (proc, bool) {
	f, ok := statFields("/proc/" + strconv.Itoa(pid) + "/stat")
	if !ok {
		return proc{}, false
	}
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, start: start, zombie: f[0] == "Z" || f[0] == "X"}, true
}

// statFields reads a stat file of /proc (a process's or a thread's) and returns its fields after the
// command name, which may hold spaces and parentheses: state, ppid, pgrp, and so on.
func statFields(path string) ([]string, bool) {
	// Plain system calls into a stack buffer: a sweep reads every process's stat, at each worker's close.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	var buf [2048]byte
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return nil, false
	}
	return strings.Fields(string(b[i+2:])), true
}
