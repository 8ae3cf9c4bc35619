package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A worker build that failed because its registry could not be reached says so in its one line, naming the
// registry; a compile error does not.
func TestBuildSaysTheRegistryIsUnreachable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		spec Spec
		log  string
		want string
	}{
		{Spec{Name: "redisson", Language: "java", Releases: MavenCentral("org.redisson", "redisson")},
			"[INFO] Scanning\n[ERROR] Failed to execute goal on project w: Could not resolve dependencies for project w: Could not transfer artifact org.redisson:redisson:pom:3.43.0 from/to central (https://repo.maven.apache.org/maven2): Unknown host repo.maven.apache.org\n[ERROR] -> [Help 1]\n",
			"cannot reach Maven Central: [ERROR] Failed to execute goal"},
		{Spec{Name: "redis-py", Language: "python", Releases: PyPI("redis")},
			"WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')'\n",
			"cannot reach PyPI: WARNING: Retrying"},
		{Spec{Name: "redsync", Language: "go", Releases: GoProxy("github.com/go-redsync/redsync/v4")},
			"go: github.com/go-redsync/redsync/v4@v4.0.3: Get \"https://proxy.golang.org/github.com/go-redsync/redsync/v4/@v/v4.0.3.info\": dial tcp: lookup proxy.golang.org: no such host\n",
			"cannot reach the Go module proxy: go: github.com/go-redsync"},
		{Spec{Name: "redsync", Language: "go"}, "./main.go:12:2: undefined: redsync.NewMutex\n", ""},
	} {
		log := filepath.Join(dir, tc.spec.Name+".log")
		if err := os.WriteFile(log, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		why, ok := unreachable(tc.spec, log)
		if ok != (tc.want != "") || !strings.HasPrefix(why, tc.want) || strings.Contains(why, "\n") {
			t.Errorf("%s: %q %v, want %q", tc.spec.Name, why, ok, tc.want)
		}
	}
}
