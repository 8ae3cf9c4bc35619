package topology

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DeploymentError says an external deployment is not as described (an address nothing answers, a
// password it refuses, a toxiproxy server or proxy that is not there): bad input, not a harness fault.
type DeploymentError struct{ Err error }

func (e DeploymentError) Error() string { return e.Err.Error() }
func (e DeploymentError) Unwrap() error { return e.Err }

// IsDeployment reports whether err is an external deployment that is not as described.
func IsDeployment(err error) bool {
	var d DeploymentError
	return errors.As(err, &d)
}

// oneLine joins errors on one line, "; "-separated, under a head saying how many of how many failed: an
// error is printed as one line, however many nodes it names.
func oneLine(head string, of int, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = strings.Join(strings.Fields(e.Error()), " ") // no newline from a wrapped error either
	}
	return fmt.Errorf("%s (%d of %d): %s", head, len(errs), of, strings.Join(parts, "; "))
}

// checkAddrs refuses an address that is not host:port with a numeric port, before anything dials it
// ("" is left to the callers that require one).
func checkAddrs(addrs ...string) error {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("address %q: want host:port", a)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || host == "" {
			return fmt.Errorf("address %q: want host:port, port 1-65535", a)
		}
	}
	return nil
}

// checkToxiproxy refuses a toxiproxy API address that is neither an http URL with a host nor host:port
// (which toxiproxy's client takes as http).
func checkToxiproxy(api string) error {
	if api == "" {
		return nil
	}
	if !strings.Contains(api, "://") {
		if checkAddrs(api) != nil {
			return fmt.Errorf("toxiproxy %q: want its API's URL, e.g. http://127.0.0.1:8474", api)
		}
		return nil
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("toxiproxy %q: want its API's URL, e.g. http://127.0.0.1:8474", api)
	}
	return nil
}
