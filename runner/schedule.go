package runner

import (
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// loadSchedule reads --schedule before the lock is resolved: the file's lock, and the clients, threads and
// keys its steps name, stand wherever the command line gave none (a worker's --client brings its own lock).
// Faults go in the file: a --nemesis beside it is refused.
func (o *Options) loadSchedule() (*schedule.Schedule, error) {
	if o.Schedule == "" {
		return nil, nil
	}
	s, err := schedule.Load(o.Schedule)
	if err != nil {
		return nil, UsageError{err}
	}
	if o.Nemesis != "" && o.Nemesis != "none" || o.NemesisTrigger || o.NemesisTargets != "" {
		return nil, usagef("--schedule %s: its faults are steps of the file (fault: NAME, targets, for), not --nemesis flags", o.Schedule)
	}
	given := func(name string) bool { return o.Given != nil && o.Given[name] }
	if s.Lock != "" && o.Given != nil && !given("lock") && !given("lock-spec") && !o.Worker.active() {
		o.Lock = s.Lock
	}
	for _, f := range []struct {
		name string
		v    *int
		need int
	}{{"clients", &o.Clients, s.Clients()}, {"threads", &o.Threads, s.Threads()}, {"keys", &o.Keys, s.Keys()}} {
		switch {
		case !given(f.name):
			*f.v = f.need
		case *f.v < f.need:
			return nil, usagef("--schedule %s names %d %s: --%s %d is too few", o.Schedule, f.need, f.name, f.name, *f.v)
		}
	}
	return s, nil
}

// checkSchedule refuses a schedule the lock cannot play and draws its faults' targets; it returns the
// faults the steps use.
func (o Options) checkSchedule(s *schedule.Schedule, k *kinds.Kind, names *nemesis.Env) ([]string, error) {
	if err := s.Check(schedule.Caps{Lock: o.Lock, Family: k.Family.Name, Reentrant: k.Reentrant, Group: k.Group,
		Time: o.Time}); err != nil {
		return nil, UsageError{err}
	}
	if err := s.Aim(o.Seed, names); err != nil {
		return nil, UsageError{err}
	}
	return s.Faults(), nil
}
