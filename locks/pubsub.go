package locks

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pub/sub as Redisson 4.7 does it. Waiters of a client share its subscriptions, one latch per channel
// (PublishSubscribe, RedissonLockEntry); a subscription counts once Redis confirmed it. On a Redis 7+
// cluster (shardedSubscriptionMode AUTO, which probes PUBSUB SHARDNUMSUB) the lock scripts SPUBLISH and
// waiters SSUBSCRIBE on the master of the channel's slot; elsewhere PUBLISH and SUBSCRIBE.

// publishMode is whether a client publishes sharded: decided once, by the probe, on a cluster only.
type publishMode struct {
	cc      *redis.ClusterClient // nil: not a cluster, never sharded
	mu      sync.Mutex
	known   bool
	sharded bool
}

func newPublishMode(rdb redis.UniversalClient) *publishMode {
	cc, _ := rdb.(*redis.ClusterClient)
	m := &publishMode{cc: cc, known: cc == nil}
	if cc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m.get(ctx) // at connect, as Redisson probes; a probe that gets no answer is asked again at first use
		cancel()
	}
	return m
}

// get probes PUBSUB SHARDNUMSUB once: an answer means sharded pub/sub, a Redis error (before 7.0) classic.
func (m *publishMode) get(ctx context.Context) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known {
		return m.sharded
	}
	err := m.cc.Do(ctx, "pubsub", "shardnumsub").Err()
	var rerr redis.Error
	if err == nil || errors.As(err, &rerr) {
		m.known, m.sharded = true, err == nil
	}
	return m.sharded
}

// publish is the command the lock scripts publish with (their ARGV): "spublish" or "publish".
func (r *Redisson) publish() string {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	if r.pub.get(ctx) {
		return "spublish"
	}
	return "publish"
}

// subscriptions are a client's channels: classic ones share one pub/sub connection; sharded ones have one
// each, to the master of their slot (go-redis follows the slot there when it reconnects).
type subscriptions struct {
	rdb     redis.UniversalClient
	mode    *publishMode
	mu      sync.Mutex
	ps      *redis.PubSub // the classic connection, once used
	entries map[string]*entry
	closed  chan struct{}
}

type entry struct {
	channel string
	refs    int
	kind    wakeKind
	latch   chan struct{} // a counting semaphore: each wake-up adds a permit
	ready   chan struct{} // closed when Redis confirmed the subscription, or it failed (err)
	err     error
	ps      *redis.PubSub // sharded: the entry's own connection
}

// wakeKind says how many waiters a message wakes.
type wakeKind int

const (
	wakeLock      wakeKind = iota // "0" (unlock) wakes one, "1" (read unlock) wakes all
	wakeSemaphore                 // the message is the new permit count: wake that many
	wakeLatch                     // "0" (zero count) wakes all; "1" (new count) wakes none
)

func (e *entry) wakes(payload string) int {
	switch e.kind {
	case wakeSemaphore:
		n, _ := strconv.Atoi(payload)
		return max(min(n, e.refs), 0)
	case wakeLatch:
		if payload == "0" {
			return e.refs
		}
		return 0
	}
	if payload == readUnlockMessage {
		return e.refs
	}
	return 1
}

func newSubscriptions(rdb redis.UniversalClient, mode *publishMode) *subscriptions {
	return &subscriptions{rdb: rdb, mode: mode, entries: map[string]*entry{}, closed: make(chan struct{})}
}

// subscribeKind joins a channel's entry, subscribing on first use, and returns once Redis confirmed the
// subscription (Redisson waits for it before its next attempt, so no message after that is missed). On
// an error the caller holds nothing.
func (s *subscriptions) subscribeKind(ctx context.Context, channel string, kind wakeKind) (*entry, error) {
	sharded := s.mode.get(ctx)
	s.mu.Lock()
	e, ok := s.entries[channel]
	if ok {
		e.refs++
	} else {
		e = &entry{channel: channel, refs: 1, kind: kind, latch: make(chan struct{}, 1024), ready: make(chan struct{})}
		s.entries[channel] = e
		if err := s.start(ctx, e, sharded); err != nil {
			e.err = err
			close(e.ready)
		}
	}
	s.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		s.unsubscribe(e)
		return nil, ctx.Err()
	case <-s.closed:
		s.unsubscribe(e)
		return nil, redis.ErrClosed
	}
	if e.err != nil {
		s.unsubscribe(e)
		return nil, e.err
	}
	return e, nil
}

// start sends the subscription of a new entry (under s.mu).
func (s *subscriptions) start(ctx context.Context, e *entry, sharded bool) error {
	if sharded {
		// Subscribe before reading: the connection goes to the master of its first channel's slot, and a
		// reader started first would connect without one, to any node.
		e.ps = s.mode.cc.SSubscribe(ctx)
		err := e.ps.SSubscribe(ctx, e.channel)
		go s.dispatch(e.ps.ChannelWithSubscriptions())
		return err
	}
	if s.ps == nil {
		s.ps = s.rdb.Subscribe(ctx)
		go s.dispatch(s.ps.ChannelWithSubscriptions())
	}
	return s.ps.Subscribe(ctx, e.channel)
}

// unsubscribe leaves e; the last one out unsubscribes.
func (s *subscriptions) unsubscribe(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.refs--; e.refs > 0 {
		return
	}
	if s.entries[e.channel] == e {
		delete(s.entries, e.channel)
	}
	if e.ps != nil {
		_ = e.ps.Close()
		return
	}
	if s.ps != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.ps.Unsubscribe(ctx, e.channel)
		cancel()
	}
}

func (s *subscriptions) dispatch(msgs <-chan any) {
	for m := range msgs {
		s.mu.Lock()
		switch m := m.(type) {
		case *redis.Subscription:
			if e := s.entries[m.Channel]; e != nil && (m.Kind == "subscribe" || m.Kind == "ssubscribe") {
				select {
				case <-e.ready:
				default:
					close(e.ready)
				}
			}
		case *redis.Message:
			e := s.entries[m.Channel]
			wake := 0
			if e != nil {
				wake = e.wakes(m.Payload)
			}
			for i := 0; i < wake; i++ {
				select {
				case e.latch <- struct{}{}:
				default:
				}
			}
		}
		s.mu.Unlock()
	}
}

func (s *subscriptions) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
		return
	default:
		close(s.closed)
	}
	if s.ps != nil {
		_ = s.ps.Close()
	}
	for _, e := range s.entries {
		if e.ps != nil {
			_ = e.ps.Close()
		}
	}
}

// wait blocks until a wake-up, d passes or ctx ends.
func (e *entry) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.latch:
	case <-t.C:
	case <-ctx.Done():
	}
}
