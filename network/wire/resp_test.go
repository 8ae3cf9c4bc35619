package wire

import (
	"strings"
	"testing"
)

// decodeAll feeds s in chunks of size n (0: whole) and returns the values' renderings and the error.
func decodeAll(s string, commands bool, n int) ([]string, error) {
	d := NewDecoder(commands)
	var out []string
	emit := func(v Value) { out = append(out, render(v)) }
	if n <= 0 {
		n = len(s) + 1
	}
	for i := 0; i < len(s); i += n {
		if err := d.Feed([]byte(s[i:min(i+n, len(s))]), emit); err != nil {
			return out, err
		}
	}
	return out, nil
}

// render shows a value with its kind, so tests tell types apart.
func render(v Value) string {
	var b strings.Builder
	b.WriteByte(byte(v.Kind))
	switch {
	case v.Nil:
		b.WriteString("nil")
	case v.Kind == Integer:
		b.WriteString(v.String())
	case v.Elems != nil:
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(render(e))
		}
		b.WriteByte(']')
	default:
		b.WriteString(string(v.Str))
	}
	return b.String()
}

func TestDecodeRepliesEveryTypeAtEveryChunkSize(t *testing.T) {
	stream := "+OK\r\n-ERR wrong\r\n:42\r\n:-7\r\n$5\r\nhello\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n" +
		"*3\r\n:1\r\n$3\r\na\r\nb\r\n*1\r\n+x\r\n" + // a bulk holding CRLF-free bytes and a nested array
		"_\r\n#t\r\n,3.14\r\n(12345678901234567890\r\n!3\r\nbad\r\n=7\r\ntxt:abc\r\n" +
		"%1\r\n+k\r\n:1\r\n~2\r\n:1\r\n:2\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n" +
		"|1\r\n+ttl\r\n:3\r\n+after-attribute\r\n" + "$4\r\na\r\nb\r\n"
	want := []string{"+OK", "-ERR wrong", ":42", ":-7", "$hello", "$", "$nil", "*nil", "*[]",
		"*[:1 $a\r\nb *[+x]]", "_nil", "#t", ",3.14", "(12345678901234567890", "!bad", "=txt:abc",
		"%[+k :1]", "~[:1 :2]", ">[$message $ch $0]", "+after-attribute", "$a\r\nb"}
	// the last bulk's payload contains CRLF: only its length says where it ends
	stream = strings.Replace(stream, "*3\r\n:1\r\n$3\r\na\r\nb\r\n", "*3\r\n:1\r\n$4\r\na\r\nb\r\n", 1)
	for n := 0; n <= 7; n++ {
		got, err := decodeAll(stream, false, n)
		if err != nil {
			t.Fatalf("chunk %d: %v", n, err)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("chunk %d:\n got %q\nwant %q", n, got, want)
		}
	}
}

func TestDecodeCommandsArrayAndInline(t *testing.T) {
	stream := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\nset  a   b\n*1\r\n$4\r\nPING\r\n"
	want := "*[$GET $k]|i[$PING]|i[]|i[$set $a $b]|*[$PING]"
	for n := 0; n <= 5; n++ {
		got, err := decodeAll(stream, true, n)
		if err != nil || strings.Join(got, "|") != want {
			t.Fatalf("chunk %d: %q %v, want %q", n, got, err, want)
		}
	}
	// Replies have no inline form: a bare word from a server is garbage.
	if _, err := decodeAll("PONG\r\n", false, 0); err == nil {
		t.Fatal("an inline reply was accepted")
	}
}

func TestDecodeGarbageFailsForGood(t *testing.T) {
	for _, s := range []string{
		"?what\r\n", ":12a\r\n", "$3\r\nabcd\r\n", "$-2\r\n", "*-5\r\n", "+OK\n", "#x\r\n", "_1\r\n",
		":\r\n", "$99999999999999999999\r\n", strings.Repeat("*1\r\n", MaxDepth+2) + ":1\r\n",
	} {
		d := NewDecoder(false)
		err := d.Feed([]byte(s), func(Value) {})
		if err == nil {
			t.Fatalf("%q: no error", s)
		}
		if d.Feed([]byte("+OK\r\n"), func(Value) { t.Fatalf("%q: decoded after an error", s) }) == nil {
			t.Fatalf("%q: the error did not stick", s)
		}
	}
}

func TestDecodeBoundsMemory(t *testing.T) {
	d := NewDecoder(false)
	// A huge announced count allocates nothing until its elements arrive.
	if err := d.Feed([]byte("*50000000\r\n:1\r\n"), func(Value) {}); err != nil {
		t.Fatal(err)
	}
	// A line that never ends is refused once it is longer than any header can be.
	d = NewDecoder(false)
	if err := d.Feed([]byte("+"+strings.Repeat("x", maxLine+10)), func(Value) {}); err == nil {
		t.Fatal("an endless line was buffered")
	}
	// A bulk string in progress is not re-parsed on every chunk: a big value fed byte by byte completes.
	d = NewDecoder(false)
	body := strings.Repeat("y", 200000)
	s := "$200000\r\n" + body + "\r\n"
	got := 0
	for i := 0; i < len(s); i += 100 {
		if err := d.Feed([]byte(s[i:min(i+100, len(s))]), func(v Value) {
			if string(v.Str) != body {
				t.Fatal("wrong body")
			}
			got++
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got != 1 {
		t.Fatalf("%d values", got)
	}
}
