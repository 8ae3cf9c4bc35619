// Package prose checks the free texts of the files a user may be handed (a lock spec's or a schedule's
// about:): every run prints them to the terminal, where an escape sequence would act (set the title, hide
// the verdict line), and records and shows them in pages. The spec and the schedule refuse them alike.
package prose

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

// Max bounds such a text.
const Max = 1 << 10

// Line is s made one line (runs of white space, newlines too, become one space), or an error naming field
// when it is over max bytes or holds another control character (ESC, BEL, NUL, ...) or a bidirectional
// control (which reorders what a terminal shows).
func Line(field, s string, max int) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s, fmt.Errorf("%s: %d bytes, more than the %s it may have", field, len(s), safefile.Size(int64(max)))
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return s, fmt.Errorf("%s: has the control character %q", field, r)
		}
	}
	return s, nil
}
