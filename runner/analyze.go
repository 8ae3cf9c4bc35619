package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/topology"
)

// ResolveHistory accepts a run directory or a history file.
func ResolveHistory(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", usagef("%v", err)
	}
	if fi.IsDir() {
		path = filepath.Join(path, "history.jsonl")
		if _, err := os.Stat(path); err != nil {
			return "", usagef("no history.jsonl in that directory: %v", err)
		}
	}
	return path, nil
}

// Analyze checks a history file and writes results.json and history.html beside it.
func Analyze(path string, timeout time.Duration) (*report.Results, error) {
	h, err := history.ReadFile(path)
	if err != nil {
		return nil, UsageError{err}
	}
	var meta Meta
	if h.Meta == nil {
		return nil, usagef("%s: no meta record: not a lockcheck history", path)
	}
	if err := json.Unmarshal(h.Meta.Data, &meta); err != nil {
		return nil, usagef("%s: meta record: %v", path, err)
	}
	if meta.Checks.Family == "" {
		k, err := locks.Lookup(meta.Lock)
		if err != nil {
			return nil, usagef("%s: %v", path, err)
		}
		meta.Checks = checksFor(k, Options{Permits: meta.Checks.Permits})
	}
	if k, err := locks.Lookup(meta.Lock); err == nil { // histories older than the field
		meta.Checks.Members = k.Topology == topology.Redlock
	}
	lin, cs := checkers(meta.Checks, timeout)
	results, valid := checker.Run(context.Background(), h, cs...)
	dir := filepath.Dir(path)
	opts, _ := json.Marshal(meta.Options)
	plan, _ := json.Marshal(meta.Plan)
	res := &report.Results{Valid: valid, Lock: meta.Lock, Topology: meta.Topology, Nemesis: meta.Nemesis,
		Seed: meta.Seed, Truncated: h.Truncated, Checkers: results, Faults: h.Windows(), Options: opts, Plan: plan,
		Versions: meta.Versions, StartupMs: meta.StartupMs,
		Files: map[string]string{"dir": dir, "history": path, "results": filepath.Join(dir, "results.json"),
			"html": filepath.Join(dir, "history.html")}}
	if c := meta.Client; c != nil { // a worker's run: the worker, not the Go lock of that name, is the control
		if c.Broken != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("worker %s is a negative control: it %s; a valid verdict here means the harness missed it", c.Name, c.Broken))
		}
	} else if k, err := locks.Lookup(meta.Lock); err == nil && k.Broken != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("%s is a negative control: it %s; a valid verdict here means the harness missed it", k.Name, k.Broken))
	}
	if !finished(h) {
		res.Notes = append(res.Notes, "no final heal was recorded: the run did not finish, and its prefix was checked")
	}
	if h.Truncated {
		res.Notes = append(res.Notes, "the history's last line was cut short (the run was killed); the prefix was checked")
	}
	if err := writeHTML(res.Files["html"], lin, h, results); err != nil {
		res.Notes = append(res.Notes, "no HTML: "+err.Error())
		delete(res.Files, "html")
	}
	if err := res.WriteJSON(dir); err != nil {
		return res, fmt.Errorf("write results: %w", err)
	}
	return res, nil
}

func writeHTML(path string, lin *checker.Linearizable, h *history.History, results []checker.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := lin.Visualize(f, h, report.Annotations(h, results)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// finished reports whether the run got as far as its final heal.
func finished(h *history.History) bool {
	for _, f := range h.Faults {
		if f.F == "heal" && f.Phase == "final" {
			return true
		}
	}
	return false
}
