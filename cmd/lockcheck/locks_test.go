package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/kinds"
)

// `lockcheck locks` lists every kind with its family, topology and what it supports, and the client
// providers that registered.
func TestLocksListsKindsAndProviders(t *testing.T) {
	// Sequential: reads the kinds registry, which TestLocksListsASpecLock extends.
	var b bytes.Buffer
	if err := writeLocks(&b); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	kindsTable, _, _ := strings.Cut(b.String(), "\n\n") // the clients' table follows a blank line
	for _, line := range strings.Split(kindsTable, "\n") {
		if f := strings.Fields(line); len(f) >= 10 {
			rows[f[0]] = f
		}
	}
	if h := rows["LOCK"]; strings.Join(h[:10], " ") != "LOCK FAMILY TOPOLOGY RE-ENTRY FENCING FAIR GROUP WATCHDOG CONTROL WHAT" {
		t.Fatalf("header %v", h)
	}
	for _, n := range kinds.KindNames() {
		if _, ok := rows[n]; !ok {
			t.Errorf("%s is not listed", n)
		}
	}
	for name, want := range map[string]string{
		"reentrant":    "mutex single yes - - - yes -",
		"fenced":       "mutex single yes yes - - yes -",
		"fair-broken":  "mutex single yes - yes - yes yes",
		"multi":        "mutex single - - - yes yes -",
		"redlock-spec": "mutex redlock - - - - - -",
		"semaphore":    "semaphore single - - - - - -",
		"latch-broken": "latch single - - - - - yes",
		"naive":        "mutex single - - - - - yes",
		"rwlock":       "rwlock single yes - - - yes -",
	} {
		if got := strings.Join(rows[name][1:9], " "); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for _, w := range []string{"redisson", "naive", "redis-py"} { // the registered workers are listed
		if !strings.Contains(b.String(), "\n"+w+" ") {
			t.Errorf("worker %s is not listed:\n%s", w, b.String())
		}
	}

	kinds.RegisterProvider(kinds.Provider{Name: "example-worker", About: "a test's provider", Locks: []string{"reentrant", "fenced"}})
	kinds.RegisterProvider(kinds.Provider{Name: "example-unsafe", Locks: []string{"reentrant"}, Broken: "deletes unconditionally"})
	b.Reset()
	if err := writeLocks(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLIENT LOCKS CONTROL WHAT", // compared field by field: the columns widen with the names
		"example-unsafe reentrant yes negative control: deletes unconditionally",
		"example-worker reentrant,fenced - a test's provider"} {
		if !slices.ContainsFunc(strings.Split(b.String(), "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == want }) {
			t.Errorf("no line %q in:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "no worker is registered") {
		t.Error("says no worker is registered when two are")
	}
}
