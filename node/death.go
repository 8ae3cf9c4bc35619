package node

// Exiter is a Proc that can say why its server ended ("signal: killed", "container removed").
type Exiter interface {
	ExitReason() string
}

// setProc makes proc the node's running server and watches for its end.
func (n *Node) setProc(proc Proc) {
	n.mu.Lock()
	n.proc, n.exited, n.paused = proc, proc.Exited(), false
	n.expected, n.reported = false, false
	n.mu.Unlock()
	go func() {
		<-proc.Exited()
		n.tellDeath(proc)
	}()
}

// expect marks the coming exit of the server as lockcheck's own doing (a kill fault, the teardown).
func (n *Node) expect(on bool) {
	n.mu.Lock()
	n.expected = on
	n.mu.Unlock()
}

// OnUnplannedExit has f called, once per death and from its own goroutine, whenever the node's server ends
// without lockcheck having killed or stopped it: a kill -9 by hand, the OOM killer, a container removed
// under the run. A death before f was set is told at once. nil stops the reports.
func (n *Node) OnUnplannedExit(f func(detail string)) {
	n.mu.Lock()
	n.onDeath = f
	proc := n.proc
	n.mu.Unlock()
	if proc == nil || f == nil {
		return
	}
	select {
	case <-proc.Exited():
		n.tellDeath(proc)
	default:
	}
}

func (n *Node) tellDeath(proc Proc) {
	n.mu.Lock()
	f := n.onDeath
	if n.proc != proc || n.expected || n.reported || f == nil {
		n.mu.Unlock()
		return
	}
	n.reported = true
	n.mu.Unlock()
	detail := "exited"
	if e, ok := proc.(Exiter); ok {
		detail = e.ExitReason()
	}
	f(detail)
}
