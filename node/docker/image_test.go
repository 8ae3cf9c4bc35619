package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The offline image's context holds the chosen binary byte for byte as /usr/bin/redis-server (the
// entrypoint), redis-sentinel linked to it, and the libraries it loads; no engine is needed to check it.
func TestOfflineContextCarriesTheBinary(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server here")
	}
	real, _ := filepath.EvalSymlinks(bin)
	want, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := offlineContext(bin)
	if err != nil {
		t.Fatal(err)
	}
	files, links := map[string][]byte{}, map[string]string{}
	tr := tar.NewReader(bytes.NewReader(ctx))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
			continue
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	if !bytes.Equal(files["rootfs/usr/bin/redis-server"], want) {
		t.Errorf("rootfs/usr/bin/redis-server is not %s", real)
	}
	if links["rootfs/usr/bin/redis-sentinel"] != "redis-server" {
		t.Errorf("links %v: want redis-sentinel -> redis-server", links)
	}
	libc := false
	for name := range files {
		libc = libc || strings.Contains(name, "/libc.so")
	}
	if !libc || files["Dockerfile"] == nil || files["rootfs"+ClockLib] == nil {
		t.Errorf("the context lacks libc, the Dockerfile or the clock library: %d files", len(files))
	}
}

// Two binaries never share a tag; the tag names the server and version.
func TestServerImageTag(t *testing.T) {
	a := ServerImage("valkey", "8.1.8", "235024f98d43e763b0539e2049b97633293474e828945d050871e0f74eff9379")
	b := ServerImage("valkey", "8.1.8", "335024f98d43e763b0539e2049b97633293474e828945d050871e0f74eff9379")
	if a != "lockcheck/valkey:8.1.8-235024f98d43e763" || a == b {
		t.Errorf("tags %q and %q", a, b)
	}
	if got := ServerImage("My_Server", "1.0.0", "ab"); got != "lockcheck/my_server:1.0.0-ab" {
		t.Errorf("tag %q", got)
	}
}
