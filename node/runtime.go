package node

import (
	"context"
	"os"
	"os/exec"
	"syscall"
)

// Runtime runs a node's server. Processes (the default) runs child processes; node/docker runs containers.
type Runtime interface {
	// Run starts argv (argv[0] is redis-server) with env added, in dir, for the node called name. Called
	// again for a node whose server is down, it starts that node again: a restart.
	Run(ctx context.Context, name, dir string, argv, env []string) (Proc, error)
	// How names what an action ("kill", "pause") does here, for the history.
	How(action string) string
}

// Proc is one running server.
type Proc interface {
	Kill() error      // SIGKILL, or docker kill
	Pause() error     // SIGSTOP, or docker pause (the cgroup freezer)
	Resume() error    // SIGCONT, or docker unpause
	Terminate() error // SIGTERM, or docker stop
	Exited() <-chan struct{}
	Remove() error // after the end: free what the runtime made (a container); nothing for a process
}

// Processes runs servers as child processes of lockcheck that die with it (Pdeathsig).
type Processes struct{}

// How names the signal an action sends.
func (Processes) How(action string) string {
	switch action {
	case "kill":
		return "SIGKILL"
	case "pause":
		return "SIGSTOP"
	}
	return action
}

// Run starts one redis-server process.
func (Processes) Run(_ context.Context, _, dir string, argv, env []string) (Proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := start(cmd); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	return p, nil
}

type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's, set before exited closes
}

// ExitReason is how the process ended ("signal: killed"); call it once Exited is closed.
func (p *process) ExitReason() string {
	if p.err == nil {
		return "exited with status 0"
	}
	return p.err.Error()
}

func (p *process) signal(s syscall.Signal) error { return p.cmd.Process.Signal(s) }
func (p *process) Kill() error                   { return p.signal(syscall.SIGKILL) }
func (p *process) Pause() error                  { return p.signal(syscall.SIGSTOP) }
func (p *process) Resume() error                 { return p.signal(syscall.SIGCONT) }
func (p *process) Terminate() error              { return p.signal(syscall.SIGTERM) }
func (p *process) Exited() <-chan struct{}       { return p.exited }
func (p *process) Remove() error                 { return nil }
