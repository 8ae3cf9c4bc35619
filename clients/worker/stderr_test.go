package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// A worker's stderr.log is kept with the run and served: the run's password never reaches it, wherever
// the stream's chunks fall (issue 22, item 3).
func TestStderrLogRedactsThePassword(t *testing.T) {
	const secret = "pw-0123456789abcdef"
	long := strings.Repeat("x", 64<<10-5) // the secret straddles the reader's 64 KiB buffer
	for name, text := range map[string]string{
		"line":     "auth " + secret + " ok\n",
		"straddle": long + secret + "\n",
		"no-eol":   long + long + secret,
		"twice":    secret + secret + "\n",
	} {
		t.Run(name, func(t *testing.T) {
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
			go func() { logStderr(r, log, secret); close(done) }()
			for i := 0; i < len(text); i += 1000 { // small writes, as a chatty library makes them
				_, _ = w.Write([]byte(text[i:min(i+1000, len(text))]))
			}
			w.Close()
			<-done
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), secret) {
				t.Fatal("the password is in stderr.log")
			}
			if want := strings.ReplaceAll(text, secret, "REDACTED"); string(b) != want {
				t.Fatalf("stderr.log has %d bytes, want %d: the rest must pass unchanged", len(b), len(want))
			}
		})
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
