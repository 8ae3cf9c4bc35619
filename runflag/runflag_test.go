package runflag

import (
	"errors"
	"testing"
	"time"
)

// Each form reads what the command line reads and refuses the rest in the words a spec's reader is shown;
// a bound's refusal is a RangeError that names its flag.
func TestForms(t *testing.T) {
	for _, c := range []struct {
		flag, value, want string // want "" : accepted
	}{
		{"--clients", "4", ""}, {"--clients", "many", "want an integer"},
		{"--time", "10s", ""}, {"--time", "soon", "want a duration such as 300ms"},
		{"--time", "25h", "--time must be at most 24h0m0s, got 25h0m0s"},
		{"--lease", "1s-10s", ""}, {"--lease", "0", ""}, {"--lease", "soon", "want a duration such as 300ms, or a range such as 1s-10s"},
		{"--lease", "500us", "--lease must be at least 1ms (it is sent to Redis in whole milliseconds), got 500µs"},
		{"--lease", "0-2s", "--lease 0s-2s: every value drawn from the range must be at least 1ms (it is sent to Redis in whole milliseconds): start it at 1ms or more"},
		{"--hold", "10ms-200ms", ""}, {"--hold", "2s-1s", `range "2s-1s": want 0 <= min <= max`},
		{"--reentry", "0.2", ""}, {"--reentry", "NaN", "want a chance in [0, 1] such as 0.2"},
		{"--readers", "3:1", ""}, {"--readers", "3", "want READERS:WRITERS, e.g. 3:1"}, {"--readers", "3:x", "want READERS:WRITERS, e.g. 3:1"},
		{"--quiet", "1s", ""}, {"--quiet", "-1s", ""}, // --quiet's range is --time's: the run checks the two together
	} {
		f, ok := Lookup(c.flag)
		if !ok {
			t.Fatalf("%s: no row", c.flag)
		}
		err := f.Check(c.value)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v, want it accepted", c.flag, c.value, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s %s: %v, want %q", c.flag, c.value, err, c.want)
		case err != nil && errors.As(err, new(RangeError)) != (c.want[:2] == "--"):
			t.Errorf("%s %s: %v: a RangeError exactly when a bound refused it", c.flag, c.value, err)
		}
	}
	if lo, hi, err := ParseDurationRange("1s-10s"); lo != time.Second || hi != 10*time.Second || err != nil {
		t.Errorf("1s-10s: %s %s %v", lo, hi, err)
	}
	if lo, hi, err := ParseDurationRange("5s"); lo != 5*time.Second || hi != 0 || err != nil {
		t.Errorf("5s: %s %s %v", lo, hi, err)
	}
	seen := map[string]bool{}
	for _, f := range Flags {
		if seen[f.Name] || f.Form == 0 {
			t.Errorf("%s: a second row, or no form", f.Name)
		}
		seen[f.Name] = true
	}
}
