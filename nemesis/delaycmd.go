package nemesis

import "fmt"

func init() {
	// delay-pexpire holds one client's PEXPIRE commands (and what each connection sends after one) at its
	// proxies for the fault's duration and delivers them in order at the heal: the gap between a
	// MultiLock's member grants and its final lease (Redisson's expireAsync, H6 in docs/findings.md),
	// which a pause of the whole client cannot aim at.
	Register("delay-pexpire", delayCommand("PEXPIRE"))
}

// delayCommand is a link fault on one random client that holds the commands running command; another
// command to delay is one more Register line.
func delayCommand(command string) Fault {
	return linkFault{pick: oneClientLinks, apply: func(l Link, _ Params) error {
		h, ok := l.(interface{ HoldCommand(string) error })
		if !ok {
			return fmt.Errorf("this link cannot hold commands (a toxiproxy server's links cannot)")
		}
		return h.HoldCommand(command)
	}, what: func(p Params) string {
		return command + " held until the heal (" + p.Duration.String() + "), then delivered in order; other commands pass"
	}}
}
