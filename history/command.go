package history

import (
	"fmt"
	"slices"
	"strings"
)

// A history's recorded command line (RunMeta.Command) is data: a run directory is passed around (a CI
// artifact, a bug report's attachment) and anyone may have edited it. Whatever rebuilds or prints a run
// from it (shrink, report's command, the summary page) takes only the flags below that are safe to take
// from a file; the others name a command, an address or a path lockcheck would use, and are left out
// unless the user names them again (issue 36).

// FileSafe are lockcheck run's flags a command rebuilt from a file may take: each shapes the workload,
// the faults, the checks or which registered lock, library or pinned server runs, and names nothing
// lockcheck would execute, connect to, read or write. A flag not listed here is left out
// (TestRunFlagsFromFile places every flag of lockcheck run in FileSafe, Withheld or NotReplayed).
var FileSafe = []string{
	"lock", "client", "server", "topology", "nodes", "nemesis", "nemesis-interval", "nemesis-duration",
	"nemesis-targets", "nemesis-trigger", "quiet", "time", "clients", "threads", "keys", "lease", "watchdog",
	"wait", "timeout", "hold", "reentry", "seed", "persistence", "check-timeout", "check", "permits", "count",
	"readers", "on-lost", "group", "cross-thread", "force-unlock", "latency", "jitter", "clock-bump",
}

// Withheld are the flags a command rebuilt from a file leaves out, each with why.
var Withheld = map[string]string{
	"client-cmd":          "a command lockcheck would run",
	"server-bin":          "a binary lockcheck would run",
	"docker-image":        "an image lockcheck would run",
	"scripts":             "a directory lockcheck would load scripts from",
	"lock-spec":           "a file lockcheck would load a lock from",
	"schedule":            "a file lockcheck would read",
	"backend":             "where the nodes run (external: addresses lockcheck would connect to)",
	"external":            "a file naming addresses lockcheck would connect to",
	"external-addrs":      "addresses lockcheck would connect to, with your password",
	"external-sentinels":  "addresses lockcheck would connect to, with your password",
	"external-toxiproxy":  "an address lockcheck would connect to",
	"external-containers": "containers lockcheck would kill and pause",
	"external-master":     "a name lockcheck would ask the Sentinels for",
	"client-option":       "a setting the library takes verbatim (it may name an address or a file)",
}

// NotReplayed are flags no rebuilt command takes, whatever their value: where runs go and a dry run are
// the rebuilder's own choice, and a secret is never recorded (a run reads it from its environment).
var NotReplayed = []string{"results", "dry-run", "external-password"}

// FromFile says whether a recorded flag may be taken from a file and, when not, why.
func FromFile(name string) (ok bool, why string) {
	if slices.Contains(FileSafe, name) {
		return true, ""
	}
	if why, ok := Withheld[name]; ok {
		return false, why
	}
	return false, "not a flag known to be safe to take from a file"
}

// SplitCommand splits a recorded command line's flags (words of the form --name=value, after "lockcheck
// run") into those a rebuilt command may take and those it leaves out; NotReplayed flags are in neither.
func SplitCommand(words []string) (kept, left []string) {
	for _, w := range words {
		name, _, ok := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		if !ok || !strings.HasPrefix(w, "--") || slices.Contains(NotReplayed, name) {
			continue
		}
		if safe, _ := FromFile(name); safe {
			kept = append(kept, w)
		} else {
			left = append(left, w)
		}
	}
	return kept, left
}

// LeftOut says in one line which recorded flags were left out and why; "" when none was.
func LeftOut(flags []string) string {
	if len(flags) == 0 {
		return ""
	}
	parts := make([]string, len(flags))
	for i, w := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		_, why := FromFile(name)
		parts[i] = fmt.Sprintf("--%s=%q (%s)", name, value, why) // quoted: a hostile value stays one visible line
	}
	return "left out of the recorded command, which is data and may not name what lockcheck would run, connect to or read: " +
		strings.Join(parts, ", ")
}
