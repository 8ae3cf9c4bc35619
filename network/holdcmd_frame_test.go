package network

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/network/wire"
)

// The framer splits a client's stream into whole commands, waits for the rest of a partial one, and calls
// a stream that is not a command stream an error (the toxic then passes it untouched).
func TestFrameCommand(t *testing.T) {
	full := "*3\r\n$7\r\nPEXPIRE\r\n$1\r\nk\r\n$4\r\n1000\r\n"
	for _, tc := range []struct {
		in    string
		n     int
		words string
		bad   bool
	}{
		{in: full + "*1\r\n$4\r\nPING\r\n", n: len(full), words: "PEXPIRE k 1000"},
		{in: full[:len(full)-1]},              // the last CRLF not here yet
		{in: full[:9]},                        // inside a bulk header
		{in: "PING\r\n", n: 6, words: "PING"}, // inline
		{in: "PING"},
		{in: "*1\r\n+PING\r\n", bad: true},
		{in: "*x\r\n", bad: true},
		{in: "*1\r\n$-1\r\n", bad: true},
	} {
		n, args, err := wire.FrameCommand([]byte(tc.in))
		var words []string
		for _, a := range args {
			words = append(words, string(a))
		}
		if (err != nil) != tc.bad || n != tc.n || (n > 0 && strings.Join(words, " ") != tc.words) {
			t.Errorf("%q: %d %q %v; want %d %q bad=%v", tc.in, n, words, err, tc.n, tc.words, tc.bad)
		}
	}
	if !runs([][]byte{[]byte("EVAL"), []byte("local r = redis.call( 'PEXPIRE', KEYS[1], ARGV[1]) return r"), []byte("1")}, "PEXPIRE") {
		t.Error("a script whose first call is pexpire is not told")
	}
	lockScript := "if redis.call('exists', KEYS[1]) == 0 then redis.call('pexpire', KEYS[1], ARGV[1]) end"
	if runs([][]byte{[]byte("EVAL"), []byte(lockScript), []byte("1")}, "PEXPIRE") {
		t.Error("a script whose first call is exists is held as a PEXPIRE")
	}
	if runs([][]byte{[]byte("EVALSHA"), []byte(sha1Hex("return redis.call('pexpire', KEYS[1], 2)")), []byte("1")}, "PEXPIRE") {
		t.Error("EVALSHA of a script never seen is held: the proxy cannot know what it runs")
	}
	if !runs([][]byte{[]byte("evalsha"), []byte(strings.ToUpper(sha(t, "return redis.call('pexpire', KEYS[1], 1)")))}, "PEXPIRE") {
		t.Error("EVALSHA of a script seen as text is not told")
	}
}

// sha feeds text through SCRIPT LOAD, as a client's first use of it would, and returns its SHA-1.
func sha(t *testing.T, text string) string {
	t.Helper()
	if runs([][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(text)}, "PEXPIRE") {
		t.Error("SCRIPT LOAD held: loading runs nothing")
	}
	return sha1Hex(text)
}

func sha1Hex(text string) string {
	h := sha1.Sum([]byte(text))
	return hex.EncodeToString(h[:])
}
