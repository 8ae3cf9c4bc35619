package bugreport

import (
	"bytes"
	"fmt"
)

// writeSteps lists what each step of a schedule run did, with its outcome and time, so that a reader sees
// the step that mattered happened.
func (in *Input) writeSteps(b *bytes.Buffer) {
	lines := in.Results.StepLines()
	if len(lines) == 0 {
		return
	}
	b.WriteString("What each step did:\n\n")
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
	b.WriteString("\n")
}
