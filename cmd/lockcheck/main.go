// Command lockcheck runs Jepsen-style correctness and chaos tests against Redis-based distributed locks.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// Exit codes are Jepsen's.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitUsage   = 254
	exitHarness = 255
	// exitInterrupted is a run stopped before it started (no verdict at all), as a shell reports SIGINT.
	exitInterrupted = 130
)

// exitError carries a verdict's exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	if !supervised() {
		os.Exit(supervise()) // crashes are 255: see supervise.go
	}
	softMemoryLimit()
	ctx, stop := interruptContext(forwardedSignals())
	code := execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// memoryLimit is the heap size past which Go's collector works harder instead of letting the heap grow.
// Without it the heap grows to twice what is live: the check of a million operations has about 500 MB
// live at its peak and reached 1.05 GB of RSS; with it, about 775 MB, for about the same CPU (5.9-6.1 s).
// A process whose live data exceeds the limit runs slower (the collector takes at most half the CPU), never
// out of memory.
const memoryLimit = 768 << 20

// softMemoryLimit sets memoryLimit unless GOMEMLIMIT says otherwise.
func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// execute runs the CLI and maps every outcome to an exit code, printing one line for an error.
func execute(ctx context.Context, args []string) int {
	redis.SetLogger(quiet{}) // go-redis logs pool chatter that faults provoke; outcomes are in the history
	root := newRoot()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var ee exitError
	switch {
	case err == nil:
		return exitValid
	case errors.As(err, &ee):
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "lockcheck:", oneLine(err))
	if runner.IsInterrupted(err) {
		return exitInterrupted
	}
	if runner.IsUsage(err) || errors.As(err, new(suite.DirError)) || !ran(cmd) {
		return exitUsage // bad flags, arguments or input
	}
	return exitHarness
}

// oneLine is an error as one line: joined errors (several nodes failing at once) are "; "-separated.
func oneLine(err error) string {
	return strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...interface{}) {}

// ran reports whether a command got as far as its RunE (so an error is not about its flags).
func ran(cmd *cobra.Command) bool { return cmd != nil && cmd.Annotations["ran"] == "yes" }

func markRan(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations["ran"] = "yes"
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "lockcheck",
		Short:         "Jepsen-style correctness and chaos tests for Redis-based distributed locks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newCheckCmd(), newReportCmd(), newLocksCmd(), newImagesCmd(), newCleanCmd(), newWorkerCheckCmd(),
		newSuiteCmd(), newMergeCmd(), newCompareCmd(), newReproCmd(), newBisectCmd(), newShrinkCmd(), newExploreCmd(), newServeCmd(), newVersionCmd(), newWorkersCmd())
	return root
}
