package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/known"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/report/page"
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

// Analyze checks a run's history and writes the run's results.json and history.html beside it.
func Analyze(path string, timeout time.Duration) (*report.Results, error) {
	return analyze(context.Background(), path, timeout, nil, "results.json", "history.html", "")
}

// Check re-checks a history offline. Its outputs are named after the input (history.jsonl gives
// history.check.json and history.check.html), so a re-check never replaces what the run itself wrote
// (results.json with "interrupted"), nor files that lockcheck did not write. An interrupted check writes
// nothing and returns ErrCheckInterrupted.
func Check(ctx context.Context, path string, timeout time.Duration) (*report.Results, error) {
	return CheckProof(ctx, path, timeout, "")
}

// CheckProof is Check that also writes, when the history is invalid, the proof excerpt at proof (none when
// proof is "").
func CheckProof(ctx context.Context, path string, timeout time.Duration, proof string) (*report.Results, error) {
	if proof != "" && filepath.Clean(proof) == filepath.Clean(path) {
		return nil, usagef("--proof %s: that is the history being checked", proof)
	}
	stem := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	type outcome struct {
		res *report.Results
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := analyze(ctx, path, timeout, nil, stem+".check.json", stem+".check.html", proof)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done(): // porcupine's search does not watch ctx: leave it, the process is about to exit
		return nil, ErrCheckInterrupted
	}
}

// ErrCheckInterrupted is a check stopped by a signal before its verdict.
var ErrCheckInterrupted = errors.New("check interrupted before its verdict; nothing written")

// analyze judges the history at path. own is the run's own lock when it is not registered (a spec lock
// judged right after its run, as if registered); nil otherwise. An invalid porcupine verdict's proof
// excerpt is written at proof, unless that is "".
func analyze(ctx context.Context, path string, timeout time.Duration, own *kinds.Kind, resultsName, htmlName, proof string) (*report.Results, error) {
	h, err := history.ReadFile(path)
	if err != nil {
		return nil, UsageError{err}
	}
	lookup := func(name string) (*kinds.Kind, error) {
		if own != nil && own.Name == name {
			return own, nil
		}
		return kinds.Lookup(name)
	}
	meta, err := readMeta(path, h, lookup)
	if err != nil {
		return nil, err
	}
	var p nemesis.Plan // re-encoded, as it always was: a history without a plan gets an empty one
	if len(meta.Plan) > 0 && string(meta.Plan) != "null" {
		if err := json.Unmarshal(meta.Plan, &p); err != nil {
			return nil, usagef("%s: history line %d: meta record: plan: %v", path, h.MetaLine, err)
		}
	}
	dir := filepath.Dir(path)
	files := map[string]string{"dir": dir, "history": path, "results": filepath.Join(dir, resultsName),
		"html": filepath.Join(dir, htmlName)}
	if proof != "" {
		files["proof"] = proof
	}
	for _, k := range []string{"results", "html", "proof"} {
		if err := report.Overwritable(files[k]); files[k] != "" && err != nil {
			return nil, UsageError{err}
		}
	}
	delete(files, "proof") // listed once written
	family, err := kinds.FamilyNamed(meta.Checks.Family)
	if err != nil {
		return nil, usagef("%s: meta record: %v", path, err)
	}
	lin, cs := family.Checkers(kinds.Checks(meta.Checks), timeout)
	results, valid := runCheckers(ctx, h, lin, cs, tooLongForTimeline(h) != "")
	opts, _ := json.Marshal(meta.Options)
	plan, _ := json.Marshal(p)
	res := &report.Results{Valid: valid, Lock: meta.Lock, Topology: meta.Topology, Nemesis: meta.Nemesis,
		Seed: meta.Seed, Truncated: h.Truncated, Checkers: results, Faults: h.Windows(), Options: opts, Plan: plan,
		Versions: meta.Versions, StartupMs: meta.StartupMs, ReadyMs: meta.ReadyMs, Files: files}
	if c := meta.Client; c != nil { // a worker's run: the worker, not the Go lock of that name, is the control
		if c.Broken != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("worker %s is a negative control: it %s; a valid verdict here means the harness missed it", c.Name, c.Broken))
		}
		if c.Go != nil {
			res.Notes = append(res.Notes, mixedNote(c, h))
		}
	} else if k, err := lookup(meta.Lock); err == nil && k.Broken != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("%s is a negative control: it %s; a valid verdict here means the harness missed it", k.Name, k.Broken))
	}
	if o := meta.Options; o.Schedule != "" {
		note := fmt.Sprintf("the workload was the schedule %s (sha256 %.12s): its steps, not random draws", o.Schedule, o.ScheduleSHA256)
		if o.ScheduleAbout != "" {
			note += ": " + o.ScheduleAbout
		}
		res.Notes = append(res.Notes, note)
	}
	if why := checker.EveryAcquireRefused(h); why != "" && len(h.Sections) == 0 {
		res.Verdict = why // the verdict line says why nothing was tested
	}
	if c := meta.Client; c != nil && c.LeaseGranularityMs > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the worker's leases are multiples of %s (its lease_granularity_ms): each lease sent was rounded to one",
			time.Duration(c.LeaseGranularityMs)*time.Millisecond))
	}
	endVerdict(h, res)
	if !finished(h) {
		res.Notes = append(res.Notes, "no final heal was recorded: the run did not finish, and its prefix was checked")
	}
	if deaths := unplannedDeaths(h); len(deaths) > 0 {
		res.Notes = append(res.Notes, deaths...)
		res.Valid = checker.Worst(res.Valid, checker.Unknown)
	}
	res.NoteCoverage(h) // after every cap on the verdict: only a valid verdict can have missed
	modelCoverage(h, results, res)
	res.WorkloadNs = h.WorkloadStart()
	res.Steps = report.StepsOf(h)
	res.Ran = report.WhatRan(meta, res.Nemesis)
	res.Story = report.TellStory(h, res, libraryOf(meta))
	res.Known = known.Of(h, res)
	if h.Truncated {
		res.Notes = append(res.Notes, "the history's last line was cut short (the run died mid-write, or its disk filled); the prefix was checked")
	}
	if ctx.Err() != nil {
		return nil, ErrCheckInterrupted
	}
	if why := tooLongForTimeline(h); why != "" {
		res.Notes = append(res.Notes, why)
		delete(res.Files, "html")
	} else if err := writeHTML(files["html"], lin, h, results); err != nil {
		res.Notes = append(res.Notes, "no HTML: "+err.Error())
		delete(res.Files, "html")
	}
	var excerpt *history.History
	by := ""
	if proof != "" {
		_, fresh := family.Checkers(kinds.Checks(meta.Checks), timeout)
		excerpt, by = writeProof(ctx, h, fresh, res, proof, min(checker.ProofBound, timeout))
	}
	writePage(h, page.Input{Proof: excerpt, ProofBy: by}, res, meta, family.Counted, resultsName)
	if err := res.WriteFile(files["results"]); err != nil {
		return res, fmt.Errorf("write results: %w", err)
	}
	return res, nil
}

// modelCoverage sets the run's coverage of its lock's model and the transition at its first violation
// (package coverage). A bug there is a note, never a crash of the check: the verdict stands without it.
func modelCoverage(h *history.History, results []checker.Result, res *report.Results) {
	defer func() {
		if p := recover(); p != nil {
			res.ModelCoverage, res.Breaking = nil, nil
			res.Notes = append(res.Notes, fmt.Sprintf("no model coverage: it failed (a bug in lockcheck, please report it): %v", p))
		}
	}()
	res.ModelCoverage = coverage.Of(h)
	if t, ok := coverage.Breaking(h, results); ok {
		res.Breaking = &t
	}
}

// endVerdict caps the verdict by how the run ended: only a history whose end record says it completed can
// be valid; an interrupted, failed or cut-short one is at best unknown, and a note says why.
func endVerdict(h *history.History, res *report.Results) {
	var why string
	switch {
	case h.Ended == nil:
		why = "no end record (the run was killed, its disk filled, or it is still running): only a prefix was checked"
	case history.EndReason(h.Ended.F) == history.EndInterrupted:
		res.Interrupted = true
		why = "interrupted"
		if h.Ended.Detail != "" {
			why += " (" + h.Ended.Detail + ")"
		}
		why += ": the run was stopped early"
	case history.EndReason(h.Ended.F) == history.EndFailed:
		why = "the run failed: " + h.Ended.Error
	default:
		return
	}
	if res.Valid == checker.Valid {
		why += ", so a valid history is only unknown"
	}
	res.Valid = checker.Worst(res.Valid, checker.Unknown)
	res.Notes = append(res.Notes, why)
}

// readMeta decodes and validates the meta record: a lock lockcheck knows, and checks that are that lock's
// own, so a crafted meta record cannot choose (or switch off) the checkers.
func readMeta(path string, h *history.History, lookup func(string) (*kinds.Kind, error)) (Meta, error) {
	if h.Meta == nil {
		return Meta{}, usagef("%s: no meta record: not a lockcheck history", path)
	}
	at := fmt.Sprintf("%s: history line %d: meta record", path, h.MetaLine)
	if h.RunErr != nil {
		return Meta{}, usagef("%s: %v", at, h.RunErr)
	}
	meta := *h.Run
	k, err := lookup(meta.Lock)
	if err != nil && meta.Spec != "" {
		if _, ferr := kinds.FamilyNamed(meta.Checks.Family); ferr != nil {
			return meta, usagef("%s: lock %s from spec %s: %v", at, meta.Lock, meta.Spec, ferr)
		}
		return meta, nil
	}
	if err != nil {
		return meta, usagef("%s: %v", at, err)
	}
	want := history.Checks(k.Checks(kinds.Params{Permits: meta.Checks.Permits}))
	if k.Family.Counted && want.Permits < 1 {
		return meta, usagef("%s: lock %s needs permits >= 1, got %d", at, k.Name, want.Permits)
	}
	switch {
	case meta.Checks.Family == "": // histories older than the field
		meta.Checks = want
	case meta.Checks.Family != k.Family.Name:
		return meta, usagef("%s: family %q, but lock %s is a %s", at, meta.Checks.Family, k.Name, k.Family.Name)
	default:
		meta.Checks.Members = want.Members   // histories older than the field
		want.Liveness = meta.Checks.Liveness // the run's choice (--check), not the kind's
		if meta.Checks != want {
			return meta, usagef("%s: checks %+v are not lock %s's own (%+v)", at, meta.Checks, k.Name, want)
		}
	}
	return meta, nil
}

// writeHTML writes through a temporary file renamed into place, so it leaves no partial file behind (a full
// disk, or a check interrupted while writing).
func writeHTML(path string, lin *checker.Linearizable, h *history.History, results []checker.Result) error {
	return report.WriteAtomic(path, func(w io.Writer) error {
		return lin.Visualize(w, h, report.Annotations(h, results))
	})
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

// libraryOf names what answered the clients, for the story's "what the library told": the worker's library,
// or lockcheck's own lock.
func libraryOf(m Meta) string {
	if c := m.Client; c != nil && c.Library != "" {
		return c.Library
	}
	return "the " + m.Lock + " lock"
}
