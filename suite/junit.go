package suite

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

// CheckJUnit finds, before anything runs, a --junit path the report could not be written to at the end:
// anything but a regular file in its place (a directory; a FIFO could block the write; a device such as
// /dev/zero would swallow the report), an existing file not writable, or,
// for a new file, a nearest existing directory that is not one or where nothing can be created (missing
// directories below it are made at the end, as the suite's own are). It leaves nothing behind.
func CheckJUnit(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 { // a checkout's results may hold one
		return fmt.Errorf("--junit %s: a symbolic link: lockcheck writes no report through a link it did not make; name the file itself, or remove the link", path)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("--junit %s: a directory, not a file", path)
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("--junit %s: not a regular file (%s)", path, safefile.Kind(fi.Mode()))
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // no O_TRUNC: the old report stays until the new one
		if err != nil {
			return fmt.Errorf("--junit %s: cannot write there: %v", path, unwrapPath(err))
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--junit %s: cannot write there: %v", path, unwrapPath(err))
	}
	dir := filepath.Dir(path)
	for {
		fi, err = os.Stat(dir)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a directory", dir)
	}
	if err == nil { // only creating a file there tells (permissions, a read-only file system, /proc)
		var f *os.File
		if f, err = os.CreateTemp(dir, ".lockcheck-junit-*"); err == nil {
			f.Close()
			err = os.Remove(f.Name())
		}
	}
	if err != nil {
		return fmt.Errorf("--junit %s: cannot write there: %v", path, unwrapPath(err))
	}
	return nil
}

// JUnit's common schema (the one CI dashboards read): one testsuite, one testcase per case and round.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML. A report with no outcomes is a failure: a suite that ran
// nothing tested nothing.
func WriteJUnit(path string, r *Report) error {
	s := junitSuite{Name: "lockcheck." + r.Name, Time: secs(r.Seconds)}
	for _, o := range r.Outcomes {
		c := junitCase{Name: roundID(o), Classname: "lockcheck." + r.Name + "." + o.Entry, Time: secs(o.Seconds),
			SystemOut: "lockcheck run " + strings.Join(o.Args, " ")}
		if !o.Met {
			msg := fmt.Sprintf("want %s, got %s", o.Case.expectText(), o.Verdict)
			if o.Violation != "" {
				msg += ": " + o.Violation
			}
			c.Failure = &junitFailure{Message: msg, Type: o.Verdict, Text: msg + "\n" + c.SystemOut}
			s.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	if len(s.Cases) == 0 {
		msg := "the suite ran nothing"
		if r.Stopped != "" {
			msg += " (" + r.Stopped + ")"
		}
		s.Cases = append(s.Cases, junitCase{Name: "suite", Classname: "lockcheck." + r.Name,
			Failure: &junitFailure{Message: msg, Type: "empty", Text: msg}})
		s.Failures++
	}
	s.Tests = len(s.Cases)
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { // as CheckJUnit allowed
		return err
	}
	// Checked again as it is opened, as CheckJUnit: no link (O_NOFOLLOW), and a regular file or nothing
	// (O_NONBLOCK: a FIFO put there since the check fails instead of blocking; a device is refused).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("--junit %s: not a regular file (%s)", path, safefile.Kind(fi.Mode()))
	}
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Write(append([]byte(xml.Header), append(b, '\n')...)); err != nil {
		return err
	}
	return f.Close()
}

func secs(s float64) string { return fmt.Sprintf("%.3f", s) }
