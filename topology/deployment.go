package topology

import (
	"errors"
	"fmt"
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
