package repro

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/suite"
)

// --version's answer: a caught run says affected, runs all valid say not affected, and runs that show
// nothing (a build that failed: every run an error) say undetermined, with the failure's last line, never
// "not affected". Not being affected reads as good news: "not affected on N of N seeds".
func TestVersionAnswer(t *testing.T) {
	buildErr := "lockcheck: building worker redsync@99.99.99 failed (exit status 1): \x1b[31mgo: no network\x1b[0m; full log in /c/99.99.99.build.log"
	for _, tc := range []struct {
		name     string
		verdicts []string
		decided  bool
		affected bool
		line     string
	}{
		{"caught", []string{"invalid", "valid"}, true, true, "affected: caught on 1 of 2 seeds"},
		{"caught with a failed run", []string{"error", "invalid"}, true, true, "affected: caught on 1 of 2 seeds"},
		{"all valid", []string{"valid", "valid"}, true, false, "not affected on 2 of 2 seeds"},
		{"build failed", []string{"error", "error"}, false, false,
			"affected=undetermined: no run reached a verdict (2 of 2 failed): lockcheck: building worker redsync@99.99.99 failed (exit status 1): [31mgo: no network[0m; full log in /c/99.99.99.build.log"},
		{"one failed", []string{"valid", "error"}, false, false, "affected=undetermined: 1 of 2 runs failed, 0 unknown, none caught it: lockcheck: building"},
		{"unknown", []string{"valid", "unknown"}, false, false, "affected=undetermined: 1 of 2 runs unknown, none caught it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &suite.Report{}
			for _, v := range tc.verdicts {
				o := suite.Outcome{Case: suite.Case{Entry: "buggy", Args: []string{"--client", "redsync@99.99.99"}}, Verdict: v}
				if v == "error" {
					o.Violation = buildErr
				}
				rep.Outcomes = append(rep.Outcomes, o)
			}
			sides := Tally(rep)
			if len(sides) != 1 {
				t.Fatalf("sides %+v", sides)
			}
			a := sides[0].Answer()
			if a.Decided != tc.decided || a.Affected != tc.affected || !strings.HasPrefix(a.String(), tc.line) {
				t.Fatalf("answer %+v %q, want decided=%v affected=%v %q", a, a, tc.decided, tc.affected, tc.line)
			}
			if strings.ContainsRune(a.String(), '\x1b') {
				t.Fatalf("an escape reaches the terminal: %q", a)
			}
		})
	}
}
