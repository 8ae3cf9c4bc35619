package docker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Labels naming the process that owns a run's containers and network, so that `lockcheck clean` can tell
// a live run's from what a killed one left (also another user's, on a shared engine).
const (
	PIDLabel   = "lockcheck.pid"
	HostLabel  = "lockcheck.host"
	StartLabel = "lockcheck.start" // the owner's start time (clock ticks since boot): a reused pid is not it
)

// ownerLabels are this process's owner labels.
func ownerLabels() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{PIDLabel: strconv.Itoa(os.Getpid()), HostLabel: host, StartLabel: procStart(os.Getpid())}
}

// procStart is a process's start time from /proc/<pid>/stat (field 22), or "" if there is no such process
// or it has died: a zombie nobody reaped yet (a killed lockcheck's child, where PID 1 does not reap) still
// has its /proc entry and start time, but no longer owns anything.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return ""
	}
	return fields[19]
}

// liveOwner says whether the process labels name is still running, and who it is. A process on another
// host cannot be looked at, so it counts as alive; things without owner labels (made by an older
// lockcheck) count as left behind.
func liveOwner(labels map[string]string) (alive bool, who string) {
	pid, err := strconv.Atoi(labels[PIDLabel])
	if err != nil {
		return false, ""
	}
	host, _ := os.Hostname()
	who = fmt.Sprintf("pid %d on host %s", pid, labels[HostLabel])
	if labels[HostLabel] != host {
		return true, who + " (another host: its run may be alive)"
	}
	start := procStart(pid)
	return start != "" && (labels[StartLabel] == "" || start == labels[StartLabel]), who
}
