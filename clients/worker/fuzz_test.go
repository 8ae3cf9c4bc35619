package worker

import (
	"encoding/json"
	"testing"
)

// FuzzDecode feeds arbitrary worker output lines to the driver's reader: it never panics, accepts only
// JSON objects, and what it accepts survives a round trip (so a reply is read as the worker wrote it).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"type":"init_ok","in_reply_to":1,"library":"redisson","version":"4.7.0","kinds":["reentrant"],"caps":["watchdog"]}`,
		`{"type":"acquire_ok","in_reply_to":7,"granted":true,"token":42,"valid_ms":900}`,
		`{"type":"error","in_reply_to":7,"code":40,"text":"not held"}`,
		`{"type":"event","event":"lost","thread":2,"key":"lock-0"}`,
		`[1,2,3]`, `"string"`, `{"in_reply_to":-1}`, `{"granted":"yes"}`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decode(line)
		if err != nil {
			return
		}
		var obj map[string]any
		if json.Unmarshal(line, &obj) != nil {
			t.Fatalf("accepted %q, which is not a JSON object", line)
		}
		_ = granted(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted message does not marshal: %v", err)
		}
		back, err := decode(b)
		if err != nil {
			t.Fatalf("round trip of %q: %v", line, err)
		}
		if b2, _ := json.Marshal(back); string(b2) != string(b) {
			t.Fatalf("round trip of %q: %s, then %s", line, b, b2)
		}
	})
}
