package checker

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// Linearizable checks a history's lock commands against a porcupine model, partitioned by key, within a
// time bound: running out of time gives unknown, never valid.
type Linearizable struct {
	Label   string // checker name, e.g. "porcupine"
	Model   porcupine.NondeterministicModel
	Convert func(h *history.History) []porcupine.Operation
	Timeout time.Duration
	// Level, when set, names the records Convert judged ("wire" or "client"): reported in the details and,
	// for wire records, the summary, so a verdict says whether it is about what reached Redis. Keys
	// Convert leaves out that a worker changed through its API calls are judged from those (apilevel.go):
	// Result.Levels counts the keys each level judged (details.api_keys names the API ones where the
	// levels mix), and records is "api" when all were.
	Level func(h *history.History) string
	// NoTimeline says no Visualize follows: Check then lets go of the call-ordered commands once they
	// are split by key (a million commands: 60 MB held through the search for nothing), and of each
	// key's commands once the key is found legal.
	NoTimeline bool

	info     porcupine.LinearizationInfo
	haveInfo bool
	model    porcupine.Model
	ops      []porcupine.Operation
	ran      bool
}

// visualBound bounds porcupine's search for the HTML's partial orders, which the verdict does not need.
const visualBound = 3 * time.Second

// Name is the checker's stable name.
func (l *Linearizable) Name() string { return l.Label }

// Check decides each key with the frontier search (frontier.go), in parallel; a key the frontier cannot
// decide within its bounds goes to porcupine's own search for the time that is left.
func (l *Linearizable) Check(ctx context.Context, h *history.History) Result {
	ops, levels := l.convert(h)
	l.model = l.Model.ToModel()
	l.ops, l.ran, l.info = ops, true, porcupine.LinearizationInfo{}
	l.haveInfo = false
	begin := time.Now()
	parts := l.model.Partition(ops)
	if parts == nil {
		parts = [][]porcupine.Operation{ops}
	}
	n := len(ops)
	wide := widened(ops)
	bad, why, lapsed := lapsedRelease(ops)
	unsure := 0
	if lapsed {
		unsure = countUnknown(ops)
	}
	if l.NoTimeline {
		ops, l.ops = nil, nil
	}
	var out Result
	switch {
	case lapsed:
		out = Result{Valid: Invalid, Violation: why, At: bad.Call, End: min(bad.Return, bad.Call+1),
			Details: map[string]any{"operations": n, "keys": len(parts), "unknown_operations": unsure,
				"search": "none: a release no order excuses", "culprit": l.culprit(bad), "key": keyName(bad.Input)},
			Summary: fmt.Sprintf("no legal order exists for %d lock commands on %d keys", n, len(parts))}
	default:
		out = l.decide(ctx, parts, begin)
		if out.Valid == Invalid && wide != nil {
			out = l.confirm(ctx, wide, out, begin)
		}
	}
	took := time.Since(begin)
	out.Details.(map[string]any)["check_ms"] = took.Milliseconds()
	if out.Valid == Valid {
		out.Summary = fmt.Sprintf("%d lock commands on %d keys have a legal order (%s)", n, len(parts), took.Round(time.Millisecond))
	}
	if l.Level != nil {
		level := l.Level(h)
		if len(levels) > 0 && len(apiKeys(levels)) == len(levels) {
			level = LevelAPI // every key: said by levelNote below
		}
		out.Details.(map[string]any)["records"] = level
		switch level {
		case "wire":
			out.Summary += " (wire records)"
		case "wire+client": // a mixed run: the workers' commands from their links, the Go clients' own
			out.Summary += " (wire records of the workers, command records of the Go clients)"
		}
	}
	if len(levels) > 0 {
		out.Levels = map[string]int{}
		for _, lv := range levels {
			out.Levels[lv]++
		}
		if n := out.Levels[LevelAPI]; n > 0 && n < len(levels) {
			out.Details.(map[string]any)["api_keys"] = apiKeys(levels)
		}
	}
	out.Summary += levelNote(levels)
	return out
}

// confirm decides again, with each API grant's whole call (apilevel.go, grantSlack), a history found
// illegal with its grants placed near their replies: only an order the wider search cannot find either
// makes it invalid.
func (l *Linearizable) confirm(ctx context.Context, wide []porcupine.Operation, narrow Result, begin time.Time) Result {
	parts := l.model.Partition(wide)
	if parts == nil {
		parts = [][]porcupine.Operation{wide}
	}
	out := l.decide(ctx, parts, begin)
	out.Details.(map[string]any)["narrow_search"] = narrow.Violation
	if out.Valid == Unknown {
		out.Summary = fmt.Sprintf("no legal order with each permit granted within %s of its reply (%s), and with whole "+
			"calls: %s", time.Duration(grantSlack), narrow.Violation, out.Summary)
	}
	return out
}

// Operations is what Check judges: Convert's commands and, on the keys they leave out, a worker's API
// calls (apilevel.go), in order of call.
func (l *Linearizable) Operations(h *history.History) []porcupine.Operation {
	ops, _ := l.convert(h)
	return ops
}

// convert is Convert's commands with, on the keys they leave out, the worker's API calls (apilevel.go),
// and the level that judged each key.
func (l *Linearizable) convert(h *history.History) ([]porcupine.Operation, map[string]string) {
	ops := l.Convert(h)
	level := ""
	if l.Level != nil {
		level = l.Level(h)
	}
	if !hasAPICalls(h) {
		return ops, keyLevels(ops, nil, level)
	}
	skip := map[string]bool{}
	for _, o := range ops {
		if c, ok := o.Input.(Command); ok {
			skip[c.Key] = true
		}
	}
	for i := range h.Ops {
		if inv := &h.Ops[i].Invoke; inv.Src == history.WireSrc {
			skip[inv.Key] = true // judged at the wire level, maybe under its node's name
		}
	}
	if h.Run != nil && h.Run.Client != nil && h.Run.Client.Go != nil {
		// A mixed run: the Go clients' commands and the workers' API calls on one key are two vocabularies
		// of one count (a latch's rounds, a semaphore's permits) that no one model reads together; such keys
		// are left to the interval checkers, as before the API level.
		return ops, keyLevels(ops, nil, level)
	}
	api, keys := APIOps(h, skip)
	if len(api) > 0 {
		ops = append(ops, api...)
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	}
	return ops, keyLevels(ops, keys, level)
}

// decideKey decides one key: the frontier within a small bound of configurations, then porcupine's
// depth-first search briefly, then the frontier within its full bound. The two searches fail on opposite
// histories: commands that overlap widely (a loaded machine widens every interval: 489 fault-free
// read-write lock commands each widened by 30 ms took the frontier 54 s) are decided by porcupine in
// milliseconds, while a failover's unknown outcomes keep porcupine searching and the frontier does not.
func (l *Linearizable) decideKey(ctx context.Context, ops []porcupine.Operation, begin time.Time) keyVerdict {
	// Porcupine's search does not bound an API call's effect by the return being expanded (Command.Now),
	// so it is more lenient there: such keys go to the frontier alone.
	if hasAPI(ops) {
		return frontierKey(ctx, l.Model, ops)
	}
	start := time.Now()
	v := frontierBounded(ctx, l.Model, ops, quickConfigs)
	if v.res != porcupine.Unknown || !v.wide {
		return v
	}
	slice := max(4*time.Since(start), 500*time.Millisecond)
	if l.Timeout > 0 {
		slice = min(slice, (l.Timeout-time.Since(begin))/4)
	}
	if slice > 0 && ctx.Err() == nil && porcupine.CheckOperationsTimeout(l.model, ops, slice) == porcupine.Ok {
		return keyVerdict{res: porcupine.Ok, maxInFlight: v.maxInFlight, maxConfigs: v.maxConfigs}
	}
	return frontierKey(ctx, l.Model, ops) // an illegal key is decided (and explained) here too
}

func hasAPI(ops []porcupine.Operation) bool {
	for _, o := range ops {
		if c, ok := o.Input.(Command); ok && c.API {
			return true
		}
	}
	return false
}

// decide searches every key and combines: the earliest illegal key makes it invalid, else an undecided
// key makes it unknown, saying why.
func (l *Linearizable) decide(ctx context.Context, parts [][]porcupine.Operation, begin time.Time) Result {
	parent := ctx
	if l.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, begin.Add(l.Timeout))
		defer cancel()
	}
	ops, unknown := 0, 0 // counted first: without a timeline, a decided key's commands go as it is decided
	for _, p := range parts {
		ops, unknown = ops+len(p), unknown+countUnknown(p)
	}
	vs := make([]keyVerdict, len(parts))
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			vs[i] = l.decideKey(ctx, parts[i], begin)
			if l.NoTimeline && vs[i].res == porcupine.Ok {
				// Nothing below reads a legal key's commands: let their boxed inputs and outputs go now
				// rather than after the last key (a million commands: 100 MB through the whole search).
				clear(parts[i])
			}
		}()
	}
	wg.Wait()
	details := map[string]any{"operations": ops, "keys": len(parts),
		"unknown_operations": unknown, "search": "frontier"}
	inflight, configs := 0, 0
	for _, v := range vs {
		inflight, configs = max(inflight, v.maxInFlight), max(configs, v.maxConfigs)
	}
	details["max_in_flight"], details["max_configurations"] = inflight, configs
	illegal, undecided := -1, []int{}
	for i, v := range vs {
		switch {
		case v.res == porcupine.Illegal && (illegal < 0 || v.culprit.Call < vs[illegal].culprit.Call):
			illegal = i
		case v.res == porcupine.Unknown:
			undecided = append(undecided, i)
		}
	}
	if illegal >= 0 {
		return l.illegal(vs[illegal], parts, details)
	}
	if len(undecided) == 0 {
		return Result{Valid: Valid, Details: details}
	}
	// Porcupine's depth-first search may still find a legal order where the frontier grew too wide.
	details["search"] = "frontier, then porcupine"
	var whys []string
	for _, i := range undecided {
		left := time.Duration(0)
		if parent.Err() != nil { // interrupted: no second search
			whys = append(whys, fmt.Sprintf("%s: %s", keyOf(parts[i][0].Input), vs[i].why))
			continue
		}
		if l.Timeout > 0 {
			if left = l.Timeout - time.Since(begin); left <= 0 {
				whys = append(whys, fmt.Sprintf("%s: %s", keyOf(parts[i][0].Input), vs[i].why))
				continue
			}
		}
		switch porcupine.CheckOperationsTimeout(l.model, parts[i], left) {
		case porcupine.Ok:
			continue
		case porcupine.Illegal:
			res, info := porcupine.CheckOperationsVerbose(l.model, parts[i], left)
			if res == porcupine.Illegal {
				why, cu, at, end := l.explain(parts[i:i+1], info)
				if cu != nil {
					details["culprit"] = *cu
				}
				details["key"] = keyName(parts[i][0].Input)
				return Result{Valid: Invalid, Details: details, Violation: why, At: at, End: end,
					Summary: fmt.Sprintf("no legal order exists for %d lock commands on %d keys", details["operations"], len(parts))}
			}
		}
		whys = append(whys, fmt.Sprintf("%s: %s, and porcupine's search ran out of the %s bound", keyOf(parts[i][0].Input),
			vs[i].why, l.Timeout))
	}
	if len(whys) == 0 {
		return Result{Valid: Valid, Details: details}
	}
	details["undecided"] = whys
	return Result{Valid: Unknown, Details: details,
		Summary: fmt.Sprintf("no verdict on %d of %d keys (%d commands, %d of uncertain outcome): %s", len(whys), len(parts),
			details["operations"], details["unknown_operations"], whys[0])}
}
