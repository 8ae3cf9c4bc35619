package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockcheck/lockcheck/runner"
)

// signalName is how an interruption is named in the history's end record and on stderr.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// interruptContext is cancelled, with the signal as its cause, by the first of sigs: INT, TERM or HUP (a closed
// terminal is an interruption like Ctrl-C: the run heals, stops and gives its verdict). A second one
// exits at once: the history is ended as abandoned and lockcheck exits 255 without finishing its teardown
// (process nodes die with it; docker containers are left to lockcheck clean). SIGPIPE is caught so that a closed stdout or stderr (| head) returns errors
// instead of killing the run before its verdict is written.
func interruptContext(sigs <-chan os.Signal) (context.Context, func()) {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		first := signalName(<-sigs)
		cancel(fmt.Errorf("%s", first))
		fmt.Fprintf(os.Stderr, "lockcheck: %s: stopping (send it again to exit at once)\n", first)
		second := signalName(<-sigs)
		runner.Abandon(fmt.Sprintf("%s, then %s during teardown: exited at once", first, second))
		fmt.Fprintf(os.Stderr, "lockcheck: %s again: exiting at once, teardown abandoned\n", second)
		os.Exit(exitHarness)
	}()
	return ctx, func() { cancel(nil) }
}
