package checker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// porcupine's timeline labels its rows with the numeric client ids (0..n-1). These are the two places in
// its script (v1.3.1) that draw a row's label; rowLabels replaces them with a lookup in the row names, so
// that a row reads c3/1 or "c3 watchdog". A porcupine whose script no longer matches keeps its numbered
// rows, and fails the test that reads the labels.
var rowLabelCode = [][2]string{
	{"const tag = i < realClients ? i.toString() :", "const tag = i < realClients ? lockcheckRows[i] ?? i.toString() :"},
	{"text.textContent = i < realClients ? i :", "text.textContent = i < realClients ? lockcheckRows[i] ?? i :"},
}

// rowNames names porcupine's client ids after the client threads of clientIDs: c3/1, and "c3 watchdog" for
// a client's own-initiative commands.
func rowNames(h *history.History) []string {
	ids := clientIDs(h)
	names := make([]string, 0, len(ids))
	for _, o := range h.Ops {
		id := ids[threadName(o.Invoke)]
		for len(names) <= id {
			names = append(names, "")
		}
		if names[id] == "" {
			names[id] = fmt.Sprintf("%s/%d", o.Invoke.Client, o.Invoke.Thread)
			if o.Invoke.Thread == 0 {
				names[id] = o.Invoke.Client + " watchdog"
			}
		}
	}
	return names
}

// labelRows rewrites porcupine's page to label the rows with names.
func labelRows(page []byte, names []string) ([]byte, error) {
	js, err := json.Marshal(names) // escapes <, > and &: it cannot end the script element
	if err != nil {
		return nil, err
	}
	// The data follows the script: only the script part is rewritten.
	at := bytes.Index(page, []byte("const data = "))
	if at < 0 {
		return nil, fmt.Errorf("porcupine's timeline has no data where lockcheck expects it")
	}
	code := page[:at]
	for _, r := range rowLabelCode {
		if bytes.Count(code, []byte(r[0])) != 1 {
			return nil, fmt.Errorf("porcupine's timeline script is not the one lockcheck knows: cannot name its rows")
		}
		code = bytes.Replace(code, []byte(r[0]), []byte(r[1]), 1)
	}
	out := append([]byte{}, code...)
	out = append(out, "const lockcheckRows = "...)
	out = append(out, js...)
	out = append(out, "\n      "...)
	return append(out, page[at:]...), nil
}
