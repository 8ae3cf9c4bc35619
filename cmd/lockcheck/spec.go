package main

import (
	"errors"

	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

// useLockSpec registers the lock of --lock-spec FILE and makes it the lock under test; every error is bad
// input, reported before anything starts.
func useLockSpec(cmd *cobra.Command, path string, o *runner.Options) error {
	if path == "" {
		return nil
	}
	if cmd.Flags().Changed("lock") {
		return runner.UsageError{Err: errors.New("--lock and --lock-spec: choose one")}
	}
	k, err := lockspec.Register(path)
	if err != nil {
		return runner.UsageError{Err: err}
	}
	o.Lock = k.Name
	return nil
}

// listLockSpec registers a spec's lock for `lockcheck locks --lock-spec FILE`.
func listLockSpec(path string) error {
	if path == "" {
		return nil
	}
	if _, err := lockspec.Register(path); err != nil {
		return runner.UsageError{Err: err}
	}
	return nil
}
