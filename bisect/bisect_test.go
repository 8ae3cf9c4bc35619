package bisect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

var releases = []string{"3.15.0", "3.15.1", "3.15.2", "3.15.3", "3.15.4", "3.15.5", "3.15.6", "3.16.0", "3.16.1",
	"3.16.2", "3.16.3", "3.16.4", "3.16.5", "3.16.6", "3.16.7", "3.16.8", "3.17.0"}

// fake is an oracle where the bug is present from index from (inclusive) to index to (exclusive), and
// the releases in skip do not build.
func fake(from, to int, skip ...string) (Oracle, *[]string) {
	var tried []string
	return func(_ context.Context, v string) Result {
		tried = append(tried, v)
		if slices.Contains(skip, v) {
			return Result{Verdict: Skip, Why: "does not build"}
		}
		i := slices.Index(releases, v)
		if i >= from && i < to {
			return Result{Verdict: Bad, Caught: 1, Seeds: 3}
		}
		return Result{Verdict: Good, Seeds: 3}
	}, &tried
}

func TestSearchFindsTheFix(t *testing.T) {
	oracle, tried := fake(0, 14) // bad through 3.16.6, fixed in 3.16.7
	var steps int
	out, err := Search(context.Background(), releases, "3.17.0", "3.15.0", oracle, func(Step) { steps++ })
	if err != nil {
		t.Fatal(err)
	}
	if out.First != "3.16.7" || out.Last != "3.16.6" || out.Older != Bad || !out.Exact() {
		t.Fatalf("got %+v, want the flip from bad 3.16.6 to good 3.16.7", out)
	}
	// Two ends, then a binary search over the 15 between them: at most 4 more.
	if len(*tried) > 6 || steps != len(*tried) || (*tried)[0] != "3.17.0" || (*tried)[1] != "3.15.0" {
		t.Fatalf("tried %v (%d progress calls)", *tried, steps)
	}
}

func TestSearchFindsTheRegression(t *testing.T) {
	for first := 1; first < len(releases); first++ {
		oracle, _ := fake(first, len(releases))
		out, err := Search(context.Background(), releases, releases[0], releases[len(releases)-1], oracle, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.First != releases[first] || out.Last != releases[first-1] || out.Older != Good {
			t.Fatalf("bug from %s: got %+v", releases[first], out)
		}
	}
}

// Skipped releases are stepped around; when every release between the last good and the first bad
// was skipped, the flip is not pinned and the outcome says which releases it may be.
func TestSearchSkips(t *testing.T) {
	oracle, tried := fake(0, 14, "3.16.2", "3.16.3")
	out, err := Search(context.Background(), releases, "3.17.0", "3.15.0", oracle, nil)
	if err != nil || out.First != "3.16.7" || !out.Exact() {
		t.Fatalf("got %+v, %v (tried %v)", out, err, *tried)
	}
	oracle, tried = fake(0, 14, "3.16.5", "3.16.6")
	out, err = Search(context.Background(), releases, "3.17.0", "3.15.0", oracle, nil)
	if err != nil || out.First != "3.16.7" || out.Last != "3.16.4" || !slices.Equal(out.Skipped, []string{"3.16.5", "3.16.6"}) {
		t.Fatalf("got %+v, %v (tried %v)", out, err, *tried)
	}
	if !slices.Contains(*tried, "3.16.5") || !slices.Contains(*tried, "3.16.6") {
		t.Fatalf("the skipped releases were not tried: %v", *tried)
	}
	// Everything between the ends skipped: still an answer, all of it ambiguous.
	oracle, _ = fake(0, 14, releases[1:len(releases)-1]...)
	out, err = Search(context.Background(), releases, "3.17.0", "3.15.0", oracle, nil)
	if err != nil || out.First != "3.17.0" || out.Last != "3.15.0" || len(out.Skipped) != len(releases)-2 {
		t.Fatalf("got %+v, %v", out, err)
	}
}

func TestSearchRefuses(t *testing.T) {
	oracle, _ := fake(0, 14, "3.15.1")
	for _, c := range []struct{ good, bad, want string }{
		{"3.15.0", "3.17.0", "--good 3.15.0 is not good: caught on 1 of 3 seeds; if the bug was fixed rather than introduced, the good side is the newer one: --good 3.17.0 --bad 3.15.0"},
		{"3.17.0", "3.16.8", "--bad 3.16.8 is not bad: valid on all 3 seeds"},
		{"3.17.0", "3.17.0", "the same release"},
		{"3.17.0", "3.14.9", "--bad 3.14.9 is not a stable release in the registry's list (17 releases, 3.15.0 to 3.17.0)"},
		{"3.17.0-rc1", "3.15.0", "--good 3.17.0-rc1 is not a stable release"},
		{"3.17.0", "3.15.1", "--bad 3.15.1 cannot be judged: does not build"},
	} {
		_, err := Search(context.Background(), releases, c.good, c.bad, oracle, nil)
		var ie InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--good %s --bad %s: %v; want an InputError with %q", c.good, c.bad, err, c.want)
		}
	}
}

func TestPick(t *testing.T) {
	for _, c := range []struct {
		lo, hi int
		skip   []int
		want   int
	}{{0, 1, nil, -1}, {0, 2, nil, 1}, {0, 2, []int{1}, -1}, {0, 10, nil, 5}, {0, 10, []int{5}, 6}, {0, 10, []int{5, 6}, 4}} {
		sk := map[int]bool{}
		for _, i := range c.skip {
			sk[i] = true
		}
		if got := pick(c.lo, c.hi, sk); got != c.want {
			t.Errorf("pick(%d, %d, %v) = %d, want %d", c.lo, c.hi, c.skip, got, c.want)
		}
	}
}
