package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/lockcheck/lockcheck/report/store"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	dir, addr, remote := "results", "127.0.0.1:8080", false
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the results store: an index of every run, each linking to its summary page and files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return runner.UsageError{Err: fmt.Errorf("--results %s: not a results directory", dir)}
			}
			if err := loopbackOnly(addr, remote); err != nil {
				return err
			}
			h, err := store.Handler(dir)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return runner.UsageError{Err: fmt.Errorf("--addr %s: %v", addr, err)}
			}
			// localhost could resolve anywhere: what counts is the address actually bound.
			if ip := ln.Addr().(*net.TCPAddr).IP; !remote && !ip.IsLoopback() {
				ln.Close()
				return runner.UsageError{Err: fmt.Errorf("--addr %s bound %s, not a loopback address (--allow-remote to serve beyond this machine)", addr, ip)}
			}
			return serve(cmd.Context(), ln, h, dir)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "results", dir, "the results directory to serve")
	f.StringVar(&addr, "addr", addr, "host:port to listen on (a loopback address unless --allow-remote)")
	f.BoolVar(&remote, "allow-remote", false, "allow a non-loopback --addr: anyone who reaches it can read the histories")
	return cmd
}

// loopbackOnly refuses an address beyond this machine (an empty host is every interface) unless allowed.
func loopbackOnly(addr string, remote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return runner.UsageError{Err: fmt.Errorf("--addr %s: %v", addr, err)}
	}
	if remote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return runner.UsageError{Err: fmt.Errorf("--addr %s is not a loopback address: serving the store beyond this machine needs --allow-remote", addr)}
	}
	return nil
}

// serve answers until the context ends (Ctrl-C, SIGTERM), then lets requests in flight finish.
func serve(ctx context.Context, ln net.Listener, h http.Handler, dir string) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "lockcheck: serving %s on http://%s/ (Ctrl-C stops)\n", dir, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-done; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	fmt.Fprintln(os.Stderr, "lockcheck: stopped serving")
	return err
}
