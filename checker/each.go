package checker

import "github.com/lockcheck/lockcheck/history"

// EachCommand calls yield with each command named fs as the models read it (the conversion Commands
// makes: commands that surely did not run left out, unknown ones bounded), in the history's order, with
// its index in h.Ops: coverage (package coverage) reads the same commands the models judge, and the
// records behind them (a resend's attempt, the wire's script and reply).
func EachCommand(h *history.History, fs []string, yield func(i int, in Command, out Reply)) {
	eachCommand(h, newNames(), fs, yield)
}

// APICommand is the model's command for a worker's recorded API request (lcp_acquire_permit: acquire),
// or "" for a record that is none.
func APICommand(f string) string { return apiCommands[f] }

// APIYesNo reports whether a worker's request f answers yes or no as 1 or 0, a 0 being a refusal.
func APIYesNo(f string) bool { return apiYesNo[f] }

// PermitGrants is, by index in h.Ops, whether each worker's acquire_permit brought a permit: its reply
// does not say, the workload's tryAcquire around it does (as APIOps reads it).
func PermitGrants(h *history.History) map[int]Outcome {
	g, _ := permitGrants(h)
	return g
}
