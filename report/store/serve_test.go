package store

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveStore serves dir on a loopback port, answering the loopback names only, until the test ends.
func serveStore(t *testing.T, dir string) (base string, port int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	port = srv.Listener.Addr().(*net.TCPAddr).Port
	h, err := Handler(dir, Hosts{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, port
}

// get fetches base+path with the Host header host ("" for the URL's), within 10 s.
func get(t *testing.T, base, path, host string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func write(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
}

const results = `{"valid":true,"lock":"reentrant","topology":"single","seed":1,"checkers":[]}`

// A file every user may read is still private inside a directory only its owner may enter: Sentinel
// rewrites its config (it holds the password) as 0644 inside its 0700 directory. Nor does a symlink inside
// the store lead around that directory.
func TestServeKeepsFilesInPrivateDirectories(t *testing.T) {
	store := t.TempDir()
	run := filepath.Join(store, "20260101T000000.000-reentrant-none")
	write(t, filepath.Join(run, "results.json"), results, 0o644)
	conf := filepath.Join(run, "sentinels", "s1", "redis.conf")
	write(t, conf, "requirepass s3cr3t\n", 0o644)
	if err := os.Chmod(filepath.Dir(conf), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sentinels/s1", filepath.Join(run, "around")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(run), filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	base, _ := serveStore(t, store)
	if resp, _ := get(t, base, "/runs/latest/results.json", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("results.json: %s", resp.Status)
	}
	for _, p := range []string{"/runs/latest/sentinels/s1/redis.conf", "/runs/" + filepath.Base(run) + "/sentinels/s1/redis.conf",
		"/runs/latest/around/redis.conf"} {
		resp, body := get(t, base, p, "")
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound || strings.Contains(body, "s3cr3t") {
			t.Errorf("%s: %s %q", p, resp.Status, body)
		}
	}
}

// Only a request naming the server (a loopback name or address, with its port) is answered: a page whose
// own name was rebound to 127.0.0.1 cannot read the store.
func TestServeChecksHost(t *testing.T) {
	store := t.TempDir()
	write(t, filepath.Join(store, "r", "results.json"), results, 0o644)
	base, port := serveStore(t, store)
	p := strconv.Itoa(port)
	for _, host := range []string{"127.0.0.1:" + p, "[::1]:" + p, "localhost:" + p, "LocalHost.:" + p, "ip6-localhost:" + p, "127.0.0.2:" + p} {
		for _, path := range []string{"/", "/runs/r/results.json"} {
			if resp, _ := get(t, base, path, host); resp.StatusCode != http.StatusOK {
				t.Errorf("Host %s, %s: %s", host, path, resp.Status)
			}
		}
	}
	for _, host := range []string{"rebound.example:" + p, "rebound.example", "localhost", "localhost:1", "127.0.0.1:1",
		"10.0.0.1:" + p, "localhost.rebound.example:" + p, "[::1]"} {
		for _, path := range []string{"/", "/runs/r/results.json"} {
			resp, body := get(t, base, path, host)
			if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "reentrant") {
				t.Errorf("Host %s, %s: %s %q", host, path, resp.Status, body)
			}
		}
	}
}

// The Host rules of serving beyond loopback: the names asked for and any address, never another name.
func TestHostsBeyondLoopback(t *testing.T) {
	h := Hosts{Port: 8080, Names: []string{"box.lan", "192.0.2.7"}, AnyAddress: true}
	for _, host := range []string{"box.lan:8080", "BOX.LAN.:8080", "192.0.2.7:8080", "198.51.100.1:8080", "[2001:db8::1]:8080", "localhost:8080"} {
		if !h.allows(host) {
			t.Errorf("%s refused", host)
		}
	}
	for _, host := range []string{"rebound.example:8080", "box.lan:80", "box.lan"} {
		if h.allows(host) {
			t.Errorf("%s allowed", host)
		}
	}
	if (Hosts{Port: 80}).allows("localhost") != true {
		t.Error("port 80 without a port in Host refused")
	}
}

// Every response says nosniff, and a file's type is its extension's in a fixed table, plain text otherwise:
// a worker's stderr.log holding HTML is not run as a page where no system MIME table exists. Only the pages
// lockcheck writes are HTML, sandboxed into an origin of their own.
func TestServeTypesAndNosniff(t *testing.T) {
	store := t.TempDir()
	run := filepath.Join(store, "r")
	xss := "<html><script>fetch('/runs/')</script></html>\n"
	write(t, filepath.Join(run, "results.json"), results, 0o644)
	write(t, filepath.Join(run, "index.html"), "<!doctype html><title>summary</title>", 0o644)
	write(t, filepath.Join(run, "history.check.summary.html"), "<!doctype html><title>re-check</title>", 0o644)
	for _, name := range []string{"workers/c1/stderr.log", "history.jsonl", "x.conf", "notes.txt", "evil.html", "evil.svg", "evil.js", "noext"} {
		write(t, filepath.Join(run, name), xss, 0o644)
	}
	base, _ := serveStore(t, store)
	want := map[string]string{
		"/runs/r/results.json":                "application/json",
		"/runs/r/index.html":                  "text/html; charset=utf-8",
		"/runs/r/":                            "text/html; charset=utf-8",
		"/runs/r/history.check.summary.html":  "text/html; charset=utf-8",
		"/runs/r/workers/c1/stderr.log":       plain,
		"/runs/r/history.jsonl":               plain,
		"/runs/r/x.conf":                      plain,
		"/runs/r/notes.txt":                   plain,
		"/runs/r/evil.html":                   plain,
		"/runs/r/evil.svg":                    plain,
		"/runs/r/evil.js":                     plain,
		"/runs/r/noext":                       plain,
		"/":                                   "text/html; charset=utf-8",
		"/runs/r/missing":                     plain, // a 404
		"/runs/r/workers/c1/stderr.log/../..": "",    // a redirect
	}
	for path, ctype := range want {
		resp, _ := get(t, base, path, "")
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
		if ctype == "" {
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != ctype {
			t.Errorf("%s: Content-Type %q, want %q", path, got, ctype)
		}
		html := strings.HasPrefix(ctype, "text/html")
		if csp := resp.Header.Get("Content-Security-Policy"); html != (csp == sandbox) {
			t.Errorf("%s (%s): Content-Security-Policy %q", path, ctype, csp)
		}
	}
	if resp, _ := get(t, base, "/", "rebound.example"); resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("a refused request: no nosniff")
	}
}

// The index reads nothing outside the store: a results.json that is a symlink out of it (to a private file,
// to /dev/zero), a FIFO or too large a file makes a row that says so, at once, and pins no thread; none of
// them is served.
func TestIndexStaysInsideTheStore(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "private.json")
	write(t, outside, `{"valid":false,"lock":"OUTSIDE-SECRET","topology":"single","checkers":[]}`, 0o600)
	store := t.TempDir()
	write(t, filepath.Join(store, "good", "results.json"), results, 0o644)
	for name, target := range map[string]string{"out": outside, "zero": "/dev/zero", "up": "../../" + filepath.Base(filepath.Dir(outside)) + "/private.json"} {
		if err := os.MkdirAll(filepath.Join(store, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(store, name, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(store, "fifo", "results.json")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(store, "big", "results.json")
	write(t, big, "", 0o644)
	if err := os.Truncate(big, 16<<20+1); err != nil {
		t.Fatal(err)
	}
	base, _ := serveStore(t, store)
	// Should an open wait on the FIFO after all, a writer that comes and goes releases it before the server
	// closes (cleanups run last first).
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	threads := func() int {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(l, "Threads:"); ok {
				v, _ := strconv.Atoi(strings.TrimSpace(n))
				return v
			}
		}
		t.Fatal("no Threads: in /proc/self/status")
		return 0
	}
	_, body := get(t, base, "/", "")
	before := threads()
	for range 100 {
		_, body = get(t, base, "/", "")
	}
	after := threads()
	t.Logf("threads: %d before 100 index requests, %d after", before, after)
	if after > before+10 {
		t.Errorf("100 index requests: %d threads, were %d", after, before)
	}
	if strings.Contains(body, "OUTSIDE-SECRET") {
		t.Error("the index shows a file from outside the store")
	}
	for _, run := range []string{"good", "out", "zero", "up", "fifo", "big"} {
		if !strings.Contains(body, ">"+run+"<") {
			t.Errorf("run %s is not listed", run)
		}
	}
	for _, why := range []string{"escapes", "a FIFO", "more than the 16 MiB"} {
		if !strings.Contains(body, why) {
			t.Errorf("no row says %q", why)
		}
	}
	// Nor are they served.
	for _, run := range []string{"out", "zero", "up", "fifo"} {
		if resp, body := get(t, base, "/runs/"+run+"/results.json", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s/results.json: %s %.100q", run, resp.Status, body)
		}
	}
}
