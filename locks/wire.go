package locks

import (
	"strings"

	"github.com/lockcheck/lockcheck/network/wire"
)

// wireShapes are the wire recorder's shapes of lockcheck's own scripts, by name (scripts/<set>/<name>.lua):
// each records what this package records for the same command.
var wireShapes = map[string]wire.Shape{"acquire": wire.RLockAcquire, "fenced_acquire": wire.FencedAcquire,
	"release": wire.RLockRelease, "renew": wire.RenewBatch, "rw_write_acquire": wire.RLockAcquire,
	"rw_write_release": wire.RLockRelease, "rw_read_acquire": wire.RWReadAcquire, "rw_read_release": wire.RWReadRelease,
	"rw_read_renew": wire.RWReadRenewOne, "fair_acquire": wire.FairAcquireWait, "fair_acquire_failed": wire.FairDequeue,
	"fair_release": wire.FairRelease, "spec_release": wire.CompareDelete}

func init() {
	wire.RegisterLibrary(wire.Library{Name: "lockcheck redisson set", Load: func() (map[string]wire.Script, error) {
		s, err := LoadScripts("redisson", "")
		if err != nil {
			return nil, err
		}
		out := map[string]wire.Script{}
		for name, shape := range wireShapes {
			out[wire.SHA(s.Source(name))] = wire.Script{Shape: shape, Source: "lockcheck redisson set " + name + ".lua"}
		}
		return out, nil
	}})
}

// MapScripts maps every script of s that has a known name (e.g. a --scripts override of release.lua, or
// its _broken twin) to that name's shape in t, so a replayed or user script is recorded under the same
// contract.
func MapScripts(t *wire.Table, s *Scripts) {
	for _, name := range s.Names() {
		if shape, ok := wireShapes[strings.TrimSuffix(name, "_broken")]; ok {
			t.Add(s.Source(name), wire.Script{Shape: shape, Source: s.Set + " " + name + ".lua"})
		}
	}
}
