// Package textfile reads small facts out of text files the harness wrote (build logs, run output).
package textfile

import (
	"bufio"
	"os"
	"strings"
)

// LastLine returns the last non-blank line of the file at path, trimmed, or "" when it cannot be read.
// It streams, so a long log costs no more memory than its longest line (up to 1 MiB).
func LastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	return last
}
