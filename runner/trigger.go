package runner

import (
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// observeTriggers feeds the recorder's stream of lock operations to the nemesis when a step of the plan
// is fired by the lock's events (--nemesis-trigger); other runs pay nothing for it.
func observeTriggers(plan nemesis.Plan, env *nemesis.Env, rec *history.Recorder) {
	for _, st := range plan.Steps {
		if st.Trigger == "" {
			continue
		}
		hub := nemesis.NewTriggers()
		env.Triggers = hub
		rec.Observe(func(r history.Record) {
			if r.Client == "" || r.Client == "nemesis" {
				return
			}
			hub.Observe(nemesis.Event{Time: rec.Clock.Now(), Type: string(r.Type), Client: r.Client, Key: r.Key,
				Owner: r.Owner, Node: r.Node, F: r.F, Nested: r.Args["nested"] > 0})
		})
		return
	}
}
