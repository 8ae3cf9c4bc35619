package prose

import (
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	if got, err := Line("about", " two\n\tlines ", Max); err != nil || got != "two lines" {
		t.Fatalf("folded: %q, %v", got, err)
	}
	for _, bad := range []string{"\x1b]0;pwned\x07", "bell\a", "nul\x00", "rtl\u202eoverride", "isolate\u2066x", "del\x7f"} {
		if _, err := Line("about", bad, Max); err == nil || !strings.Contains(err.Error(), "about: has the control character") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := Line("about", strings.Repeat("x", Max+1), Max); err == nil || !strings.Contains(err.Error(), "more than the 1 KiB") {
		t.Errorf("over the bound: %v", err)
	}
}
