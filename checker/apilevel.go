package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// Judging levels, per key: what porcupine read to judge a key.
const (
	// LevelWire is the lock commands decoded from the clients' links (Src "wire").
	LevelWire = "wire"
	// LevelClient is the clients' own command records: lockcheck's Go clients write one per command,
	// and a mutex worker's acquire and release calls are recorded the same way when the wire was incomplete.
	LevelClient = "client"
	// LevelAPI is a worker's own calls to its library (the lcp_ records: acquire_permit → permit,
	// release_permit → released, ...), read where neither of the above holds the key's commands: Redisson's
	// semaphores and latch run scripts the wire recorder does not map.
	LevelAPI = "api"
)

// apiCommands maps a worker's recorded request (history.UnseenPrefix + its protocol type) to the command
// the count models read. These F names are part of the history format (clients/worker/client.go writes them).
var apiCommands = map[string]string{
	"lcp_set_permits":     "setPermits",
	"lcp_acquire_permits": "acquire",
	"lcp_release_permits": "release",
	"lcp_acquire_permit":  "acquire",
	"lcp_release_permit":  "release",
	"lcp_available":       "available",
	"lcp_set_count":       "setCount",
	"lcp_count_down":      "countDown",
	"lcp_await":           "await",
}

// apiYesNo are the requests whose reply is a yes or no (granted, set, released, done) recorded as value
// 1 or 0: a no is a refusal for the model, except await's, which is a read of the count.
var apiYesNo = map[string]bool{"lcp_set_permits": true, "lcp_acquire_permits": true, "lcp_release_permit": true,
	"lcp_set_count": true}

// modelCommands are the commands the count models read from a client's own records: a key one of them
// touched (a mixed run's Go clients) is not judged from a worker's API records alone.
var modelCommands = map[string]bool{"setPermits": true, "acquire": true, "release": true, "available": true,
	"setCount": true, "countDown": true, "getCount": true}

// hasAPICalls reports whether h holds a worker's API calls that APIOps reads.
func hasAPICalls(h *history.History) bool {
	for i := range h.Ops {
		if inv := &h.Ops[i].Invoke; inv.Src == "" && strings.HasPrefix(inv.F, history.UnseenPrefix) && apiCommands[inv.F] != "" {
			return true
		}
	}
	return false
}

// APIOps converts, for porcupine, the worker API calls (lcp_ records) on the keys that skip names, each
// key only where no client's own record holds its commands. keys lists the keys it converted.
func APIOps(h *history.History, skip map[string]bool) (ops []porcupine.Operation, keys []string) {
	nm := newNames()
	own := map[string]bool{} // keys some client changed through records the models read directly
	found := false
	for i := range h.Ops {
		inv := &h.Ops[i].Invoke
		switch {
		case inv.Src != "":
		case apiCommands[inv.F] != "":
			found = true
		case modelCommands[inv.F]:
			own[nm.key(inv)] = true
		}
	}
	if !found {
		return nil, nil
	}
	grants, ids := permitGrants(h)
	ids2 := clientIDsNamed(h, nm)
	fs := make([]string, 0, len(apiCommands))
	for f := range apiCommands {
		fs = append(fs, f)
	}
	seen := map[string]bool{}
	eachCommand(h, nm, fs, func(i int, in Command, out Reply) {
		if skip[in.Key] || own[in.Key] {
			return
		}
		f := in.F
		in.F, in.API = apiCommands[f], true
		switch {
		case f == "lcp_acquire_permit":
			in.Owner = ids[i]
			if out.Outcome == Applied {
				out.Outcome = grants[i]
			}
			out.Value = 0
		case apiYesNo[f] && out.Outcome == Applied && out.Value == 0:
			out.Outcome = Refused
		case f == "lcp_release_permits" || f == "lcp_count_down":
			in.NoCount = true
		}
		if !seen[in.Key] {
			seen[in.Key] = true
			keys = append(keys, in.Key)
		}
		call := in.Call
		if f == "lcp_acquire_permit" && out.Outcome == Applied && in.Lease > 0 {
			call = max(call, in.Return-grantSlack) // the search's first try: see grantSlack
		}
		ops = append(ops, porcupine.Operation{ClientId: ids2[in.Client], Input: in, Output: out, Call: call, Return: in.Return})
	})
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	sort.Strings(keys)
	return ops, keys
}

// permitGrants reads what an expirable semaphore's acquire_permit record leaves out: whether a permit
// came (the workload's own tryAcquire around it says: ok or refused) and its id (the thread's next
// release_permit on the key names it, as a thread holds one permit at a time). A grant whose permit is
// never released gets an id of its own, which only its lease ends; one with no workload record around it
// is unsure. Both maps are by index in h.Ops.
func permitGrants(h *history.History) (map[int]Outcome, map[int]string) {
	type thread struct {
		client string
		id     int64
	}
	grants, ids := map[int]Outcome{}, map[int]string{}
	around := map[thread]int{}  // the thread's latest tryAcquire
	pending := map[thread]int{} // the thread's latest acquire_permit awaiting its release
	for i := range h.Ops {
		o := &h.Ops[i]
		inv := &o.Invoke
		if inv.Src != "" {
			continue
		}
		t := thread{inv.Client, inv.Thread}
		switch inv.F {
		case "tryAcquire":
			around[t] = i
		case "lcp_acquire_permit":
			grants[i] = Unsure
			if j, ok := around[t]; ok && h.Ops[j].Invoke.Key == inv.Key && h.Ops[j].Complete != nil {
				switch c := h.Ops[j].Complete; {
				case c.Type == history.Ok:
					grants[i] = Applied
				case c.Type == history.Fail && c.Error == "":
					grants[i] = Refused
				}
			}
			delete(around, t)
			ids[i] = fmt.Sprintf("%s/%d#%d", inv.Client, inv.Thread, i)
			pending[t] = i
		case "lcp_release_permit":
			if j, ok := pending[t]; ok && h.Ops[j].Invoke.Key == inv.Key {
				ids[j] = inv.Owner
				delete(pending, t)
			}
		}
	}
	return grants, ids
}

// keyLevels says, per key porcupine judged, at which level: the API keys at LevelAPI, the others at the
// run's level (level, "" when unsaid: lockcheck's own Go clients' command records).
func keyLevels(ops []porcupine.Operation, api []string, level string) map[string]string {
	out := map[string]string{}
	if level == "" {
		level = LevelClient
	}
	for _, o := range ops {
		if c, ok := o.Input.(Command); ok {
			out[c.Key] = level
		}
	}
	for _, k := range api {
		out[k] = LevelAPI
	}
	return out
}

// levelNote is the summary's "(N keys at the API level)" note.
func levelNote(levels map[string]string) string {
	n := 0
	for _, l := range levels {
		if l == LevelAPI {
			n++
		}
	}
	switch {
	case n == 0:
		return ""
	case n == len(levels):
		return " (the worker's API calls: the wire recorder maps none of these commands)"
	}
	return fmt.Sprintf(" (%d of %d keys judged by the worker's API calls: %s)", n, len(levels), strings.Join(apiKeys(levels), ", "))
}

func apiKeys(levels map[string]string) []string {
	var out []string
	for k, l := range levels {
		if l == LevelAPI {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// grantSlack bounds, in the search's first try, how long before its reply a library granted a permit
// with a lease (an expirable semaphore's acquire_permit): a call may wait seconds for a permit, and
// placing each such grant anywhere in its wait, where its lease could run out and its permit be taken
// again before the reply, multiplies the orders beyond any bound (16 threads waiting: over a million
// configurations within half a second of history; at the end of a run, where every holder lets go and
// every waiter is granted at once, 100 ms still let it run out of a minute, 20 ms decides it in 13 ms).
// The deadline the model gives the permit still spans the whole call. A legal order found so is legal;
// an illegal verdict is confirmed with the whole call (Linearizable.confirm) or by a release that no
// order can excuse (lapsedRelease).
const grantSlack = int64(20 * time.Millisecond)

// widened is ops with every API grant's whole call (the search's second try), or nil when none was
// narrowed.
func widened(ops []porcupine.Operation) []porcupine.Operation {
	var out []porcupine.Operation
	for i, o := range ops {
		if c, ok := o.Input.(Command); ok && c.API && c.Call < o.Call {
			if out == nil {
				out = slices.Clone(ops)
			}
			out[i].Call = c.Call
		}
	}
	if out != nil {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	}
	return out
}

// lapsedRelease finds, among the API calls, an expirable semaphore's release that answered "released"
// for a permit whose lease had surely run out (called after its grant's reply + lease + slack): no
// order excuses it, as the model releases a permit only while it may be live.
func lapsedRelease(ops []porcupine.Operation) (porcupine.Operation, string, bool) {
	hi := map[[2]string]int64{}
	for _, o := range ops {
		c, ok := o.Input.(Command)
		r, _ := o.Output.(Reply)
		if ok && c.API && r.Outcome == Applied && c.F == "acquire" && c.N == 0 && c.Lease > 0 {
			hi[[2]string{c.Key, c.Owner}] = satAdd(satAdd(c.Return, c.Lease), Epsilon(c.Lease))
		}
	}
	for _, o := range ops {
		c, ok := o.Input.(Command)
		r, _ := o.Output.(Reply)
		if !ok || !c.API || c.F != "release" || c.NoCount || r.Outcome != Applied {
			continue
		}
		if h, ok := hi[[2]string{c.Key, c.Owner}]; ok && c.Call > h {
			return o, fmt.Sprintf("key %s: %s (called %s) says the permit was released, but its lease had run out by %s "+
				"(its grant's reply + lease): no order of the commands excuses it", c.Key,
				unescape(describeCommand(c, r)), Secs(c.Call), Secs(h)), true
		}
	}
	return porcupine.Operation{}, "", false
}
