package docker

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that exited and was not reaped (a zombie) owns nothing: clean must not keep its containers.
// Before, its /proc entry and start time made it look alive for as long as nobody reaped it.
func TestZombieOwnerIsDead(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	host, _ := os.Hostname()
	labels := map[string]string{PIDLabel: strconv.Itoa(pid), HostLabel: host}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && zombie(string(b)) {
			s := string(b)
			labels[StartLabel] = strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[19] // its real start
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never became a zombie")
		}
	}
	if alive, who := liveOwner(labels); alive {
		t.Fatalf("a zombie counted as a live owner: %s", who)
	}
	if procStart(os.Getpid()) == "" {
		t.Fatal("this process has no start time")
	}
}

func zombie(stat string) bool {
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return len(stat) > i+2 && stat[i+2] == 'Z'
		}
	}
	return false
}
