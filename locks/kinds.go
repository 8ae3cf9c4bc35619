package locks

import (
	"fmt"
	"sort"
	"time"
)

// Env is what a lock client needs to connect: its name, the addresses of the nodes (through its own
// proxies), the password, the script set and the recorder.
type Env struct {
	Client   string
	Addrs    []string
	Password string
	Scripts  *Scripts
	Redisson RedissonConfig
	Lease    time.Duration // the run's --lease, for locks that need a fixed one
	Rec      Recorder
}

// MutexClient is one client instance of a mutex-like lock.
type MutexClient interface {
	Name() string
	Mutex(key string, thread int64) Mutex
	Close() error
}

// MutexKind is a lock the mutex workload can drive, by its --lock name.
type MutexKind struct {
	Name      string
	About     string
	Reentrant bool
	Scripts   string // embedded script set, "" for none
	Nodes     int    // nodes it needs: 1, or 0 for "all of the topology"
	New       func(Env) (MutexClient, error)
}

var mutexKinds = map[string]MutexKind{}

// RegisterMutex adds a lock kind.
func RegisterMutex(k MutexKind) { mutexKinds[k.Name] = k }

// LookupMutex finds a lock kind by name.
func LookupMutex(name string) (MutexKind, error) {
	k, ok := mutexKinds[name]
	if !ok {
		return MutexKind{}, fmt.Errorf("unknown lock %q (have: %v)", name, MutexKindNames())
	}
	return k, nil
}

// MutexKindNames lists the registered kinds.
func MutexKindNames() []string {
	var out []string
	for n := range mutexKinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func init() {
	RegisterMutex(MutexKind{Name: "reentrant", About: "Redisson RLock: reentrant hash lock, watchdog, pub/sub wake-up",
		Reentrant: true, Scripts: "redisson", Nodes: 1,
		New: func(e Env) (MutexClient, error) {
			return NewRedisson(e.Client, ClientConfig{Addr: e.Addrs[0], Password: e.Password}, e.Redisson, e.Scripts, e.Rec), nil
		}})
	RegisterMutex(MutexKind{Name: "naive", About: "negative control: SET NX PX, unconditional DEL, fixed lease, no watchdog",
		Nodes: 1,
		New: func(e Env) (MutexClient, error) {
			lease := e.Lease
			if lease <= 0 {
				lease = e.Redisson.WatchdogTimeout
			}
			id := newRequestID()
			return NewNaiveClient(e.Client, id, ClientConfig{Addr: e.Addrs[0], Password: e.Password,
				Timeout: e.Redisson.Timeout}, lease, e.Rec), nil
		}})
}

// Name is the client's name in the history.
func (r *Redisson) Name() string { return r.name }

// Mutex returns the RLock called key for a thread.
func (r *Redisson) Mutex(key string, thread int64) Mutex { return r.Lock(key, thread) }

// Name is the client's name in the history.
func (c *NaiveClient) Name() string { return c.name }

// Mutex returns the naive lock called key for a thread.
func (c *NaiveClient) Mutex(key string, thread int64) Mutex { return c.Lock(key, thread) }
