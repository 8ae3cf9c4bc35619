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
			bind, err := listenAddr(cmd.Context(), addr, remote)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", bind)
			if err != nil {
				return runner.UsageError{Err: fmt.Errorf("--addr %s: %v", addr, err)}
			}
			h, err := store.Handler(dir, serveHosts(addr, ln.Addr().(*net.TCPAddr).Port, remote))
			if err != nil {
				ln.Close()
				return runner.UsageError{Err: err}
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

// lookupIP resolves --addr's host name (a test stands in names this machine may not have).
var lookupIP = func(ctx context.Context, host string) ([]net.IP, error) {
	return net.DefaultResolver.LookupIP(ctx, "ip", host)
}

// listenAddr is the address to bind for --addr: an address beyond this machine (an empty host is every
// interface) is refused unless allowed, and a name is resolved here and refused unless every address it
// has is loopback; the first (IPv4 first) is bound, so that what is bound is what was checked.
func listenAddr(ctx context.Context, addr string, remote bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", runner.UsageError{Err: fmt.Errorf("--addr %s: %v", addr, err)}
	}
	beyond := runner.UsageError{Err: fmt.Errorf("--addr %s is not a loopback address: serving the store beyond this machine needs --allow-remote", addr)}
	if host == "" || net.ParseIP(host) != nil {
		if ip := net.ParseIP(host); !remote && (ip == nil || !ip.IsLoopback()) {
			return "", beyond
		}
		return addr, nil
	}
	ips, err := lookupIP(ctx, host)
	if err == nil && len(ips) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return "", runner.UsageError{Err: fmt.Errorf("--addr %s: cannot resolve %s: %v", addr, host, err)}
	}
	pick := ips[0]
	for _, ip := range ips {
		if !remote && !ip.IsLoopback() {
			return "", runner.UsageError{Err: fmt.Errorf("--addr %s: %s is also %s, not a loopback address: serving the store beyond this machine needs --allow-remote", addr, host, ip)}
		}
		if pick.To4() == nil && ip.To4() != nil {
			pick = ip
		}
	}
	return net.JoinHostPort(pick.String(), port), nil
}

// serveHosts are the names serve answers to (see store.Hosts): the loopback ones, the host --addr gave,
// and with --allow-remote every address and this machine's name.
func serveHosts(addr string, port int, remote bool) store.Hosts {
	h := store.Hosts{Port: port, AnyAddress: remote}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		h.Names = append(h.Names, host)
	}
	if name, err := os.Hostname(); remote && err == nil {
		h.Names = append(h.Names, name)
	}
	return h
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
