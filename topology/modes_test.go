package topology

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// No file holding the password is readable by anyone but its owner, Sentinel's configs included after
// Sentinel rewrote them (it writes a new file with its own umask): node and Sentinel directories are 0700,
// and the files in them 0600.
func TestSentinelConfigsStayPrivate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	um := syscall.Umask(0o022) // the user's, before any server starts
	syscall.Umask(um)
	topo, err := Start(ctx, Spec{Kind: Sentinel, Clients: []string{"c1"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	for _, sn := range topo.Sentinels { // one more rewrite each, after start-up's
		c := topo.admin(sn.Addr())
		if err := c.Do(ctx, "SENTINEL", "FLUSHCONFIG").Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	seen := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		parts := strings.Split(rel, string(filepath.Separator))
		if d.IsDir() && len(parts) == 2 && fi.Mode().Perm() != 0o700 {
			t.Errorf("%s is %o, want 700", rel, fi.Mode().Perm())
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), topo.Password) {
			seen++
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s holds the password and is %o", rel, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The servers' umask is theirs alone: lockcheck's own files keep the user's.
	own := filepath.Join(dir, "own")
	if err := os.WriteFile(own, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o666&^os.FileMode(um) {
		t.Errorf("a file lockcheck made is %o under umask %o: the servers' umask leaked", fi.Mode().Perm(), um)
	}
	if seen < 6 {
		t.Fatalf("only %d files hold the password: want the 3 nodes' and 3 Sentinels' configs", seen)
	}
}
