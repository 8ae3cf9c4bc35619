package bugreport

import (
	"fmt"
	"path/filepath"
)

// scheduleWorkload says what a schedule run did: the schedule's steps, which the run played in place of the
// random workload (its --clients, --hold and fault flags never ran), and its faults are its steps' own.
func (in *Input) scheduleWorkload() string {
	o := in.Meta.Options
	s := fmt.Sprintf("the steps of the schedule %s", filepath.Base(o.Schedule))
	if o.ScheduleSHA256 != "" {
		s += fmt.Sprintf(" (sha256 %.12s)", o.ScheduleSHA256)
	}
	if o.ScheduleAbout != "" {
		s += ": " + o.ScheduleAbout
	}
	return s + ". Each step ran once, in order, its faults among them; no random workload or fault plan ran."
}
