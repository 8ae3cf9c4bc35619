package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	lockcheck "github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/internal/safefile"
)

// The workers' sources travel inside the binary (package lockcheck, at the module's root): a binary installed or copied alone
// writes them out once under CacheDir()/src/<digest of the sources>/ and builds from there. The digest
// keeps two lockcheck versions sharing one cache from building each other's workers.
var embedded struct {
	once sync.Once
	root string
	err  error
}

// embeddedRoot writes the embedded sources out (once per process, under a lock shared with other
// processes) and returns the folder that holds go.mod and workers/<folder>/.
func embeddedRoot() (string, error) {
	embedded.once.Do(func() { embedded.root, embedded.err = Extract(lockcheck.Sources, "src") })
	return embedded.root, embedded.err
}

// Extract writes the embedded files of src out under the cache, in CACHE/under/DIGEST (a digest of every
// path and content, so two lockcheck versions never share one), once: under a lock shared with other
// processes, marked complete when whole. It returns that folder.
func Extract(src fs.FS, under string) (string, error) {
	digest, err := fsDigest(src)
	if err != nil {
		return "", err
	}
	cache, err := Cache() // this user's alone: a .complete marker there is lockcheck's own
	if err != nil {
		return "", err
	}
	base := filepath.Join(cache, under)
	root := filepath.Join(base, digest)
	if complete(root) {
		return root, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	unlock, err := safefile.Lock(root+".lock", 0o644)
	if err != nil {
		return "", err
	}
	defer unlock()
	if complete(root) {
		return root, nil // another process wrote it while this one waited
	}
	_ = os.RemoveAll(root) // one that died half-way
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(root, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") { // embed keeps no modes: the build and test scripts run
			mode = 0o755
		}
		return os.WriteFile(dst, b, mode)
	})
	if err != nil {
		return "", fmt.Errorf("writing out lockcheck's embedded files into %s: %w", root, err)
	}
	return root, os.WriteFile(filepath.Join(root, ".complete"), nil, 0o644)
}

// complete reports whether the sources at root were written out whole: its marker is there, and neither
// it nor root is a link.
func complete(root string) bool {
	d, derr := os.Lstat(root)
	m, merr := os.Lstat(filepath.Join(root, ".complete"))
	return derr == nil && merr == nil && d.IsDir() && m.Mode().IsRegular()
}

// fsDigest is a digest of every file's path and contents, in WalkDir's (lexical) order.
func fsDigest(src fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path.Clean(p), len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}
