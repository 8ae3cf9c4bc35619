package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A run that outlives its bound or grows past its memory cap is stopped as lockcheck would be by hand:
// SIGINT (it stops the check and tears down), SIGINT again (it exits at once), then SIGKILL. On a shared
// machine one run's check once grew to 20 GB and ran for 11 minutes past its 1-minute search bound.
const (
	graceInt  = 15 * time.Second
	graceKill = 10 * time.Second
)

// guard watches the process tree under pid until done closes; it returns why it stopped the run, or "".
func guard(pid int, limit time.Duration, maxRSS int64, done <-chan struct{}) string {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	why := ""
	for why == "" {
		select {
		case <-done:
			return ""
		case <-tick.C:
		}
		switch rss := treeRSS(pid); {
		case limit > 0 && time.Now().After(deadline):
			why = "still running after " + limit.String()
		case maxRSS > 0 && rss > maxRSS:
			why = "grew to " + strconv.FormatInt(rss>>20, 10) + " MB"
		}
	}
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, graceInt}, {syscall.SIGINT, graceKill}, {syscall.SIGKILL, 0}} {
		_ = syscall.Kill(pid, step.sig)
		select {
		case <-done:
			return why
		case <-time.After(step.wait):
		}
	}
	return why
}

// treeRSS is the resident memory of pid and all its descendants, in bytes, from /proc.
func treeRSS(root int) int64 {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	parent := map[int]int{}
	rss := map[int]int64{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // from field 3 (state): ppid is f[1], rss (pages) f[21]
		if len(f) < 22 {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/stat"))
		parent[pid], _ = strconv.Atoi(f[1])
		pages, _ := strconv.ParseInt(f[21], 10, 64)
		rss[pid] = pages * int64(os.Getpagesize())
	}
	var total int64
	for pid, r := range rss {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				total += r
				break
			}
		}
	}
	return total
}
