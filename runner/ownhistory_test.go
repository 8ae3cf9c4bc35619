package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 29 item 7: a run never refuses the history it wrote itself as bad input. Were analyze to refuse it
// (here one with an event before its meta record, as runs wrote before the workers' events were held),
// `check` says bad input (254), but the run's error is lockcheck's (255) and says so.
func TestOwnHistoryRefusalIsNotBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	early := `{"type":"event","time":1,"client":"c1","f":"renewed"}` + "\n" + `{"type":"meta","time":2,"data":{"lock":"naive"}}` + "\n"
	if err := os.WriteFile(path, []byte(early), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := analyze(context.Background(), path, time.Second, nil, "results.json", "history.html", "")
	if !IsUsage(err) {
		t.Fatalf("analyze: %v, want the refusal check gives (bad input)", err)
	}
	if err = ownHistory(err); err == nil || IsUsage(err) || !strings.Contains(err.Error(), "a lockcheck bug, not bad input") {
		t.Fatalf("the run's error %v, want lockcheck's own, saying so", err)
	}
	if ownHistory(nil) != nil {
		t.Fatal("no error became one")
	}
}
