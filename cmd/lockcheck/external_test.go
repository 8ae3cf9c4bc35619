package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/dockertest"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// toxiproxyServer builds toxiproxy's own server from the module lockcheck depends on and starts it on a
// free loopback port; it returns the API address.
func toxiproxyServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toxiproxy-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/Shopify/toxiproxy/v2/cmd/server").CombinedOutput(); err != nil {
		t.Fatalf("build toxiproxy-server: %v\n%s", err, out)
	}
	port, err := node.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url + "/version"); err == nil {
			resp.Body.Close()
			return url
		}
	}
	t.Fatal("toxiproxy-server never answered")
	return ""
}

func proxiesOn(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url + "/proxies")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// --backend external tests a Redis that lockcheck did not start, with the partition injected through a
// running toxiproxy server's API; the proxies it made there are gone afterwards, and a fault that needs
// process control is refused when the deployment file names no container.
func TestExternalBackend(t *testing.T) {
	t.Parallel() // a safe lock valid under partition and latency, its own node and toxiproxy
	url := toxiproxyServer(t)
	n := redistest.Start(t, node.PersistNone)
	file := filepath.Join(t.TempDir(), "deployment.yml")
	yml := fmt.Sprintf("topology: single\npassword: %s\ntoxiproxy: %s\nnodes:\n  - {name: n1, addr: %q}\n", n.Password(), url, n.Addr())
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, dir := run(t, "run", "--backend", "external", "--external", file, "--lock", "reentrant", "--nemesis", "partition",
		"--nemesis-interval", "1s", "--nemesis-duration", "2s", "--time", "8s", "--seed", "2")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if !strings.Contains(string(hist), `"f":"partition","phase":"start"`) {
		t.Fatal("no partition in the history")
	}
	if left := proxiesOn(t, url); len(left) != 0 {
		t.Fatalf("proxies left on the toxiproxy server: %v", left)
	}
	// The same deployment from flags, with latency through the toxiproxy server. A holder partitioned at
	// its unlock may leave its lock to expire (Redisson does not retry an unlock on a single node), and
	// lockcheck refuses a deployment that already holds the workload's keys: an operator deletes them.
	if err := redistest.Client(t, n.Addr(), n.Password()).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	code, dir = run(t, "run", "--backend", "external", "--external-addrs", n.Addr(), "--external-password", n.Password(),
		"--external-toxiproxy", url, "--nemesis", "latency", "--nemesis-interval", "1s", "--time", "8s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("from flags: exit %d, want %d (%s)", code, exitValid, dir)
	}
	if code, _ := run(t, "run", "--backend", "external", "--external", file, "--nemesis", "kill", "--time", "2s"); code != exitUsage {
		t.Fatalf("kill without a container: exit %d, want %d", code, exitUsage)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	_ = os.WriteFile(bad, []byte("topology: single\nnodes: [{name: n1}]\n"), 0o600)
	if code, _ := run(t, "run", "--backend", "external", "--external", bad, "--time", "2s"); code != exitUsage {
		t.Fatalf("a node without addr: exit %d, want %d", code, exitUsage)
	}
}

// The compose deployment (docker/compose) tested from outside: a partition and a failover through its
// toxiproxy container, and docker kill through its containers, give a verdict.
func TestExternalCompose(t *testing.T) {
	// Sequential: docker: one engine for the machine.
	dockertest.Require(t)
	if _, err := exec.LookPath("docker-compose"); err != nil {
		if exec.Command("docker", "compose", "version").Run() != nil {
			t.Skip("compose test skipped: neither docker-compose nor docker compose is installed")
		}
	}
	root, _ := filepath.Abs("../..")
	static := filepath.Join(root, "docker", "toxiproxy", "toxiproxy-server")
	build := exec.Command("go", "build", "-o", static, "github.com/Shopify/toxiproxy/v2/cmd/server")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build toxiproxy-server: %v\n%s", err, out)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", "lockcheck/toxiproxy:offline", filepath.Join(root, "docker", "toxiproxy")).CombinedOutput(); err != nil {
		t.Fatalf("toxiproxy image: %v\n%s", err, out)
	}
	compose := filepath.Join(root, "docker", "compose")
	if out, err := exec.Command(filepath.Join(compose, "up.sh")).CombinedOutput(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(filepath.Join(compose, "down.sh")).Run() })
	deployment := filepath.Join(compose, "run", "lockcheck.yml")
	// Wait until the Sentinels agree on the primary: the compose deployment is ready when they do.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// a fixed 1 s lease: a hold granted as the probe stops outlives it by no more than that
		code, _ := run(t, "run", "--backend", "external", "--external", deployment, "--time", "1s", "--quiet", "0s", "--lease", "1s")
		if code == exitValid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compose deployment never served a run (last exit %d)", code)
		}
	}
	// A run refuses a deployment that holds its keys (254): a probe's hold granted as it stopped is left
	// there until its 1 s lease ends (seen once in CI), so the run is asked again until then.
	var code int
	var dir string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, dir = run(t, "run", "--backend", "external", "--external", deployment, "--lock", "reentrant",
			"--nemesis", "partition,failover,kill", "--nemesis-interval", "2s", "--nemesis-duration", "8s", "--time", "40s", "--seed", "3")
		if code != exitUsage || time.Now().After(deadline) {
			break
		}
	}
	if code != exitValid && code != exitInvalid && code != exitUnknown {
		t.Fatalf("exit %d: no verdict (%s)", code, dir)
	}
	hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if !strings.Contains(string(hist), `"type":"fault"`) {
		t.Fatal("no fault in the history")
	}
	t.Logf("compose run: exit %d, %s", code, dir)
}
