package worker

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// A worker's stderr.log is kept with the run and served: the run's password never reaches it, in any form
// a library may print it (raw, or URL-encoded in a connection URL with either case of hex), wherever the
// stream's chunks fall (issue 22, item 3; issue 29, item 3).
func TestStderrLogRedactsThePassword(t *testing.T) {
	const secret = "pw@0123/456:789abcdef"
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), strings.ToLower(url.QueryEscape(secret)),
		strings.TrimPrefix(url.UserPassword("", secret).String(), ":")}
	long := strings.Repeat("x", 64<<10-5) // the secret straddles the reader's 64 KiB buffer
	for _, f := range forms {
		for name, text := range map[string]string{
			"line":     "auth redis://default:" + f + "@127.0.0.1:6379 ok\n",
			"straddle": long + f + "\n",
			"no-eol":   long + long + f,
			"twice":    f + f + "\n",
		} {
			t.Run(name+"/"+f, func(t *testing.T) {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), "stderr.log")
				log, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { logStderr(r, log, redact.New(secret)); close(done) }()
				for i := 0; i < len(text); i += 1000 { // small writes, as a chatty library makes them
					_, _ = w.Write([]byte(text[i:min(i+1000, len(text))]))
				}
				w.Close()
				<-done
				b, _ := os.ReadFile(path)
				if strings.Contains(string(b), f) {
					t.Fatalf("the password (as %s) is in stderr.log", f)
				}
				if want := strings.ReplaceAll(text, f, "REDACTED"); string(b) != want {
					t.Fatalf("stderr.log has %d bytes, want %d: the rest must pass unchanged", len(b), len(want))
				}
			})
		}
	}
}

func TestWorkerStderrHasNoPassword(t *testing.T) {
	t.Setenv("LOCKCHECK_TEST_WORKER", "leak")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := Start(Config{Client: "c1", Argv: []string{exe}, Dir: dir, Rec: history.NewRecorder(&strings.Builder{}, history.NewClock()),
		Init:    sdk.Message{Password: "S3CRET-run-pw", Lock: &sdk.Lock{Kind: "naive", Family: "mutex"}, Options: &sdk.Options{LeaseMs: 1000, TimeoutMs: 10}},
		Startup: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	b, err := os.ReadFile(filepath.Join(dir, "clients", "c1", "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "password=REDACTED") || strings.Contains(string(b), "S3CRET") {
		t.Fatalf("stderr.log: %q", b)
	}
}
