package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func testCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("LOCKCHECK_CACHE", cache)
	t.Setenv("LOCKCHECK_WORKERS", filepath.Join("testdata", "workers"))
	return cache
}

// Parallel first uses build once (the lock file), and a cached build starts without building.
func TestBuildOnceInParallel(t *testing.T) {
	cache := testCache(t)
	s := Spec{Name: "counting", Folder: "counting", Versions: []string{"7"}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var said bytes.Buffer
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			_, errs[i] = Build(context.Background(), s, "7", &out)
			mu.Lock()
			said.Write(out.Bytes())
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(cache, "workers", "counting", "builds.count"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("built %d times, want once", n)
	}
	if n := strings.Count(said.String(), "building worker counting@7"); n != 1 {
		t.Fatalf("said it was building %d times: %q", n, said.String())
	}
	argv, err := Build(context.Background(), s, "7", &said)
	if err != nil || !strings.HasSuffix(argv[0], filepath.Join("counting", "7", "run")) {
		t.Fatalf("cached build: %v %v", argv, err)
	}
}

// A failed build names the version, its last line and its log, and is not cached: the next use builds
// again.
func TestBuildFailure(t *testing.T) {
	testCache(t)
	s := Spec{Name: "failing", Folder: "failing"}
	for range 2 {
		var said bytes.Buffer
		_, err := Build(context.Background(), s, "9.9", &said)
		if err == nil || !strings.Contains(err.Error(), "failing@9.9") || !strings.Contains(err.Error(), "version 9.9 not found") ||
			!strings.Contains(err.Error(), "build.log") {
			t.Fatalf("error: %v", err)
		}
		if !strings.Contains(said.String(), "building worker failing@9.9") {
			t.Fatalf("a failed build was cached: %q", said.String())
		}
	}
}

// A version the registry does not have (build.sh exits 4) is an UnknownError naming the worker, the
// version and the registry's words, and leaves no build folder or log behind.
func TestBuildUnknownVersion(t *testing.T) {
	testCache(t)
	s := Spec{Name: "unknown", Folder: "unknown"}
	_, err := Build(context.Background(), s, "9.9", io.Discard)
	var unknown UnknownError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "the registry has no unknown 9.9 (the registry says: no version 9.9)") {
		t.Fatalf("error: %v", err)
	}
	base := filepath.Join(CacheDir(), "workers", "unknown")
	for _, p := range []string{"9.9", "9.9.build.log"} {
		if _, err := os.Stat(filepath.Join(base, p)); err == nil {
			t.Fatalf("%s was kept", p)
		}
	}
}

func TestLookup(t *testing.T) {
	var unknown UnknownError
	for _, arg := range []string{"nosuch", "naive@2"} {
		if _, _, err := Lookup(arg); !errors.As(err, &unknown) {
			t.Fatalf("%s: %v, want an UnknownError", arg, err)
		}
	}
	s, v, err := Lookup("naive-safe")
	if err != nil || v != "1" || s.Folder != "naive" || len(s.Args) != 1 {
		t.Fatalf("naive-safe: %+v %s %v", s, v, err)
	}
}

// A Go binary (this test) cannot have its clock shifted through LD_PRELOAD; a dynamic C program can.
func TestShiftable(t *testing.T) {
	exe, _ := os.Executable()
	if ok, why := Shiftable([]string{exe}); ok || !strings.Contains(why, "Go binary") {
		t.Fatalf("go binary: %v %q", ok, why)
	}
	if ok, why := Shiftable([]string{"sh"}); !ok {
		t.Fatalf("sh: %q", why)
	}
}

// A cached build made from other sources than the worker folder's (the worker changed since) is stale
// and built again; an unchanged folder reuses it.
func TestBuildStaleWhenSourcesChange(t *testing.T) {
	cache := testCache(t)
	src := filepath.Join(t.TempDir(), "counting")
	if err := os.CopyFS(src, os.DirFS(filepath.Join("testdata", "workers", "counting"))); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKCHECK_WORKERS", filepath.Dir(src))
	s := Spec{Name: "counting", Folder: "counting", Versions: []string{"7"}}
	builds := func() int {
		b, _ := os.ReadFile(filepath.Join(cache, "workers", "counting", "builds.count"))
		return strings.Count(string(b), "\n")
	}
	for i, edit := range []bool{false, false, true} {
		if edit {
			if err := os.WriteFile(filepath.Join(src, "worker.extra"), []byte("a new option\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Build(context.Background(), s, "7", io.Discard); err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 1, 2}[i]; builds() != want {
			t.Fatalf("use %d: built %d times, want %d", i+1, builds(), want)
		}
	}
}
