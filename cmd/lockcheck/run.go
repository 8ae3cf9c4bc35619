package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pathFlags are run's flags that name a file or directory.
var pathFlags = []string{"schedule", "lock-spec", "scripts", "external", "server-bin"}

func newRunCmd() *cobra.Command {
	o := runner.Defaults()
	var lockSpec string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Start Redis, drive a lock under faults, record the history and judge it",
		Args:  cobra.NoArgs,
		Example: `  lockcheck run --lock reentrant --nemesis partition --time 30s
  lockcheck run --lock naive --lease 300ms --hold 100ms-1s --time 15s
  lockcheck run --schedule examples/schedules/naive-stale-release.yaml --quiet 0s
  lockcheck run --topology sentinel --nemesis lagging-failover --nemesis-duration 9s --keys 4 --hold 2s-5s --time 60s
  lockcheck run --backend docker --lock reentrant --nemesis kill,pause --time 25s
  lockcheck run --backend external --external docker/compose/run/lockcheck.yml --nemesis partition,failover`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			if !cmd.Flags().Changed("seed") {
				o.Seed = time.Now().UnixNano() % 1_000_000
			}
			// Files the command names are recorded absolute: shrink, repro lines and the summary's command
			// run it again from anywhere.
			for _, name := range pathFlags {
				if f := cmd.Flags().Lookup(name); f != nil && f.Changed && f.Value.String() != "" {
					if abs, err := filepath.Abs(f.Value.String()); err == nil {
						_ = f.Value.Set(abs)
					}
				}
			}
			o.Command = commandLine(cmd, o.Seed)
			if !cmd.Flags().Changed("external-password") { // kept out of argv, which every local user can read
				o.ExternalFlags.Password = os.Getenv(redact.Flags["external-password"])
			}
			if err := useLockSpec(cmd, lockSpec, &o); err != nil {
				return err
			}
			if err := probeWorkerKind(cmd, &o); err != nil {
				return err
			}
			// The flags given: runner.Prepare fills the others in with a negative control's own run flags.
			o.Given = givenFlags(cmd)
			t, err := runner.Prepare(o) // every check that needs no process
			if err != nil {
				return err
			}
			t.WriteNotes(os.Stderr)
			if dryRun { // what a suite does to each of its entries first
				return nil
			}
			res, err := t.Execute(cmd.Context(), os.Stderr)
			if res != nil {
				res.Table(os.Stdout)
			}
			if errors.Is(err, runner.ErrCheckInterrupted) { // the run ended; its check was stopped
				fmt.Fprintln(os.Stderr, "lockcheck:", err)
				return exitError{exitUnknown}
			}
			if err != nil {
				return err
			}
			return exitError{res.Valid.ExitCode()}
		},
	}
	f := cmd.Flags()
	o.Flags(f)
	f.StringVar(&lockSpec, "lock-spec", "", "YAML file describing your own Lua lock (see examples/locks/), instead of --lock")
	for name := range redact.Flags {
		markSecret(f, name)
	}
	f.BoolVar(&dryRun, "dry-run", false, "check the flags and make the fault plan, start nothing")
	addWorkerFlags(f, &o)
	return cmd
}

func join(s []string) string { return strings.Join(s, ", ") }

// givenFlags names the flags set on the command line.
func givenFlags(cmd *cobra.Command) map[string]bool {
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { given[f.Name] = true })
	return given
}
