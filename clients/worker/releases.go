package worker

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Releases is where a worker's library lists its own releases: the registry the worker's build.sh fetches
// from, so that lockcheck bisect walks exactly the versions that can be built.
type Releases struct {
	Registry string // for messages: "Maven Central", "the Go module proxy", ...
	URL      string
	// Parse reads the registry's answer into version strings, in any order, unstable ones included.
	Parse func([]byte) ([]string, error)
}

// MavenCentral is an artifact's maven-metadata.xml.
func MavenCentral(group, artifact string) Releases {
	return Releases{Registry: "Maven Central", Parse: parseMaven,
		URL: "https://repo1.maven.org/maven2/" + strings.ReplaceAll(group, ".", "/") + "/" + artifact + "/maven-metadata.xml"}
}

// GoProxy is a module's @v/list on the Go module proxy.
func GoProxy(module string) Releases {
	return Releases{Registry: "the Go module proxy", Parse: parseLines,
		URL: "https://proxy.golang.org/" + strings.ToLower(module) + "/@v/list"}
}

// PyPI is a project's JSON on PyPI.
func PyPI(project string) Releases {
	return Releases{Registry: "PyPI", Parse: parsePyPI, URL: "https://pypi.org/pypi/" + project + "/json"}
}

// NPM is a package's document on the npm registry.
func NPM(pkg string) Releases {
	return Releases{Registry: "the npm registry", Parse: parseNPM, URL: "https://registry.npmjs.org/" + pkg}
}

func parseMaven(b []byte) ([]string, error) {
	var m struct {
		Versions []string `xml:"versioning>versions>version"`
	}
	if err := xml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("maven-metadata.xml: %w", err)
	}
	return m.Versions, nil
}

func parseLines(b []byte) ([]string, error) { return strings.Fields(string(b)), nil }

func parsePyPI(b []byte) ([]string, error) {
	var m struct {
		Releases map[string][]struct {
			Yanked bool `json:"yanked"`
		} `json:"releases"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("PyPI JSON: %w", err)
	}
	var out []string
	for v, files := range m.Releases {
		// A release with no files, or with every file yanked, cannot be installed.
		ok := false
		for _, f := range files {
			ok = ok || !f.Yanked
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, nil
}

func parseNPM(b []byte) ([]string, error) {
	var m struct {
		Versions map[string]struct {
			Deprecated any `json:"deprecated"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("npm registry JSON: %w", err)
	}
	var out []string
	for v := range m.Versions {
		out = append(out, v)
	}
	return out, nil
}

// Fetch asks the registry for the library's releases and returns the stable ones, oldest first.
func (r Releases) Fetch(ctx context.Context) ([]string, error) {
	if r.URL == "" {
		return nil, fmt.Errorf("no registry to list its releases")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, err
	}
	// npm's abbreviated document is a fraction of the full one and has every version.
	req.Header.Set("Accept", "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing releases on %s: %w", r.Registry, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("listing releases on %s: %w", r.Registry, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing releases on %s: %s answered %s", r.Registry, r.URL, resp.Status)
	}
	return r.Stable(b)
}

// Stable parses a registry's answer and keeps the stable releases, oldest first (semver order).
func (r Releases) Stable(answer []byte) ([]string, error) {
	all, err := r.Parse(answer)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, v := range all {
		if _, ok := ParseVersion(v); ok && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return CompareVersions(out[i], out[j]) < 0 })
	return out, nil
}

// ParseVersion reads a stable release number: an optional "v", then dot-separated numbers (3.16.7,
// v4.0.4, 2.10.6). Anything else (3.0.0-rc1, 5.0.0-beta.2, 3.0.0b1, 1.0-SNAPSHOT, +incompatible) is
// not a stable release.
func ParseVersion(v string) ([]int, bool) {
	s := strings.TrimPrefix(v, "v")
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, false
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// CompareVersions orders two stable releases numerically, a missing part counting as 0 (2.10 == 2.10.0).
func CompareVersions(a, b string) int {
	x, _ := ParseVersion(a)
	y, _ := ParseVersion(b)
	for i := 0; i < max(len(x), len(y)); i++ {
		var p, q int
		if i < len(x) {
			p = x[i]
		}
		if i < len(y) {
			q = y[i]
		}
		if p != q {
			if p < q {
				return -1
			}
			return 1
		}
	}
	return 0
}
