package page

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// Caps keep a long run's page small enough for a browser to open at once: the per-second series are
// already compact, the point and bar sets are sampled down to these (every overlapping section is kept).
const (
	maxPoints   = 4000
	maxSections = 2500
	maxLeases   = 2500
	maxMarks    = 1500
	maxRows     = 80
	maxBins     = 20000
)

// Input is what a summary page is made of.
type Input struct {
	Results *report.Results
	History *history.History
	// Command is the command line that ran (or reproduces) the run; empty when unknown.
	Command []string
	// Client is the worker's library and version ("redisson 3.52.0"), empty for lockcheck's own client.
	Client string
	// Permits is the semaphore's capacity; 0 for locks that are not counted.
	Permits int64
	// Links are the run's files, relative to the page: name to href.
	Links []Link
	// Proof is the proof excerpt of an invalid porcupine verdict (checker.Proof), drawn on its own; nil
	// when there is none.
	Proof *history.History
	// ProofBy names the checker whose violation the proof is of.
	ProofBy string
}

// Link is one file of the run.
type Link struct {
	Name string `json:"name"`
	Href string `json:"href"`
}

// data is the page's JSON: times in seconds since the run started, rounded to the millisecond.
type data struct {
	Verdict   string            `json:"verdict"`
	Story     string            `json:"story,omitempty"` // leads the banner (report.Story)
	Known     []string          `json:"known,omitempty"` // under it: known or new (report.Known)
	Steps     []string          `json:"steps,omitempty"` // a schedule run's steps and what each did
	Ran       string            `json:"ran,omitempty"`   // what ran, in words (report.WhatRan)
	Clock     string            `json:"clock"`           // where the run's clock starts, stated once
	Workload  float64           `json:"workload"`        // when the workload began on it: start-up before
	Lock      string            `json:"lock"`
	Topology  string            `json:"topology"`
	Nemesis   []string          `json:"nemesis"`
	Seed      int64             `json:"seed"`
	Client    string            `json:"client,omitempty"`
	Duration  float64           `json:"duration"`
	Bin       float64           `json:"bin"` // seconds per bin of the series: 1 unless the run is very long
	First     *violation        `json:"first,omitempty"`
	Checkers  []check           `json:"checkers"`
	Stalls    []stall           `json:"stalls,omitempty"`
	Notes     []string          `json:"notes,omitempty"`
	Faults    []fault           `json:"faults"`
	FaultLog  []string          `json:"fault_log,omitempty"`
	Plan      json.RawMessage   `json:"plan,omitempty"`
	Command   string            `json:"command,omitempty"`
	Versions  map[string]string `json:"versions,omitempty"`
	Links     []Link            `json:"links"`
	Rate      rate              `json:"rate"`
	Latency   latency           `json:"latency"`
	Gantt     gantt             `json:"gantt"`
	Permits   *permits          `json:"permits,omitempty"`
	Proof     *proof            `json:"proof,omitempty"`
	Overlaps  int               `json:"overlaps"`
	Truncated bool              `json:"truncated,omitempty"`

	Coverage *modelCoverage `json:"model_coverage,omitempty"`
}

// modelCoverage is the run's transitions of its lock's model (package coverage), at most maxTransitions
// of them listed; Breaking is the one at the first violation.
type modelCoverage struct {
	Distinct int          `json:"distinct"`
	Rows     []transition `json:"rows"`
	Hidden   int          `json:"hidden,omitempty"`
	Breaking string       `json:"breaking,omitempty"`
}

// transition is one row: the transition, its count and its key (Transition.String), which marks the
// breaking one.
type transition struct {
	coverage.Seen
	Key string `json:"key"`
}

const maxTransitions = 200

func modelCoverageOf(r *report.Results) *modelCoverage {
	if r.ModelCoverage == nil {
		return nil
	}
	m := &modelCoverage{Distinct: r.ModelCoverage.Len(), Rows: []transition{}}
	for _, t := range r.ModelCoverage.Transitions() {
		if len(m.Rows) == maxTransitions {
			m.Hidden++
			continue
		}
		m.Rows = append(m.Rows, transition{coverage.Seen{Transition: t, Count: r.ModelCoverage.Count(t)}, t.String()})
	}
	if r.Breaking != nil {
		m.Breaking = r.Breaking.String()
	}
	return m
}

type violation struct {
	Checker string  `json:"checker"`
	At      float64 `json:"at"`
	Text    string  `json:"text"`
}

// stall is a checker's span with no progress (checker.Result.Stall), drawn as a band on every chart.
type stall struct {
	Label string  `json:"label"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

type check struct {
	Name      string   `json:"name"`
	Verdict   string   `json:"verdict"`
	Summary   string   `json:"summary"`
	Violation string   `json:"violation,omitempty"`
	At        *float64 `json:"at,omitempty"`
}

type fault struct {
	Kind    string  `json:"kind"`
	Targets string  `json:"targets"`
	Detail  string  `json:"detail,omitempty"`
	Start   float64 `json:"start"`
	End     float64 `json:"end"`
	Healed  bool    `json:"healed"`
}

// rate is operations completed per bin (a second unless the run is very long), by outcome.
type rate struct {
	Ok      []int `json:"ok"`
	Fail    []int `json:"fail"`
	Unknown []int `json:"unknown"`
}

// latency is one operation's latencies: points (call time, ms, outcome 0 ok 1 fail 2 unknown) and, per
// second of call time, the p50 and p99 of every completed call (null where none).
type latency struct {
	Op     string       `json:"op"`
	Points [][3]float64 `json:"points"`
	P50    []*float64   `json:"p50"`
	P99    []*float64   `json:"p99"`
	Total  int          `json:"total"`
	AllOdd bool         `json:"all_odd"` // every failed or unknown call is among the points
}

// gantt is the holders per key: one row per key and client thread, its critical sections (red when they
// overlap another owner's), its leases (from each granted acquire or renewal until it ran out or was
// released) and marks (renewals, a worker's lost-lock reports).
type gantt struct {
	Rows          []string  `json:"rows"`
	Sections      []section `json:"sections"`
	Leases        []span    `json:"leases"`
	Marks         []mark    `json:"marks"`
	TotalSections int       `json:"total_sections"`
	TotalLeases   int       `json:"total_leases"`
	HiddenRows    int       `json:"hidden_rows,omitempty"`
	AllBad        bool      `json:"all_bad"` // every overlapping or rejected section is drawn
}

type section struct {
	Row      int     `json:"r"`
	Start    float64 `json:"s"`
	End      float64 `json:"e"`
	Bad      bool    `json:"bad,omitempty"`
	Rejected bool    `json:"rej,omitempty"`
	Token    int64   `json:"tok,omitempty"`
}

type span struct {
	Row   int     `json:"r"`
	Start float64 `json:"s"`
	End   float64 `json:"e"`
}

type mark struct {
	Row  int     `json:"r"`
	At   float64 `json:"t"`
	Kind string  `json:"k"` // renewed, lost
}

// permits is a semaphore's permits in use (the most held at once in each second) against those that exist:
// the permits it was set to, and each read of the available permits plus those held then (a lost or
// duplicated permit shows as a reading off that line).
type permits struct {
	Exist int64        `json:"exist"`
	InUse []int        `json:"in_use"`
	Reads [][2]float64 `json:"reads"`
}

func secs(ns int64) float64 { return math.Round(float64(ns)/1e6) / 1e3 }

func build(in Input) data {
	r, h := in.Results, in.History
	end := h.End() // once: it reads every record (never negative)
	d := data{Verdict: r.Valid.String(), Story: r.StoryText(), Known: r.KnownLines(), Steps: r.StepLines(), Ran: r.Ran, Clock: r.ClockText(), Workload: secs(r.WorkloadNs), Lock: r.Lock, Topology: r.Topology, Nemesis: r.Nemesis, Seed: r.Seed,
		Client: in.Client, Duration: secs(end), Notes: r.Notes, Plan: r.Plan, Versions: r.Versions,
		Links: in.Links, Truncated: r.Truncated}
	if len(in.Command) > 0 {
		d.Command = shellJoin(in.Command)
	}
	for _, c := range r.Checkers {
		ck := check{Name: c.Checker, Verdict: c.Valid.String(), Summary: c.Summary, Violation: c.Violation}
		if c.Violation != "" {
			at := secs(c.At)
			ck.At = &at
			if c.Valid == checker.Invalid && (d.First == nil || at < d.First.At) {
				d.First = &violation{Checker: c.Checker, At: at, Text: c.Violation}
			}
		}
		d.Checkers = append(d.Checkers, ck)
		if c.Stall != "" && c.Violation != "" && c.End > c.At {
			d.Stalls = append(d.Stalls, stall{Label: c.Checker + ": " + c.Stall, Start: secs(c.At), End: secs(c.End)})
		}
	}
	// The first violation is the story's (Results.FirstViolation), as in every other output.
	for _, c := range r.Checkers {
		if r.Story != nil && c.Valid == checker.Invalid && c.Violation != "" && c.Checker == r.Story.Checker {
			d.First = &violation{Checker: c.Checker, At: secs(r.FirstViolation()), Text: c.Violation}
		}
	}
	d.Faults = []fault{}
	for _, w := range r.Faults {
		d.Faults = append(d.Faults, fault{Kind: w.Kind, Targets: strings.Join(w.Targets, " "), Detail: w.Detail,
			Start: secs(w.Start), End: secs(w.End), Healed: w.Healed})
	}
	for _, f := range h.Faults {
		if f.Phase == "error" || f.Phase == history.Unplanned {
			d.FaultLog = append(d.FaultLog, fmt.Sprintf("%s %s %s %s: %s", checker.Secs(f.Time), f.F, f.Phase,
				strings.Join(f.Targets, " "), f.Detail))
		}
	}
	// One bin a second; a run longer than maxBins seconds (a crafted history can claim a century) gets wider
	// ones, so that the page stays small whatever the history says.
	width := int64(time.Second)
	if end/width >= maxBins {
		width = end/maxBins + 1
	}
	d.Bin = float64(width) / 1e9
	bins := int(end/width) + 1
	b := binner{width, bins}
	d.Rate = rates(h, b)
	d.Latency = latencies(h, b)
	d.Gantt, d.Overlaps = holders(h, in.Permits)
	d.Proof = proofOf(in.Proof, in.ProofBy, len(h.Ops))
	d.Coverage = modelCoverageOf(r)
	if in.Permits > 0 {
		d.Permits = &permits{Exist: in.Permits, InUse: inUse(h, b), Reads: existing(h)}
	}
	return d
}

// client is whether an operation is the client's own record (a worker's or the emulation's), not a wire
// record decoded from a link: the same command is not counted twice.
func client(o history.Operation) bool { return o.Invoke.Src != history.WireSrc }

// binner maps a time to its bin.
type binner struct {
	width int64 // ns
	n     int
}

func (b binner) of(t int64) int { return int(min(max(t/b.width, 0), int64(b.n-1))) }

func rates(h *history.History, b binner) rate {
	r := rate{Ok: make([]int, b.n), Fail: make([]int, b.n), Unknown: make([]int, b.n)}
	for _, o := range h.Ops {
		if !client(o) {
			continue
		}
		t := o.Invoke.Time // an operation that never completed counts as unknown when it was called
		if o.Complete != nil {
			t = o.Complete.Time
		}
		i := b.of(t)
		switch o.Outcome() {
		case history.Ok:
			r.Ok[i]++
		case history.Fail:
			r.Fail[i]++
		default:
			r.Unknown[i]++
		}
	}
	return r
}

// acquireOp is the operation whose latency the page plots: the application's call when the history has
// calls (it includes waiting for the lock, as the stats checker reports), else the lock command.
func acquireOp(h *history.History) string {
	seen := map[string]bool{}
	for _, o := range h.Ops {
		if client(o) {
			seen[o.Invoke.F] = true
		}
	}
	for _, f := range []string{"tryLock", "tryAcquire", "acquire"} {
		if seen[f] {
			return f
		}
	}
	for f := range seen {
		if strings.HasPrefix(f, "lcp_acquire") {
			return f
		}
	}
	return "acquire"
}

func latencies(h *history.History, b binner) latency {
	l := latency{Op: acquireOp(h), Points: [][3]float64{}, P50: make([]*float64, b.n), P99: make([]*float64, b.n)}
	per := make([][]float64, b.n)
	var all [][3]float64
	for _, o := range h.Ops {
		if !client(o) || o.Invoke.F != l.Op || o.Complete == nil {
			continue
		}
		ms := math.Round(float64(o.Complete.Time-o.Invoke.Time)/1e3) / 1e3
		outcome := map[history.Type]float64{history.Ok: 0, history.Fail: 1}[o.Complete.Type]
		if o.Complete.Type == history.Unknown {
			outcome = 2
		}
		all = append(all, [3]float64{secs(o.Invoke.Time), ms, outcome})
		i := b.of(o.Invoke.Time)
		per[i] = append(per[i], ms)
	}
	l.Total = len(all)
	l.Points, l.AllOdd = sample(all, maxPoints, func(p [3]float64) bool { return p[2] != 0 })
	for i, ms := range per {
		if len(ms) == 0 {
			continue
		}
		sort.Float64s(ms)
		q := func(p float64) *float64 { v := ms[min(len(ms)-1, int(p*float64(len(ms))))]; return &v }
		l.P50[i], l.P99[i] = q(0.50), q(0.99)
	}
	return l
}

// sample keeps at most n items, in order: every one keep says to keep (evenly spaced among them if there
// are more than n), then evenly spaced others. keptAll is whether every item keep marks is in.
func sample[T any](items []T, n int, keep func(T) bool) (out []T, keptAll bool) {
	if len(items) <= n {
		return append([]T{}, items...), true
	}
	var kept, others []int
	for i, it := range items {
		if keep(it) {
			kept = append(kept, i)
		} else {
			others = append(others, i)
		}
	}
	chosen := make([]bool, len(items))
	pick := func(idx []int, k int) {
		if k >= len(idx) {
			for _, i := range idx {
				chosen[i] = true
			}
			return
		}
		for j := range k {
			chosen[idx[j*len(idx)/k]] = true
		}
	}
	pick(kept, n)
	pick(others, n-min(len(kept), n))
	out = make([]T, 0, n)
	for i, it := range items {
		if chosen[i] {
			out = append(out, it)
		}
	}
	return out, len(kept) <= n
}

// rowOf names a key's row for a client thread; a thread-0 record (a watchdog) takes the row of the thread
// its owner id names, if that row exists.
type rows struct {
	index map[string]int
	names []string
}

func threadLabel(client string, thread int64) string {
	if thread == 0 {
		return client + " watchdog"
	}
	return fmt.Sprintf("%s/%d", client, thread)
}

func ownerThread(owner string) int64 {
	o := strings.TrimSuffix(owner, ":write")
	var t int64
	if i := strings.LastIndex(o, ":"); i >= 0 {
		if _, err := fmt.Sscan(o[i+1:], &t); err == nil {
			return t
		}
	}
	return 0
}

func holders(h *history.History, capacity int64) (gantt, int) {
	g := gantt{Sections: []section{}, Leases: []span{}, Marks: []mark{}}
	// Rows: every key and thread that held something, ordered by key, client and thread.
	type rk struct {
		key, client string
		thread      int64
	}
	seen := map[rk]bool{}
	var keys []rk
	add := func(k rk) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, s := range h.Sections {
		add(rk{s.Key, s.Client, s.Thread})
	}
	granted := func(o history.Operation) bool {
		return client(o) && o.Outcome() == history.Ok && (o.Invoke.F == "acquire" || o.Invoke.F == "renew") &&
			o.Invoke.Args["lease_ms"] > 0
	}
	threadOf := func(thread int64, owner string) int64 {
		if thread != 0 {
			return thread
		}
		return ownerThread(owner)
	}
	for _, o := range h.Ops {
		if granted(o) {
			add(rk{o.Invoke.Key, o.Invoke.Client, threadOf(o.Invoke.Thread, o.Invoke.Owner)})
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.key != b.key {
			return a.key < b.key
		}
		if a.client != b.client {
			return naturalLess(a.client, b.client)
		}
		return a.thread < b.thread
	})
	if len(keys) > maxRows {
		g.HiddenRows = len(keys) - maxRows
		keys = keys[:maxRows]
	}
	idx := map[rk]int{}
	for i, k := range keys {
		idx[k] = i
		g.Rows = append(g.Rows, k.key+" · "+threadLabel(k.client, k.thread))
	}
	if g.Rows == nil {
		g.Rows = []string{}
	}
	bad := badSections(h.Sections, capacity)
	var secs_ []section
	overlaps := 0
	for i, s := range h.Sections {
		if bad[i] {
			overlaps++
		}
		r, ok := idx[rk{s.Key, s.Client, s.Thread}]
		if !ok {
			continue
		}
		secs_ = append(secs_, section{Row: r, Start: secs(s.Enter), End: secs(s.Exit), Bad: bad[i], Rejected: s.Rejected, Token: s.Token})
	}
	g.TotalSections = len(secs_)
	g.Sections, g.AllBad = sample(secs_, maxSections, func(s section) bool { return s.Bad || s.Rejected })
	// A lease lasts from its grant until it surely ran out, or until its holder released the key; a row's
	// leases are drawn as their union (a watchdog's renewals would otherwise stack up).
	type grant struct {
		row        int
		start, end int64
	}
	var grants []grant
	releases := map[int][]int64{}
	var marks []mark
	for _, o := range h.Ops {
		if client(o) && o.Invoke.F == "release" && o.Outcome() == history.Ok {
			if r, ok := idx[rk{o.Invoke.Key, o.Invoke.Client, threadOf(o.Invoke.Thread, o.Invoke.Owner)}]; ok {
				releases[r] = append(releases[r], o.Complete.Time)
			}
		}
		if !granted(o) {
			continue
		}
		r, ok := idx[rk{o.Invoke.Key, o.Invoke.Client, threadOf(o.Invoke.Thread, o.Invoke.Owner)}]
		if !ok {
			continue
		}
		// The server granted it somewhere between the call and the reply: from the reply to the call plus the
		// lease it surely held (a call that waited, as a blocking acquire does, does not draw a lease early).
		if end := o.Invoke.Time + o.Invoke.Args["lease_ms"]*int64(time.Millisecond); end > o.Complete.Time {
			grants = append(grants, grant{r, o.Complete.Time, end})
		}
		if o.Invoke.F == "renew" {
			marks = append(marks, mark{Row: r, At: secs(o.Complete.Time), Kind: "renewed"})
		}
	}
	for i, gr := range grants {
		rel := releases[gr.row] // in time order, as the operations are
		if j := sort.Search(len(rel), func(j int) bool { return rel[j] > gr.start }); j < len(rel) && rel[j] < gr.end {
			grants[i].end = rel[j]
		}
	}
	sort.SliceStable(grants, func(i, j int) bool {
		if grants[i].row != grants[j].row {
			return grants[i].row < grants[j].row
		}
		return grants[i].start < grants[j].start
	})
	var leases []span
	for _, gr := range grants {
		if n := len(leases); n > 0 && leases[n-1].Row == gr.row && secs(gr.start) <= leases[n-1].End {
			leases[n-1].End = max(leases[n-1].End, secs(gr.end))
			continue
		}
		leases = append(leases, span{Row: gr.row, Start: secs(gr.start), End: secs(gr.end)})
	}
	for _, e := range h.Events {
		if e.F != "lost" && e.F != "renewed" {
			continue
		}
		if r, ok := idx[rk{e.Key, e.Client, threadOf(e.Thread, e.Owner)}]; ok {
			marks = append(marks, mark{Row: r, At: secs(e.Time), Kind: e.F})
		}
	}
	g.TotalLeases = len(leases)
	g.Leases, _ = sample(leases, maxLeases, func(span) bool { return false })
	g.Marks, _ = sample(marks, maxMarks, func(m mark) bool { return m.Kind == "lost" })
	return g, overlaps
}

// badSections marks the sections that break exclusion: for a lock, those that overlap another owner's
// (as the exclusion checker and the timeline judge them); for a semaphore of capacity permits, those open
// while more than that many were held.
func badSections(ss []history.Record, capacity int64) map[int]bool {
	bad := map[int]bool{}
	if capacity <= 0 {
		pairs := map[[2]int64]bool{}
		for _, o := range checker.Overlaps(ss) {
			pairs[[2]int64{o.HeldFrom, o.HeldTo}] = true
			pairs[[2]int64{o.Entered, o.IntruderOut}] = true
		}
		for i, s := range ss {
			if pairs[[2]int64{s.Enter, s.Exit}] || pairs[[2]int64{s.Enter, s.Until}] {
				bad[i] = true
			}
		}
		return bad
	}
	byKey := map[string][]int{}
	for i, s := range ss {
		byKey[s.Key] = append(byKey[s.Key], i)
	}
	for _, is := range byKey {
		sort.Slice(is, func(a, b int) bool { return ss[is[a]].Enter < ss[is[b]].Enter })
		var open []int
		for _, i := range is {
			kept := open[:0]
			for _, o := range open {
				if ss[o].Exit > ss[i].Enter {
					kept = append(kept, o)
				}
			}
			open = append(kept, i)
			if int64(len(open)) > capacity {
				for _, o := range open {
					bad[o] = true
				}
			}
		}
	}
	return bad
}

// inUse is, per bin, the most sections held at once on any one key.
func inUse(h *history.History, b binner) []int {
	out := make([]int, b.n)
	type ev struct {
		t     int64
		delta int
	}
	byKey := map[string][]ev{}
	for _, s := range h.Sections {
		byKey[s.Key] = append(byKey[s.Key], ev{s.Enter, 1}, ev{s.Exit, -1})
	}
	for _, evs := range byKey {
		sort.Slice(evs, func(i, j int) bool {
			if evs[i].t != evs[j].t {
				return evs[i].t < evs[j].t
			}
			return evs[i].delta < evs[j].delta // an exit at the same instant frees the permit first
		})
		n := 0
		for _, e := range evs {
			n += e.delta
			i := b.of(e.t)
			out[i] = max(out[i], n)
		}
		// A second with no entry or exit keeps the count held across it.
		n = 0
		j := 0
		for i := range out {
			for j < len(evs) && evs[j].t < int64(i)*b.width {
				n += evs[j].delta
				j++
			}
			out[i] = max(out[i], n)
		}
	}
	return out
}

// existing is, at each read of the available permits (a worker's lcp_available too), what it read plus the
// critical sections open on that key then.
func existing(h *history.History) [][2]float64 {
	out := [][2]float64{}
	for _, o := range h.Ops {
		if !client(o) || strings.TrimPrefix(o.Invoke.F, "lcp_") != "available" || o.Outcome() != history.Ok || o.Complete.Value == nil {
			continue
		}
		held := int64(0)
		for _, s := range h.Sections {
			if s.Key == o.Invoke.Key && s.Enter <= o.Complete.Time && s.Exit > o.Complete.Time {
				held++
			}
		}
		out = append(out, [2]float64{secs(o.Complete.Time), float64(*o.Complete.Value + held)})
		if len(out) >= maxMarks {
			break
		}
	}
	return out
}

// naturalLess orders c2 before c10.
func naturalLess(a, b string) bool {
	if len(a) != len(b) && strings.TrimRight(a, "0123456789") == strings.TrimRight(b, "0123456789") {
		return len(a) < len(b)
	}
	return a < b
}

// shellJoin quotes a command line so that it can be pasted into a shell.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@%+") == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
