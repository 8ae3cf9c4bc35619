package wire_test

import (
	"context"
	"testing"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/network"
	"github.com/redis/go-redis/v9"
)

// BenchmarkLink measures what the tap costs a client: one RLock acquire and release (two EVALSHA round
// trips, as Redisson sends them) through a toxiproxy link straight to the node, and through the link and a
// recording tap. Run: go test -run '^$' -bench Link -benchtime 3000x ./network/wire/
func BenchmarkLink(b *testing.B) {
	for _, tapped := range []bool{false, true} {
		name := "proxy"
		if tapped {
			name = "proxy+wire"
		}
		b.Run(name, func(b *testing.B) {
			r := newBenchRig(b, tapped)
			ctx := context.Background()
			c := redis.NewClient(&redis.Options{Addr: r.addr, Password: r.password, MaxRetries: -1, DisableIdentity: true})
			defer c.Close()
			acq, rel := redis.NewScript(r.scripts.Source("acquire")), redis.NewScript(r.scripts.Source("release"))
			if err := acq.Load(ctx, c).Err(); err != nil {
				b.Fatal(err)
			}
			if err := rel.Load(ctx, c).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := acq.EvalSha(ctx, c, []string{"k"}, 30000, "u:1").Err(); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
				if err := rel.EvalSha(ctx, c, []string{"k", "ch", "latch"}, "0", 30000, "u:1", "publish", 1).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type benchRig struct {
	addr, password string
	scripts        *locks.Scripts
}

func newBenchRig(b *testing.B, tapped bool) benchRig {
	r := newRig(b, "", "c1")
	if !tapped { // a second link straight to the node, as a run without the tap has
		px := network.New()
		b.Cleanup(px.Close)
		l, err := px.Add("plain", r.node.Addr())
		if err != nil {
			b.Fatal(err)
		}
		return benchRig{addr: l.Addr(), password: r.node.Password(), scripts: r.scripts}
	}
	return benchRig{addr: r.links["c1"].Addr(), password: r.node.Password(), scripts: r.scripts}
}
