package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/node"
)

// A Go panic in any goroutine, or a fatal error (out of memory, a stack overflow), makes the runtime exit
// with 2, which is also the exit code of an "unknown" verdict. Recovering cannot cover the fatal errors nor
// goroutines started by libraries, so lockcheck runs itself as a child and is its supervisor: the child
// writes the runtime's crash report to an extra pipe (debug.SetCrashOutput) as well as to stderr, and the
// supervisor maps any crash report, or a death by signal, to 255. stdin, stdout and stderr are the
// child's own (a terminal stays a terminal for the status line).
//
// Signals are the supervisor's to receive: it passes every INT, TERM and HUP to the child exactly once,
// through a second pipe, and the child disregards those sent to it directly. So a second signal counts
// only when it is a second one (a terminal's Ctrl-C, or a TERM sent to every process of a cgroup or by
// pkill, would otherwise reach the child twice and skip its teardown). The child runs in its own process
// group and dies with the supervisor: once the signal pipe's writer is gone it kills every process below it
// (nodes, workers, and the workers' descendants that left their group and session, which it reaps as their
// subreaper) and then itself, so kill -9 of lockcheck still leaves nothing behind. Pdeathsig is SIGTERM, not
// SIGKILL, so that the child lives to do so; until the child takes over SIGTERM (forwardedSignals), the
// runtime's default for it ends the child, which has started nothing yet.

const (
	childEnv = "LOCKCHECK_SUPERVISED" // set in the child
	crashFD  = 3                      // the child's crash pipe
	signalFD = 4                      // the child's signal pipe: one byte, the signal number, per signal
	// crashTestEnv makes the child crash on purpose, for the tests: panic (main goroutine), goroutine
	// (a panic in another goroutine) or fatal (a runtime fatal error).
	crashTestEnv = "LOCKCHECK_TEST_CRASH"
)

// supervised reports whether this process is the child; if it is, its crash report also goes to the pipe.
func supervised() bool {
	if os.Getenv(childEnv) == "" {
		return false
	}
	os.Unsetenv(childEnv)        // nor does anything lockcheck starts take itself for a child
	syscall.CloseOnExec(crashFD) // not to the nodes: the supervisor reads the pipe until every writer is gone
	syscall.CloseOnExec(signalFD)
	_ = debug.SetCrashOutput(os.NewFile(crashFD, "crash"), debug.CrashOptions{})
	// Its own process group is not the terminal's foreground one: with stty tostop, a write to the terminal
	// would stop it, unless SIGTTOU is ignored.
	signal.Ignore(syscall.SIGTTOU)
	crashForTest(os.Getenv(crashTestEnv))
	return true
}

// supervise runs lockcheck as a child with the same arguments and returns the exit code to use.
func supervise() int {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // a closed stderr is no reason to die
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck:", err)
		return exitHarness
	}
	crashR, crashW, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck:", err)
		return exitHarness
	}
	sigR, sigW, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck:", err)
		return exitHarness
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.ExtraFiles = []*os.File{crashW, sigR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	node.DieWithParent(cmd, syscall.SIGTERM)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	// Pdeathsig fires when the thread that forked the child exits: fork from this one, which lives as long
	// as the process.
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck:", err)
		return exitHarness
	}
	crashW.Close()
	sigR.Close()
	report := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(crashR, 1<<20))
		report <- b
	}()
	go func() {
		for s := range sigs {
			switch s {
			case syscall.SIGTSTP: // Ctrl-Z: job control stops the supervisor, so stop the child with it
				_ = cmd.Process.Signal(syscall.SIGSTOP)
				_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			case syscall.SIGCONT: // fg or bg
				_ = cmd.Process.Signal(syscall.SIGCONT)
			default:
				_, _ = sigW.Write([]byte{byte(s.(syscall.Signal))})
			}
		}
	}()
	err = cmd.Wait()
	crash := <-report
	return childExit(err, crash)
}

// childExit maps how the child ended to lockcheck's exit code.
func childExit(err error, crash []byte) int {
	if len(bytes.TrimSpace(crash)) > 0 {
		line := []byte("a Go fatal error, reported above")   // the runtime writes some of it to stderr only
		for _, l := range bytes.Split(crash, []byte("\n")) { // the runtime's own summary, where there is one
			if bytes.HasPrefix(l, []byte("panic: ")) || bytes.HasPrefix(l, []byte("fatal error: ")) {
				line = l
				break
			}
		}
		fmt.Fprintf(os.Stderr, "lockcheck: crashed (%s): a harness error, not a verdict\n", line)
		return exitHarness
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			fmt.Fprintf(os.Stderr, "lockcheck: died of %v: a harness error, not a verdict\n", ws.Signal())
			return exitHarness
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck:", err)
		return exitHarness
	}
	return 0
}

// forwardedSignals are the signals the supervisor passes on; those sent to the child directly are
// disregarded (they would count twice).
func forwardedSignals() <-chan os.Signal {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	out := make(chan os.Signal, 2)
	go func() {
		pipe := os.NewFile(signalFD, "signals")
		b := make([]byte, 1)
		for {
			if _, err := pipe.Read(b); err != nil { // the supervisor is gone (kill -9): so is lockcheck
				worker.KillDescendants()
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				return
			}
			out <- syscall.Signal(b[0])
		}
	}()
	return out
}

func crashForTest(how string) {
	switch how {
	case "panic":
		panic("lockcheck crash test")
	case "goroutine":
		done := make(chan struct{})
		go func() { defer close(done); panic("lockcheck crash test in a goroutine") }()
		<-done
	case "fatal":
		debug.SetMaxStack(1 << 16)
		var grow func(int) int
		grow = func(n int) int { return grow(n+1) + 1 }
		grow(0)
	}
}
