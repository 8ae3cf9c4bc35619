package nemesis

import (
	"fmt"
	"math/rand/v2"
)

func init() {
	// hold-replies is the pause during acquisition (S2): every client's commands reach the nodes and apply,
	// their replies wait at the proxies until the heal, as in a paused client's kernel buffer. All clients,
	// because whoever wins the free lock must be one whose grant waits: fired by a release (the lock just
	// became free), the releaser's next tryLock or a queued waiter's, whichever comes first, takes it and
	// reads its grant after the lease. One client's replies alone mostly held an attempt that lost (waiters
	// hear of a release before the releaser tries again) and missed.
	Register("hold-replies", linkFault{pick: everyClientLinks, apply: func(l Link, _ Params) error {
		h, ok := l.(interface{ HoldReplies() error })
		if !ok {
			return fmt.Errorf("this link cannot hold replies (a toxiproxy server's links cannot)")
		}
		return h.HoldReplies()
	}, what: func(p Params) string {
		return "replies held until the heal: commands apply, callers hear them " + p.Duration.String() + " late"
	}})
	RegisterTriggered("hold-replies", "release", func(_ Event, planned []string) []string { return planned })
}

// everyClientLinks: every client's links to every node.
func everyClientLinks(_ *rand.Rand, env *Env) []string {
	return clientLinks(env.Clients, linkNodes(env))
}
