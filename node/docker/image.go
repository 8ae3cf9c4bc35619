package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	dockerfiles "github.com/lockcheck/lockcheck/docker"
	"github.com/lockcheck/lockcheck/node/clockshift"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// ClockLabel on the offline image names the clockshift source it was built with.
const ClockLabel = "lockcheck.clockshift"

// BuildOffline builds DefaultImage with no registry: docker/redis-offline/Dockerfile over a rootfs/ of the
// host's redis-server (also as redis-sentinel), every library ldd says it loads, and the clockshift library
// (compiled here). Build output goes to log.
func BuildOffline(ctx context.Context, log io.Writer) error {
	setup()
	ctxTar, err := offlineContext()
	if err != nil {
		return err
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	defer p.Close()
	repo, tag, _ := strings.Cut(DefaultImage, ":")
	_, err = p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: bytes.NewReader(ctxTar), Repo: repo, Tag: tag, KeepImage: true, BuildLogWriter: log,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) {
			o.Labels = map[string]string{ClockLabel: clockshift.Version()}
		}}})
	if err != nil {
		return fmt.Errorf("build %s: %w", DefaultImage, err)
	}
	return nil
}

var lddPath = regexp.MustCompile(`(/\S+) \(0x`)

// offlineContext is the build context as a tar: the Dockerfile and rootfs/.
func offlineContext() ([]byte, error) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is not installed here, and the offline image copies the host's: apt-get install -y redis-server")
	}
	out, err := exec.Command("ldd", server).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", server, err)
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
	// redis-sentinel is redis-server under another name, as in Debian's package.
	if err := tw.WriteHeader(&tar.Header{Name: "rootfs/usr/bin/redis-sentinel", Typeflag: tar.TypeSymlink,
		Linkname: "redis-server", Mode: 0o777}); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
