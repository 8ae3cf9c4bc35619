package main

import (
	"slices"
	"testing"
)

// compare takes --server as run and suite do (it had only --servers); with --servers too it is refused.
func TestCompareTakesServer(t *testing.T) {
	if f := newCompareCmd().Flags().Lookup("server"); f == nil {
		t.Fatal("compare has no --server")
	}
	if got, err := withServer("valkey@8.1.8", nil); err != nil || !slices.Equal(got, []string{"valkey@8.1.8"}) {
		t.Errorf("--server: %v %v", got, err)
	}
	if _, err := withServer("valkey", []string{"redis"}); err == nil {
		t.Error("--server with --servers was taken")
	}
	if got, _ := withServer("", []string{"redis", "valkey"}); len(got) != 2 {
		t.Errorf("--servers alone: %v", got)
	}
}
