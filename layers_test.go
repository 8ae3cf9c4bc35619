package lockcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// layers is the data flow from the bottom up (docs/architecture.md): a package may import only packages of
// a lower layer, so no arrow runs back up and no cycle can form. A new package must be placed here.
var layers = [][]string{
	{"internal/redact", "internal/safefile"},
	{"", "history", "internal/bounded", "internal/prose", "internal/textfile", "topology/kind", "nemesis", "workers/sdk", "docker"},
	{"history/outcome", "node/clockshift", "network/wire"},
	{"node", "network"},
	{"node/docker", "node/server"},
	{"topology"},
	{"locks"},
	{"workloads"},
	{"workloads/schedule"},
	{"checker", "runflag"},
	{"kinds"},
	{"clients/worker", "lockspec", "coverage"},
	{"report"},
	{"report/page", "report/store"},
	{"suite"},
	{"known"},
	{"runner", "repro", "compare", "bisect", "shrink"},
	{"bugreport"},
	{"explore"},
	// programs and test kits: nothing imports them but tests (and the kits only from tests)
	{"cmd/lockcheck", "scripts/action", "scripts/falsealarms", "scripts/shards", "bench", "bench/violation",
		"workers/naive", "workers/lying-permits",
		"internal/testkit/corpus", "internal/testkit/dockertest", "internal/testkit/histgen", "internal/testkit/redistest", "internal/regress"},
}

func TestNoArrowRunsBackUp(t *testing.T) {
	const module = "github.com/lockcheck/lockcheck"
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	name := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := name(f[0])
		r, ok := rank[from]
		if !ok {
			t.Errorf("package %q has no layer: place it in layers (layers_test.go) and docs/architecture.md", from)
			continue
		}
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := name(imp)
			if rank[to] >= r && !(r == len(layers)-1 && strings.HasPrefix(from, "internal/testkit/")) {
				t.Errorf("%s imports %s: an arrow running back up (layer %d → %d)", from, to, r, rank[to])
			}
			if strings.HasPrefix(to, "internal/testkit/") {
				t.Errorf("%s imports the test kit %s outside a test", from, to)
			}
		}
	}
}
