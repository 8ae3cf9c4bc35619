package suite

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

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
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

func secs(s float64) string { return fmt.Sprintf("%.3f", s) }
