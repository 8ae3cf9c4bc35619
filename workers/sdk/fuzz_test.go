package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fakeMutex grants every acquire at once and holds nothing, so the fuzzer exercises the protocol, not a lock.
type fakeMutex struct{}

func (fakeMutex) Acquire(context.Context, int64, []string, time.Duration, time.Duration) (Grant, error) {
	return Grant{Granted: true}, nil
}
func (fakeMutex) Release(context.Context, int64, []string) error { return ErrNotHeld }
func (fakeMutex) Extend(context.Context, int64, []string, time.Duration) (bool, error) {
	return false, nil
}

// FuzzServe feeds arbitrary request streams to a worker built on the SDK: it never panics, exits with 0
// or 1, and writes nothing on stdout but JSON objects, one per line (the protocol's one rule for stdout).
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		`{"type":"init","msg_id":1,"protocol":1,"client":"c1","topology":{"kind":"single","nodes":[{"name":"n1","addr":"127.0.0.1:1"}]},"lock":{"kind":"naive","family":"mutex"}}` + "\n" +
			`{"type":"acquire","msg_id":2,"thread":1,"keys":["lock-0"],"wait_ms":0,"lease_ms":100}` + "\n" +
			`{"type":"release","msg_id":3,"thread":1,"keys":["lock-0"]}` + "\n" +
			`{"type":"shutdown","msg_id":4}` + "\n",
		`{"type":"acquire","msg_id":2,"thread":1}` + "\n",
		"not json\n{\"type\":\"init\"}\n",
		`{"type":"init","msg_id":1}` + "\n" + `{"type":"extend","msg_id":2,"thread":-1,"keys":[],"lease_ms":-5}` + "\n",
		`{"type":"init","msg_id":1}` + "\n" + `{"type":"set_permits","msg_id":2,"thread":1,"key":"k","n":1}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	w := Worker{Library: "fuzz", Version: "1", Kinds: []string{"naive"}, Caps: []string{"extend"},
		Connect: func(context.Context, *Message, func(Message)) (Mutex, error) { return fakeMutex{}, nil }}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		code := ServeIO(w, bytes.NewReader(in), &out)
		if code != 0 && code != 1 {
			t.Fatalf("exit %d", code)
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" && out.Len() == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("stdout line %q is not a JSON object: %v", line, err)
			}
		}
	})
}
