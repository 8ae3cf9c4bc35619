package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	dockerfiles "github.com/lockcheck/lockcheck/docker"
	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// ClockLabel on the offline image names the clockshift source it was built with.
const ClockLabel = "lockcheck.clockshift"

// ServerLabel on an image built from a chosen server binary (ServerImage) holds the binary's sha256.
const ServerLabel = "lockcheck.server"

// BuildOffline builds DefaultImage with no registry: docker/redis-offline/Dockerfile over a rootfs/ of the
// host's redis-server (also as redis-sentinel), every library ldd says it loads, and the clockshift library
// (compiled here). Build output goes to log.
func BuildOffline(ctx context.Context, log io.Writer) error {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server is not installed here, and the offline image copies the host's: apt-get install -y redis-server")
	}
	return build(ctx, DefaultImage, server, nil, log)
}

// ServerImage is the tag of the offline image of the server binary at path whose sha256 is sum:
// lockcheck/NAME:VERSION-SHA (16 hex digits of it), so two binaries never share a tag.
func ServerImage(name, version, sum string) string {
	clean := func(s string) string {
		s = strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(s, "-"))
		return strings.Trim(s, ".-_")
	}
	return fmt.Sprintf("lockcheck/%s:%s-%s", clean(name), clean(version), sum[:min(16, len(sum))])
}

// EnsureServerImage builds the offline image of a chosen server binary (--server, --server-bin) unless an
// image of that tag, built from the same binary with the same clockshift library, is there already. The
// binary sits where the default image has the host's redis-server (/usr/bin/redis-server, the entrypoint;
// also as redis-sentinel), with every library ldd lists. It holds an flock in lockDir so that parallel runs
// build once, and says on say when it builds. It returns the image's tag.
func EnsureServerImage(ctx context.Context, bin, name, version, lockDir string, say io.Writer) (string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", err
	}
	sum, err := fileSHA256(real)
	if err != nil {
		return "", err
	}
	image := ServerImage(name, version, sum)
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return "", err
	}
	unlock, err := safefile.Lock(filepath.Join(lockDir, sum[:16]+".lock"), 0o600)
	if err != nil {
		return "", err
	}
	defer unlock()
	r, err := ConnectEngine(ctx)
	if err != nil {
		return "", err
	}
	img, err := r.cli.ImageInspect(ctx, image)
	r.cli.Close()
	if err == nil && img.Config != nil && img.Config.Labels[ServerLabel] == sum && img.Config.Labels[ClockLabel] == clockshift.Version() {
		return image, nil
	}
	fmt.Fprintf(say, "lockcheck: building docker image %s from %s (FROM scratch: the binary, its libraries, clockshift; once per binary)\n", image, bin)
	if err := build(ctx, image, real, map[string]string{ServerLabel: sum}, io.Discard); err != nil {
		return "", err
	}
	return image, nil
}

// build builds image from docker/redis-offline/Dockerfile over a rootfs/ of server, its libraries and the
// clockshift library, with the clockshift label and labels.
func build(ctx context.Context, image, server string, labels map[string]string, log io.Writer) error {
	setup()
	ctxTar, err := offlineContext(server)
	if err != nil {
		return err
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	defer p.Close()
	all := map[string]string{ClockLabel: clockshift.Version()}
	for k, v := range labels {
		all[k] = v
	}
	repo, tag, _ := strings.Cut(image, ":")
	_, err = p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: bytes.NewReader(ctxTar), Repo: repo, Tag: tag, KeepImage: true, BuildLogWriter: log,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) { o.Labels = all }}})
	if err != nil {
		return fmt.Errorf("build %s: %w", image, err)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var lddPath = regexp.MustCompile(`(/\S+) \(0x`)

// offlineContext is the build context as a tar: the Dockerfile and rootfs/ with server as
// /usr/bin/redis-server.
func offlineContext(server string) ([]byte, error) {
	out, err := exec.Command("ldd", server).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "not a dynamic executable") { // a static binary needs no libraries
		return nil, fmt.Errorf("ldd %s: %w: %s", server, err, strings.TrimSpace(string(out)))
	}
	files := map[string]string{"usr/bin/redis-server": server} // path in the image -> file on the host
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		files[strings.TrimPrefix(m[1], "/")] = m[1]
	}
	tmp, err := os.MkdirTemp("", "lockcheck-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	lib, err := clockshift.Library(tmp)
	if err != nil {
		return nil, err
	}
	files[strings.TrimPrefix(ClockLib, "/")] = lib

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body))}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add("Dockerfile", 0o644, dockerfiles.Offline); err != nil {
		return nil, err
	}
	for in, host := range files {
		real, err := filepath.EvalSymlinks(host)
		if err != nil {
			return nil, err
		}
		body, err := os.ReadFile(real)
		if err != nil {
			return nil, err
		}
		if err := add("rootfs/"+in, 0o755, body); err != nil {
			return nil, err
		}
	}
	// redis-sentinel is redis-server under another name, as in Debian's package (Valkey's binary takes the
	// name too; lockcheck starts every Sentinel as redis-server CONF --sentinel anyway).
	if err := tw.WriteHeader(&tar.Header{Name: "rootfs/usr/bin/redis-sentinel", Typeflag: tar.TypeSymlink,
		Linkname: "redis-server", Mode: 0o777}); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
