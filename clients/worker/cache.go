package worker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CacheDir is $LOCKCHECK_CACHE, or ~/.cache/lockcheck ($XDG_CACHE_HOME/lockcheck), or, with neither HOME
// nor XDG_CACHE_HOME set, lockcheck-cache-UID in the temporary directory (one per user: a shared /tmp
// holds one for each).
func CacheDir() string {
	if d := os.Getenv("LOCKCHECK_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "lockcheck")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("lockcheck-cache-%d", os.Geteuid()))
}

// CacheError is a cache directory lockcheck will not use (bad input): another user could have put builds,
// sources or links in it.
type CacheError struct{ msg string }

func (e CacheError) Error() string { return e.msg }

// Cache returns CacheDir, made if it is missing, once it is sure that nobody but this user can have put
// anything in it: lockcheck runs the builds and build scripts the cache holds on the strength of its own
// markers (.built, .complete), so the cache, not each file in it, is what is checked. Below a directory
// every user may write in (/tmp, for a cache made without HOME), every directory down to the cache must be
// a real directory (no link), this user's and closed to others' writes, the first of them private (0700;
// lockcheck makes what is missing so); the cache itself is never writable by every user. A cache under no
// such directory (~/.cache/lockcheck in a home of one's own) is used as it is.
func Cache() (string, error) {
	dir, err := filepath.Abs(CacheDir())
	if err != nil {
		return "", err
	}
	missing, err := checkCache(dir)
	if err == nil && missing {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			_, err = checkCache(dir) // what was made, again: a link planted meanwhile is refused
		}
	}
	if err != nil {
		return "", CacheError{fmt.Sprintf("worker cache %s: %v: lockcheck runs what its cache holds, so it uses none another user could have written in; set LOCKCHECK_CACHE to a directory of your own", dir, err)}
	}
	return dir, nil
}

// checkCache walks the absolute path dir from / down, as Cache says. A link is followed only above the
// first directory every user may write in (there it is its owner's, or root's, own); the walk then starts
// again on the path it leads to. A directory of this user's (or root's) that others may not pass through
// ends the shared part: nobody else reaches below it. missing says that part of dir does not exist yet.
func checkCache(dir string) (missing bool, err error) {
	uid := uint32(os.Geteuid())
	for range 40 { // links followed, at most
		shared, below := "", 0 // the deepest directory every user may write in; the directories since
		next := ""
		cur := "/"
		parts := strings.Split(strings.TrimPrefix(filepath.Clean(dir), "/"), "/")
		for i, name := range parts {
			cur = filepath.Join(cur, name)
			fi, err := os.Lstat(cur)
			if errors.Is(err, fs.ErrNotExist) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				if shared != "" {
					return false, fmt.Errorf("%s is a symbolic link, under %s, which every user may write in", cur, shared)
				}
				real, err := filepath.EvalSymlinks(cur)
				if err != nil {
					return false, err
				}
				next = filepath.Join(append([]string{real}, parts[i+1:]...)...)
				break
			}
			if !fi.IsDir() {
				return false, fmt.Errorf("%s is not a directory", cur)
			}
			perm, owner := fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid
			if perm&0o002 != 0 { // another /tmp: what is below it is checked from here on
				switch {
				case i == len(parts)-1:
					return false, fmt.Errorf("every user may write in it (mode %04o)", perm)
				case fi.Mode()&fs.ModeSticky == 0:
					return false, fmt.Errorf("%s: every user may write in it and it is not sticky, so anyone could replace what is below it", cur)
				case owner != uid && owner != 0: // its owner may rename what others put in it
					return false, fmt.Errorf("%s: every user may write in it and it is another user's (uid %d)", cur, owner)
				}
				shared, below = cur, 0
				continue
			}
			if shared != "" {
				below++
				switch {
				case owner != uid:
					return false, fmt.Errorf("%s is not yours (owner uid %d), under %s, which every user may write in", cur, owner, shared)
				case below == 1 && perm&0o077 != 0:
					return false, fmt.Errorf("%s is not private (mode %04o, not 0700), under %s, which every user may write in", cur, perm, shared)
				case perm&0o022 != 0:
					return false, fmt.Errorf("%s is writable by others (mode %04o), under %s, which every user may write in", cur, perm, shared)
				}
			}
			if perm&0o001 == 0 && (owner == uid || owner == 0) {
				shared = "" // others cannot even pass through it: nobody else reaches what is below
			}
		}
		if next == "" {
			return false, nil
		}
		dir = next
	}
	return false, errors.New("too many symbolic links")
}

// readNoLink reads a small file of the cache's (a marker), not through a link.
func readNoLink(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<10))
}

// isRegular reports whether a build's folder is a directory and its file run a regular file, neither a link.
func isRegular(folder, run string) bool {
	d, derr := os.Lstat(folder)
	f, ferr := os.Lstat(run)
	return derr == nil && ferr == nil && d.IsDir() && f.Mode().IsRegular()
}
