package worker

import (
	"bufio"
	"os"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// offline are what the build tools print when their registry cannot be reached (no network, no DNS, a
// proxy refusing): Maven, pip, npm and the go command, each in its own words.
var offline = []string{
	"Could not transfer artifact", "Could not resolve dependencies", "Unknown host", "UnknownHostException", // Maven
	"Failed to establish a new connection", "Temporary failure in name resolution", "NewConnectionError", // pip
	"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", // npm
	"dial tcp", "no such host", "i/o timeout", "connection refused", "network is unreachable", // go
}

// unreachable reads a failed build's log for the sign that its registry could not be reached, and names
// it: "cannot reach Maven Central: <the log's line>". ok is false for any other failure (a compile error).
func unreachable(s Spec, logPath string) (why string, ok bool) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, sign := range offline {
			if strings.Contains(line, sign) {
				return "cannot reach " + registryOf(s) + ": " + history.ClipText(strings.TrimSpace(line), 300), true
			}
		}
	}
	return "", false
}

// registryOf names where a worker's build fetches its library.
func registryOf(s Spec) string {
	if s.Releases.Registry != "" {
		return s.Releases.Registry
	}
	switch s.Language {
	case "java":
		return "Maven Central"
	case "python":
		return "PyPI"
	case "node":
		return "the npm registry"
	case "go":
		return "the Go module proxy"
	}
	return "its registry"
}
