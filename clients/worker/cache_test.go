package worker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// sharedTmp is a temporary directory every user may write in, as /tmp is, with lockcheck's cache at its
// default there: HOME, XDG_CACHE_HOME and LOCKCHECK_CACHE unset, TMPDIR the directory. It returns the
// cache's path and a file outside the cache that no run may touch.
func sharedTmp(t *testing.T) (cache, victim string) {
	t.Helper()
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"HOME", "XDG_CACHE_HOME", "LOCKCHECK_CACHE"} {
		t.Setenv(k, "")
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("LOCKCHECK_WORKERS", filepath.Join("testdata", "workers"))
	victim = filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return CacheDir(), victim
}

func mkdirs(t *testing.T, mode os.FileMode, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// plantBuild puts into the cache at dir what another user of a shared /tmp could: a build of counting@7
// whose run is theirs, marked built with the stamp of the real sources (anyone can compute it), and a
// build log that links to victim.
func plantBuild(t *testing.T, dir, victim string, marked bool) {
	t.Helper()
	out := filepath.Join(dir, "workers", "counting", "7")
	write(t, filepath.Join(out, "run"), "#!/bin/sh\necho planted\n", 0o755)
	if marked {
		src, err := Folder("counting")
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(out, ".built"), sourceStamp(src), 0o644)
	}
	if err := os.Symlink(victim, out+".build.log"); err != nil {
		t.Fatal(err)
	}
}

// With HOME unset the cache is in the temporary directory, which other users may write in. A cache
// there that another user could have made (open to every user's writes, another's, or a link) is refused
// with a CacheError: its planted build is not run, its planted log link is not written through.
func TestCacheInSharedTmpRefused(t *testing.T) {
	s := Spec{Name: "counting", Folder: "counting", Versions: []string{"7"}}
	for _, c := range []struct {
		name   string
		marked bool // the planted run is marked built (else a build would write the log)
		plant  func(t *testing.T, cache, victim string)
	}{
		{"open to all, run marked built", true, func(t *testing.T, cache, victim string) {
			mkdirs(t, 0o777, cache)
		}},
		{"open to all, log linked out", false, func(t *testing.T, cache, victim string) {
			mkdirs(t, 0o777, cache)
		}},
		{"a link to another directory", true, func(t *testing.T, cache, victim string) {
			elsewhere := filepath.Join(t.TempDir(), "theirs")
			mkdirs(t, 0o700, elsewhere)
			if err := os.Symlink(elsewhere, cache); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's", false, func(t *testing.T, cache, victim string) {
			if os.Geteuid() != 0 {
				t.Skip("making a directory another user's needs root")
			}
			mkdirs(t, 0o700, cache)
			if err := os.Chown(cache, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			cache, victim := sharedTmp(t)
			c.plant(t, cache, victim)
			plantBuild(t, cache, victim, c.marked)
			var said bytes.Buffer
			argv, err := Build(context.Background(), s, "7", &said)
			if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
				t.Fatalf("the file the planted log links to was written: %q", b)
			}
			if err == nil {
				t.Fatalf("Build used the planted cache %s: argv %v", cache, argv)
			}
			if !errors.As(err, new(CacheError)) || !strings.Contains(err.Error(), "LOCKCHECK_CACHE") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want a CacheError, one line, saying what to do", err)
			}
			if said.Len() > 0 {
				t.Fatalf("it built: %q", said.String())
			}
		})
	}
}

// The sources a binary carries are written out under the cache and their build.sh run when their
// .complete marker is there: a planted marker and build.sh in a cache others may write in are refused.
func TestCacheSourcesPlantedRefused(t *testing.T) {
	cache, _ := sharedTmp(t)
	fsys := fstest.MapFS{"workers/x/build.sh": {Data: []byte("#!/bin/sh\necho real\n")}}
	digest, err := fsDigest(fsys)
	if err != nil {
		t.Fatal(err)
	}
	mkdirs(t, 0o777, cache)
	root := filepath.Join(cache, "src", digest)
	write(t, filepath.Join(root, "workers", "x", "build.sh"), "#!/bin/sh\necho planted\n", 0o755)
	write(t, filepath.Join(root, ".complete"), "", 0o644)
	got, err := Extract(fsys, "src")
	if err == nil || !errors.As(err, new(CacheError)) {
		t.Fatalf("extract: %q, %v: want a CacheError for the planted sources", got, err)
	}
}

// A cache lockcheck makes in a shared temporary directory is private (0700, this user's), and is used:
// the build runs and is cached.
func TestCacheInSharedTmpMadePrivate(t *testing.T) {
	cache, _ := sharedTmp(t)
	s := Spec{Name: "counting", Folder: "counting", Versions: []string{"7"}}
	for range 2 {
		if _, err := Build(context.Background(), s, "7", &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Lstat(cache)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || int(st.Uid) != os.Geteuid() {
		t.Fatalf("cache %s: mode %v, owner %d; want a directory, 0700, this user's", cache, fi.Mode(), st.Uid)
	}
	b, _ := os.ReadFile(filepath.Join(cache, "workers", "counting", "builds.count"))
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("built %d times, want once", n)
	}
}

// With HOME set the cache stays ~/.cache/lockcheck (a home is its owner's: no check is needed there).
func TestCacheDirWithHome(t *testing.T) {
	t.Setenv("LOCKCHECK_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if got, want := CacheDir(), "/home/someone/.cache/lockcheck"; got != want {
		t.Fatalf("CacheDir %s, want %s", got, want)
	}
}

// A temporary directory every user may write in, inside another (TMPDIR=/tmp/x, both sticky): the cache
// is made private in the inner one and used. The inner one another user's (who may rename what is in
// it) is refused.
func TestCacheInNestedSharedTmp(t *testing.T) {
	outer, _ := sharedTmp(t)
	inner := filepath.Join(filepath.Dir(outer), "inner")
	mkdirs(t, 0o777|os.ModeSticky, inner)
	t.Setenv("TMPDIR", inner)
	if dir, err := Cache(); err != nil || filepath.Dir(dir) != inner {
		t.Fatalf("Cache: %q %v; want one made in %s", dir, err, inner)
	}
	if os.Geteuid() != 0 {
		return // making a directory another user's needs root
	}
	if err := os.Chown(inner, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Cache(); !errors.As(err, new(CacheError)) || !strings.Contains(err.Error(), "another user's") {
		t.Fatalf("Cache in another user's shared directory: %v", err)
	}
}
