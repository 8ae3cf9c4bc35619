package worker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The registries' answers, recorded (PyPI's trimmed to the releases and their files' yanked flags):
// each worker's list parses to its stable releases in semver order, pre-releases and odd tags left out.
func TestReleasesFromRecordedAnswers(t *testing.T) {
	for _, c := range []struct {
		worker, file string
		count        int
		has          []string // in this order, adjacent
		not          []string
	}{
		{"redisson", "redisson-maven-metadata.xml", 0, []string{"3.16.5", "3.16.6", "3.16.7", "3.16.8", "3.17.0"}, nil},
		{"redis-py", "redis-pypi.json", 0, []string{"2.10.5", "2.10.6", "3.0.0", "3.0.1"}, []string{"3.0.0.post1", "4.0.0rc1", "4.0.0b1"}},
		{"pottery", "pottery-pypi.json", 0, []string{"0.9", "0.10", "0.11"}, nil},
		{"node-redlock", "redlock-npm.json", 16, []string{"4.1.0", "4.2.0"}, []string{"5.0.0-beta.1", "5.0.0-beta2"}},
		// The proxy's @v/list as this machine sees it: only the versions it has been asked for lately.
		{"redsync", "redsync-v4-list.txt", 8, []string{"v4.11.0", "v4.12.1", "v4.13.0"}, nil},
	} {
		s, ok := Get(c.worker)
		if !ok || s.Releases.Parse == nil {
			t.Fatalf("%s: no registered release list", c.worker)
		}
		b, err := os.ReadFile(filepath.Join("testdata", "releases", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Releases.Stable(b)
		if err != nil {
			t.Fatalf("%s: %v", c.worker, err)
		}
		if c.count > 0 && len(got) != c.count {
			t.Errorf("%s: %d releases %v, want %d", c.worker, len(got), got, c.count)
		}
		i := slices.Index(got, c.has[0])
		if i < 0 || i+len(c.has) > len(got) || !slices.Equal(got[i:i+len(c.has)], c.has) {
			t.Errorf("%s: want %v in a row, got %v", c.worker, c.has, got)
		}
		for _, v := range c.not {
			if slices.Contains(got, v) {
				t.Errorf("%s: %s is not a stable release", c.worker, v)
			}
		}
		if !slices.IsSortedFunc(got, CompareVersions) {
			t.Errorf("%s: not in semver order: %v", c.worker, got)
		}
	}
	if _, err := MavenCentral("org.redisson", "redisson").Stable([]byte("<html>not found")); err == nil {
		t.Error("an HTML page parsed as maven-metadata.xml")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"3.9.1", "3.10.0", -1}, {"v4.0.10", "v4.0.9", 1}, {"2.10", "2.10.0", 0}, {"0.9", "0.10", -1}} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	for _, v := range []string{"1.0-SNAPSHOT", "3.0.0rc1", "v2.0.0+incompatible", "4", "1.01.0", ""} {
		if _, ok := ParseVersion(v); ok {
			t.Errorf("%q taken as a stable release", v)
		}
	}
}
