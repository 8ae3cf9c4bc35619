package checker

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// The readers string is rewritten in place (no map per step): it must stay what a map of holds, sorted
// by owner, would give, whatever the order of grants and releases.
func TestReadersStringAsAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	owners := []string{"c1/1", "c1/2", "c2/1", "a:1", "z-9:write", "m"}
	for trial := 0; trial < 2000; trial++ {
		want := map[string]int{}
		rs := ""
		for step := 0; step < 12; step++ {
			o := owners[r.Intn(len(owners))]
			d := 1
			if want[o] > 0 && r.Intn(2) == 0 {
				d = -1
			}
			want[o] += d
			rs = withReader(rs, o, d)
			var keys []string
			for k, v := range want {
				if v > 0 {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%d", k, want[k]))
			}
			if exp := strings.Join(parts, ";"); rs != exp {
				t.Fatalf("after %s %+d: %q, want %q", o, d, rs, exp)
			}
			for _, k := range owners {
				if got := readerHolds(rs, k); got != max(want[k], 0) {
					t.Fatalf("holds of %s in %q: %d, want %d", k, rs, got, want[k])
				}
			}
		}
	}
}
