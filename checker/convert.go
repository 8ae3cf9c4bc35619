package checker

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// mutexCommands are the commands that take, keep or let go an owner's hold: what the owner-by-owner
// checkers (lost-lock, told-of-loss) read.
var mutexCommands = []string{"acquire", "release", "renew", "expire"}

// crossCommands are the cross-thread commands MutexModel reads besides: the reads of a lock's state
// (held: isHeldByCurrentThread, is_locked) and the admin release of whoever holds it (force_release).
var crossCommands = append(slices.Clone(stateReads), "force_release")

// stateReads are the reads of a lock's state: isHeldByCurrentThread and isLocked.
var stateReads = []string{"held", "is_locked"}

// MutexOps converts a history's lock commands (acquire, release, renew, expire, and the cross-thread
// reads and force_release) for MutexModel.
func MutexOps(h *history.History) []porcupine.Operation {
	return Commands(h, slices.Concat(mutexCommands, crossCommands)...)
}

// Commands converts the history's commands named fs into model operations, in order of call. A command
// that surely did not run is left out; one whose outcome is unknown returns at +infinity.
func Commands(h *history.History, fs ...string) []porcupine.Operation {
	nm := newNames()
	ids := clientIDsNamed(h, nm)
	n := 0 // an upper bound: a command that surely did not run is left out
	for i := range h.Ops {
		if slices.Contains(fs, h.Ops[i].Invoke.F) {
			n++
		}
	}
	ops := make([]porcupine.Operation, 0, n) // once: a grown slice of a million leaves its old copies behind
	sends := resends{}
	eachCommand(h, nm, fs, func(i int, in Command, out Reply) {
		if in.Forced { // the model judges a refusal after a forceUnlock as any other: legal only for a non-holder
			in.Replay, in.Forced = false, false
		}
		if in.SplitRefusal(out) {
			// Legal in every state and changing none (Command.Split): the model learns nothing from it, and
			// each one in flight would multiply the frontier's configurations (16 contenders refused over
			// 5 s waits: no witness in 60 s).
			return
		}
		if sends.join(ops, h.Ops[i].Invoke.Args["attempt"], in, out) {
			return
		}
		ops = append(ops, porcupine.Operation{ClientId: ids[in.Client], Input: in, Output: out,
			Call: in.Call, Return: in.Return})
		sends.opened(len(ops)-1, in)
	})
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}

// resends joins an unlock's resends to its first send, for the models. One unlock request is sent up to 5
// times with one request id (Redisson resends a write whose reply timed out, on Sentinel and Cluster, and
// repeats one answered NoSync): each send is recorded as its own release, attempt n. The unlock latch
// keyed by the request id makes the sends one call that takes effect at most once, and every later send
// answers what that effect answered. Judged as separate releases (a repeat's answer taken as unknown), an
// inner unlock whose first reply was lost and whose resend deleted the outer hold (a script without the
// latch) had a legal order: the first send not applied, the resend as the one release. As one command,
// from the first send's call to the last one's return, answering what the send answered ok said, it has
// none: one release of a hold taken twice answers 0.
type resends map[[2]string]int // (key, owner) -> the index in ops of its latest unlock's first send

// opened notes a command that is no resend: a release starts a request later sends may join; any other
// command of the owner on the key ends the one before (a thread's calls follow each other).
func (r resends) opened(at int, in Command) {
	k := [2]string{in.Key, in.Owner}
	if in.F == "release" {
		r[k] = at
		return
	}
	delete(r, k)
}

// join folds a release sent again (attempt > 0) into its request's first send in ops, reporting whether
// it did. A resend whose earlier sends never ran (left out) starts the request itself, as a repeat whose
// answer proves nothing (Replay), as before.
func (r resends) join(ops []porcupine.Operation, attempt int64, in Command, out Reply) bool {
	at, ok := r[[2]string{in.Key, in.Owner}]
	if in.F != "release" || attempt <= 0 || !ok || ops[at].Output.(Reply).Outcome != Unsure {
		return false // an answered request is sent no more: this is another unlock's, its first sends left out
	}
	op := &ops[at]
	first := op.Input.(Command)
	first.Resent, first.LastSend = true, in.Call
	first.Return = max(first.Return, in.Return)
	first.Volatile = first.Volatile || in.Volatile
	op.Input, op.Return = first, first.Return
	if out.Outcome == Applied {
		op.Output = out // the last answer: the latch's, i.e. the one effect's
	}
	// A refused resend says less than it seems: besides "no send took effect and the owner holds
	// nothing", it may be a replica's answer (the script ran there read-only and WAIT failed: "ERR WAIT
	// cannot be used with replica instances", recorded as a failure with the script's value) after a
	// failover. The request's answer stays what the sends before said.
	return true
}

// eachCommand calls yield with each command named fs that the models read, in the history's order (not
// sorted by call), and its index in h.Ops: Commands boxes them for porcupine, LostLock groups them.
func eachCommand(h *history.History, nm *names, fs []string, yield func(i int, in Command, out Reply)) {
	want := map[string]bool{}
	for _, f := range fs {
		want[f] = true
	}
	facts := factsOf(h)
	volatile := facts.failover
	split := splitBrain(h)
	deadline := unknownDeadline(h)
	down := downNodes(h)
	forced := forcedSince(h, nm)
	for i := range h.Ops {
		o := &h.Ops[i]
		inv := &o.Invoke
		if !want[inv.F] {
			continue
		}
		in := Command{Key: nm.key(inv), Client: nm.thread(inv), F: inv.F, Owner: nm.owner(inv),
			Lease: inv.Args["lease_ms"] * int64(time.Millisecond), Call: inv.Time, Return: math.MaxInt64,
			Replay: inv.Args["attempt"] > 0 || inv.Args["uncertain"] == 1, Fair: inv.Args["fair"] == 1, Read: inv.Args["read"] == 1,
			N: firstNonZero(inv.Args["permits"], inv.Args["count"]), Volatile: volatile, Watchdog: inv.Args["watchdog"] == 1,
			Split: facts.masters && inv.Node == "" && inv.F == "acquire"}
		out := Reply{Outcome: Unsure}
		if c := o.Complete; c != nil && c.Type == history.Unknown {
			if down(inv.Node, inv.Time, c.Time) {
				continue // sent to a killed server, given up before it restarted: it never ran
			}
			in.Return = deadline(inv.Time, c.Time)
		}
		if c := o.Complete; c != nil && c.Type != history.Unknown {
			switch {
			case c.Type == history.Ok && c.Args["nosync"] == 1:
				out = Reply{Outcome: Unsure} // applied on a primary no replica acknowledged: a failover may undo it
			case c.Type == history.Ok:
				out = Reply{Outcome: Applied}
				if c.Value != nil {
					out.Value = *c.Value
				}
			case c.Value != nil:
				out = Reply{Outcome: Refused, Value: *c.Value}
			default:
				continue // failed before it ran: no effect, nothing learned
			}
			in.Return = c.Time
			if split(inv.Client, inv.Time) && (out.Outcome == Refused || slices.Contains(stateReads, inv.F)) {
				// It may have been served by the isolated old primary: a refusal changed nothing, and what it
				// says may be about a branch the failover throws away. (Writes there carry nosync, unsure above;
				// a write some replica acknowledged was not served by the isolated primary. A read of the lock's
				// state there, likewise, may be of the branch thrown away.)
				continue
			}
		}
		forced(&in, out)
		yield(i, in, out)
	}
}

// forcedSince returns what marks an owner's refused command that a forceUnlock explains: a
// force_release on the key that may have taken effect (applied, or of unknown outcome) after the owner's
// latest sure grant, with no release of that hold since. forceUnlock removes a holder without telling it
// (by design), so its later refused release, renewal or re-entry proves no loss: the command is marked
// Forced and Replay (its answer proves nothing of the hold), which the owner-by-owner checkers skip; the
// model (Commands) clears both and judges it as any refusal. Called in the history's order, which is each
// thread's order of calls.
func forcedSince(h *history.History, nm *names) func(in *Command, out Reply) {
	type span struct{ call, ret int64 }
	forces := map[string][]span{}
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Invoke.F != "force_release" || o.Complete != nil && o.Complete.Type != history.Unknown && o.Complete.Type != history.Ok {
			continue // refused (nothing to delete) or failed before it ran: it ended no hold
		}
		ret := int64(math.MaxInt64)
		if o.Complete != nil && o.Complete.Type == history.Ok {
			ret = o.Complete.Time
		}
		k := nm.key(&o.Invoke)
		forces[k] = append(forces[k], span{o.Invoke.Time, ret})
	}
	if len(forces) == 0 {
		return func(*Command, Reply) {}
	}
	granted := map[[2]string]int64{} // (key, owner) -> the call of its latest sure grant, while it holds
	return func(in *Command, out Reply) {
		k := [2]string{in.Key, in.Owner}
		switch {
		case in.F == "acquire" && out.Outcome == Applied:
			if _, ok := granted[k]; !ok { // a re-entry keeps the hold's first grant
				granted[k] = in.Call
			}
		case in.F == "release" && out.Outcome == Applied && out.Value == 1:
			delete(granted, k)
		case out.Outcome == Refused && !in.Replay:
			g, ok := granted[k]
			if !ok {
				return
			}
			for _, f := range forces[in.Key] {
				if f.call < in.Return && f.ret > g {
					in.Forced, in.Replay = true, true
					delete(granted, k) // the hold ended at the force, whatever follows
					return
				}
			}
		}
	}
}

// unknownSlack covers what can still pass between a client giving up on a command and the command reaching
// its server: the client closing the connection, and a command still in a latency toxic.
const unknownSlack = time.Second

// unknownDeadline bounds when a command whose outcome is unknown can have taken effect. In lockcheck's own
// topologies a command either reached its server within moments (a healthy link, or the request direction
// of drop-reply; a latency toxic delays it by --latency + --jitter), or never will (a cut black-holes it
// and the heal closes that connection, a killed server lost its socket, a replication stall holds
// nothing of clients'), or it waits in the socket of a paused server and runs when the server resumes. So
// the effect happens before the client gave up plus a slack, or before the end of a pause that overlaps
// the command. Without this bound an unknown command returns at +infinity, could take effect at any later
// point, and a burst of them at a failover makes the search explode. A deployment lockcheck did not start
// (--backend external) may hold commands back in ways lockcheck cannot see, so there they stay unbounded.
func unknownDeadline(h *history.History) func(call, gaveUp int64) int64 {
	run := factsOf(h)
	if !run.known || run.external {
		return func(int64, int64) int64 { return math.MaxInt64 }
	}
	slack := int64(unknownSlack) + run.slack
	var pauses spans
	for _, w := range h.Windows() {
		if w.Kind == "pause" {
			pauses = append(pauses, [2]int64{w.Start, w.End})
		}
	}
	latest := pauses.index()
	return func(call, gaveUp int64) int64 {
		end := gaveUp
		if e, ok := latest(gaveUp); ok && e >= call { // the latest-ending pause begun by gaveUp overlaps the call
			end = max(end, e)
		}
		return satAdd(end, slack)
	}
}

// spans are intervals [start, end].
type spans [][2]int64

// index sorts the spans and returns a function that, for t, says the latest end among the spans begun by t
// (false: none): a span meets [a, t] exactly when it began by t and that latest end is at least a. Each
// question costs a binary search, not a scan of every span (a loop of faults writes many).
func (s spans) index() func(t int64) (int64, bool) {
	slices.SortFunc(s, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	most := make([]int64, len(s)) // most[i]: the latest end of s[:i+1]
	for i, x := range s {
		most[i] = x[1]
		if i > 0 {
			most[i] = max(most[i], most[i-1])
		}
	}
	return func(t int64) (int64, bool) {
		n := sort.Search(len(s), func(i int) bool { return s[i][0] > t })
		if n == 0 {
			return 0, false
		}
		return most[n-1], true
	}
}

// downNodes reports whether a command sent to node at call, whose client gave up at gaveUp, went to a
// server that the kill fault had stopped and that did not answer again yet. Such a command never ran: the
// kill's start record follows the server's exit, and the proxy joins each client connection to the server
// it dials when the client connects, closing it (with whatever it holds) when that server is gone or cannot
// be dialled, so nothing sent then reaches the server started later. The restarted server answers every
// command with a LOADING error (a failure, not an unknown) until its data is loaded, and the kill's last
// step record for the node follows its first answer to PING after that: a command of unknown outcome given
// up before then never reached a server able to run it. The first step marks where the restart began
// (histories before the second step end their span there); a history without steps keeps every such
// command unknown. A record names the server only where each client talks to one node (single, Redlock's
// masters): on Sentinel or Cluster it names the client's first node, and a command may have gone to
// another; lockcheck does not see inside an external deployment. (A burst of such unknowns, clients
// retrying a refused node, made the search give up.)
func downNodes(h *history.History) func(node string, call, gaveUp int64) bool {
	never := func(string, int64, int64) bool { return false }
	if run := factsOf(h); !run.known || run.external || !run.oneNode {
		return never
	}
	type span struct{ from, to int64 }
	spans := map[string][]span{}
	open := map[string]*span{} // node -> its kill's start and its latest step (to < 0: none yet)
	for _, f := range h.Faults {
		if f.F != "kill" {
			continue
		}
		for _, n := range f.Targets {
			switch f.Phase {
			case "start":
				open[n] = &span{f.Time, -1}
			case "step":
				if s, ok := open[n]; ok {
					s.to = f.Time
				}
			case "stop", "error":
				if s, ok := open[n]; ok && s.to >= 0 {
					spans[n] = append(spans[n], *s)
				}
				delete(open, n)
			}
		}
	}
	for n, s := range open { // a kill the history ends inside of
		if s.to >= 0 {
			spans[n] = append(spans[n], *s)
		}
	}
	if len(spans) == 0 {
		return never
	}
	return func(node string, call, gaveUp int64) bool {
		for _, s := range spans[node] {
			if call >= s.from && gaveUp < s.to {
				return true
			}
		}
		return false
	}
}

// splitBrainGrace is how long after a failover fault heals a client kept on the old primary may still be
// talking to it (until Sentinel turns it into a replica and its writes fail).
const splitBrainGrace = 5 * time.Second

// splitBrain returns whether a command of client at t may have been served by a primary that was isolated
// and then demoted: during a failover fault (and its grace) the clients it kept on the old primary may see
// a branch of history that the failover throws away.
func splitBrain(h *history.History) func(client string, t int64) bool {
	kept := map[string]spans{}
	for _, w := range h.Windows() {
		if w.Kind != "failover" {
			continue
		}
		for _, c := range nemesis.KeptClients(nemesis.ParseTargets(w.Targets)) {
			kept[c] = append(kept[c], [2]int64{w.Start, w.End + int64(splitBrainGrace)})
		}
	}
	latest := map[string]func(int64) (int64, bool){}
	for c, s := range kept {
		latest[c] = s.index()
	}
	return func(client string, t int64) bool {
		if l := latest[client]; l != nil {
			e, ok := l(t)
			return ok && e >= t
		}
		return false
	}
}

func firstNonZero(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// nodeKey is what a model partitions by: the key, with its node where a lock spans masters, named as
// every output names it ("lock-1 on n1": one name for a key everywhere).
func nodeKey(r history.Call) string {
	if r.Node == "" {
		return r.Key
	}
	return r.Key + onNode + r.Node
}

const onNode = " on "

// SplitKey parts a checker's key name ("lock-1 on n1") into the key and its node ("" where the lock
// has one).
func SplitKey(k string) (key, node string) {
	if i := strings.LastIndex(k, onNode); i >= 0 {
		return k[:i], k[i+len(onNode):]
	}
	return k, ""
}

// ownerName is a readable stand-in for an owner id <uuid>:<thread> (one uuid per client): client/thread.
// A read-write lock's write half (<uuid>:<thread>:write) is the same thread; a permit id stays as it is.
func ownerName(r history.Call) string {
	o := strings.TrimSuffix(r.Owner, ":write")
	i := strings.LastIndex(o, ":")
	if i < 0 {
		return o
	}
	return r.Client + "/" + o[i+1:]
}
