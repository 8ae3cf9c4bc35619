package nemesis

import (
	"fmt"
	"strings"
)

func init() {
	// delay-pexpire holds PEXPIRE commands (and what each connection sends after one) at the clients'
	// proxies for the fault's duration and delivers them in order at the heal: the gap between a
	// MultiLock's member grants and its final lease (Redisson's expireAsync, H6 in docs/findings.md), which
	// a pause of a whole client cannot aim at. Every client's, as hold-replies does, because the one whose
	// final lease must be late is whoever wins the lock next, which no plan knows; fired by a release, every
	// client's but the releaser's, so that one may take the lock again at once, unheld, after the members
	// of a held winner ran out.
	Register("delay-pexpire", delayCommand("PEXPIRE"))
	RegisterTriggered("delay-pexpire", "release", notCaller)
}

// delayCommand is a link fault on every client that holds the commands running command; another command
// to delay is one more Register line.
func delayCommand(command string) Fault {
	return linkFault{pick: everyClientLinks, apply: func(l Link, _ Params) error {
		h, ok := l.(interface{ HoldCommand(string) error })
		if !ok {
			return fmt.Errorf("this link cannot hold commands (a toxiproxy server's links cannot)")
		}
		return h.HoldCommand(command)
	}, what: func(p Params) string {
		return command + " held until the heal (" + p.Duration.String() + "), then delivered in order; other commands pass"
	}}
}

// notCaller drops the event's client's links from the planned ones.
func notCaller(ev Event, planned []string) []string {
	var out []string
	for _, t := range planned {
		if c, _, _ := strings.Cut(t, "->"); c != ev.Client {
			out = append(out, t)
		}
	}
	return out
}
