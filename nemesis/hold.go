package nemesis

import "fmt"

func init() {
	// hold-replies is the pause during acquisition (S2): one client's commands reach every node and apply,
	// their replies wait at its proxies until the heal, as in a paused client's kernel buffer.
	Register("hold-replies", linkFault{pick: oneClientLinks, apply: func(l Link, _ Params) error {
		h, ok := l.(interface{ HoldReplies() error })
		if !ok {
			return fmt.Errorf("this link cannot hold replies (a toxiproxy server's links cannot)")
		}
		return h.HoldReplies()
	}, what: func(p Params) string {
		return "replies held until the heal: commands apply, callers hear them " + p.Duration.String() + " late"
	}})
	// try: a caller begins a tryLock, before its first command is sent.
	RegisterTrigger(Trigger{Name: "try", About: "a caller begins a tryLock, before its first command",
		Match: func(e Event) bool { return e.F == "tryLock" && e.Type == "invoke" }})
	RegisterTriggered("hold-replies", "try", callerLinks)
}
