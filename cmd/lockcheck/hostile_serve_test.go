package main

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testkit/dockertest"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/node"
)

// startServe runs `lockcheck serve --results root --addr host:<a free port>` in-process until the test ends,
// and returns its base URL (as host names it) once it answers.
func startServe(t *testing.T, root, host string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ipOf(t, host), "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	base := "http://" + net.JoinHostPort(host, port)
	ctx, cancel := context.WithCancel(context.Background())
	exit, done := 0, make(chan struct{})
	go func() {
		defer close(done)
		exit = execute(ctx, []string{"serve", "--results", root, "--addr", net.JoinHostPort(host, port)})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if exit != exitValid {
				t.Errorf("serve ended with exit %d, want 0", exit)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop within 10 s of its context's end")
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("serve --addr %s: exit %d", net.JoinHostPort(host, port), exit)
		default:
		}
		if resp, _, err := fetch(base, "/"); err == nil && resp.StatusCode == http.StatusOK {
			return base
		}
	}
	t.Fatalf("serve on %s never answered", base)
	return ""
}

// ipOf is the loopback address a test host name stands for (see the lookupIP stand-in).
func ipOf(t *testing.T, host string) string {
	t.Helper()
	switch host {
	case "127.0.0.1", "localhost":
		return "127.0.0.1"
	case "::1", "ip6-localhost":
		return "::1"
	}
	t.Fatalf("no address for %s", host)
	return ""
}

// fetch GETs base+path (Host as base names it), within 10 s.
func fetch(base, path string) (*http.Response, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		return nil, "", err
	}
	// Where the machine cannot resolve the name, dial its address: the Host header still names it.
	u := req.URL.Host
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		h, p, _ := net.SplitHostPort(u)
		ip := map[string]string{"localhost": "127.0.0.1", "ip6-localhost": "::1"}[h]
		if ip == "" {
			ip = h
		}
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ip, p))
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}).Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// standInNames makes lookupIP answer names this machine may lack (ip6-localhost is in Debian's /etc/hosts,
// not in every container's) until the test ends.
func standInNames(t *testing.T, names map[string][]string) {
	saved := lookupIP
	t.Cleanup(func() { lookupIP = saved })
	lookupIP = func(ctx context.Context, host string) ([]net.IP, error) {
		addrs, ok := names[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		var ips []net.IP
		for _, a := range addrs {
			ips = append(ips, net.ParseIP(a))
		}
		return ips, nil
	}
}

// serve --addr ip6-localhost:PORT is loopback (the name is resolved, and every address it has is
// loopback), and the server answers under that name; a name with an address beyond loopback, or none, is
// bad input.
func TestServeAddrIP6Localhost(t *testing.T) {
	// Sequential: replaces the package's lookupIP (standInNames).
	standInNames(t, map[string][]string{"ip6-localhost": {"::1"}, "localhost": {"127.0.0.1", "::1"},
		"half": {"127.0.0.1", "192.0.2.1"}})
	base := startServe(t, t.TempDir(), "ip6-localhost")
	if resp, body, err := fetch(base, "/"); err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "lockcheck runs") {
		t.Fatalf("GET %s/: %v %v", base, resp, err)
	}
	for _, addr := range []string{"half:0", "nowhere:0"} {
		if code := execute(context.Background(), []string{"serve", "--results", t.TempDir(), "--addr", addr}); code != exitUsage {
			t.Errorf("--addr %s: exit %d, want %d", addr, code, exitUsage)
		}
	}
}

// A worker's stderr.log holding a page is served as plain text, nosniff: it does not run in serve's origin.
func TestServeWorkerStderrIsText(t *testing.T) {
	t.Parallel() // a fault-free run of a granting script, served
	grant, _ := filepath.Abs(filepath.Join("testdata", "workers", "grant.sh"))
	script := filepath.Join(t.TempDir(), "xss.sh")
	page := `<html><script>document.title='pwned'</script></html>`
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \""+page+"\" >&2\nexec "+grant+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, dir := run(t, "run", "--client-cmd", script, "--lock", "naive", "--hold", "50ms", "--time", "2s", "--quiet", "1s",
		"--clients", "1", "--seed", "1")
	if code == exitHarness || code == exitUsage || dir == "" {
		t.Fatalf("exit %d", code)
	}
	base := startServe(t, filepath.Dir(dir), "127.0.0.1")
	resp, body, err := fetch(base, "/runs/latest/clients/c1/stderr.log")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, page) {
		t.Fatalf("stderr.log: %s %q", resp.Status, body)
	}
	if ct, ns := resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"); ct != "text/plain; charset=utf-8" || ns != "nosniff" {
		t.Fatalf("stderr.log served as %q, X-Content-Type-Options %q", ct, ns)
	}
	// A worker is handed the password (init): it is in no file the run shows either.
	noSecret(t, filepath.Dir(dir), nodePassword(t, dir), 1)
}

// No secret in a file that group or other may read, nor in anything serve answers: a run's whole store is
// searched for its password (the nodes' random one, or --external-password), and every path in it fetched
// through serve, directly and through latest.
func TestNoSecretInRunFilesOrServe(t *testing.T) {
	t.Parallel() // fault-free valid runs, served
	common := []string{"--lock", "reentrant", "--time", "2s", "--quiet", "1s", "--seed", "1"}
	t.Run("process", func(t *testing.T) {
		code, dir := run(t, append([]string{"run", "--topology", "sentinel"}, common...)...)
		if code != exitValid {
			t.Fatalf("exit %d", code)
		}
		noSecret(t, filepath.Dir(dir), nodePassword(t, dir), 6)
	})
	t.Run("docker", func(t *testing.T) {
		dockertest.Require(t)
		code, dir := run(t, append([]string{"run", "--backend", "docker", "--topology", "sentinel"}, common...)...)
		if code != exitValid {
			t.Fatalf("exit %d", code)
		}
		noSecret(t, filepath.Dir(dir), nodePassword(t, dir), 6)
	})
	t.Run("external", func(t *testing.T) {
		secret := "ext" + node.NewPassword()
		n := redistest.StartConfig(t, node.Config{Password: secret})
		code, dir := run(t, append([]string{"run", "--backend", "external", "--external-addrs", n.Addr(),
			"--external-password", secret}, common...)...)
		if code != exitValid {
			t.Fatalf("exit %d", code)
		}
		// The command line is recorded (with the password's value left out), so the search below means something.
		f, err := os.Open(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		if !strings.Contains(meta, "--external-password") {
			t.Fatalf("the meta record has no --external-password in its command: %s", meta)
		}
		noSecret(t, filepath.Dir(dir), secret, 0)
	})
}

var requirepass = regexp.MustCompile(`(?m)^requirepass "?([0-9a-f]+)"?$`)

// nodePassword is the run's random password, from its first node's config.
func nodePassword(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "nodes", "n1", "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	m := requirepass.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no requirepass in n1's redis.conf:\n%s", b)
	}
	return string(m[1])
}

var pctHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// secretForms is secret as a file or a page may hold it: raw, JSON-escaped (with and without HTML escapes),
// URL-encoded as a query, a path or a URL's userinfo, with upper- and lower-case hex, and HTML- or
// XML-escaped (a page, junit.xml).
func secretForms(secret string) []string {
	forms := []string{secret}
	js, _ := json.Marshal(secret)
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(secret)
	var x strings.Builder
	_ = xml.EscapeText(&x, []byte(secret))
	for _, f := range []string{strings.Trim(string(js), `"`), strings.Trim(strings.TrimSpace(plain.String()), `"`),
		url.QueryEscape(secret), url.PathEscape(secret), strings.TrimPrefix(url.UserPassword("", secret).String(), ":"),
		html.EscapeString(secret), x.String()} {
		for _, g := range []string{f, pctHex.ReplaceAllStringFunc(f, strings.ToLower)} {
			if !slices.Contains(forms, g) {
				forms = append(forms, g)
			}
		}
	}
	return forms
}

// holdsSecret is the first form of secret in text, or "".
func holdsSecret(text string, forms []string) string {
	for _, f := range forms {
		if strings.Contains(text, f) {
			return f
		}
	}
	return ""
}

// noSecret searches the store at root for secret in every form (secretForms): at least want files hold
// it, none that group or other may read, and no answer of serve, for the index and every path under root,
// carries it.
func noSecret(t *testing.T, root, secret string, want int) {
	t.Helper()
	forms := secretForms(secret)
	var paths []string
	holders := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		paths = append(paths, filepath.ToSlash(rel))
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if f := holdsSecret(string(b), forms); f != "" {
			holders++
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if fi.Mode().Perm()&0o044 != 0 {
				t.Errorf("%s holds the password (as %q) and is %o", rel, f, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if holders < want {
		t.Errorf("%d files hold the password, want %d at least (the nodes' and Sentinels' configs)", holders, want)
	}
	base := startServe(t, root, "127.0.0.1")
	var urls []string
	for _, p := range paths {
		urls = append(urls, "/runs/"+p, "/runs/"+p+"/")
		if _, in, ok := strings.Cut(p, "/"); ok {
			urls = append(urls, "/runs/latest/"+in)
		}
	}
	served := map[string]bool{}
	for _, u := range append(urls, "/") {
		resp, body, err := fetch(base, u)
		if err != nil {
			t.Fatal(err)
		}
		if f := holdsSecret(body, forms); f != "" {
			t.Errorf("GET %s (%s) answers the password (as %q)", u, resp.Status, f)
		}
		if resp.StatusCode == http.StatusOK {
			served[u] = true
		}
	}
	for _, u := range []string{"/", "/runs/latest/index.html", "/runs/latest/results.json", "/runs/latest/history.jsonl"} {
		if !served[u] {
			t.Errorf("GET %s was not served", u)
		}
	}
}
