package runner

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/workloads/schedule"
)

// A schedule run's faults are its steps': the start line names them (it said "nemesis none", the refused
// flag's value), and a worker's hung bound counts the longest of them as a planned fault's duration.
func TestScheduleFaultsInStartLineAndHungBound(t *testing.T) {
	s, err := schedule.Load(filepath.Join("..", "examples", "schedules", "client-pause-watchdog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Nemesis = "none"
	o.Schedule = filepath.Join("..", "examples", "schedules", "client-pause-watchdog.yaml")
	test, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nemesisText(test), "client-pause (the schedule's steps)"; got != want {
		t.Errorf("start line's nemesis %q, want %q", got, want)
	}
	if got := nemesisText(&Test{Options: o}); got != "none" {
		t.Errorf("a run without a schedule: %q", got)
	}
	if got, want := hungSlack(o, s), worker.Slack+3*time.Second; got != want {
		t.Errorf("hung slack %s with a schedule's 3 s client-pause, want %s", got, want)
	}
	if got := hungSlack(o, nil); got != worker.Slack {
		t.Errorf("hung slack %s with no fault, want %s", got, worker.Slack)
	}
}
