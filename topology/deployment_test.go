package topology

import (
	"strings"
	"testing"
)

// Issue 9, item 16: a malformed address or toxiproxy URL is refused before anything dials it.
func TestExternalAddressesChecked(t *testing.T) {
	good := ExternalFlags{Topology: Redlock, Addrs: "127.0.0.1:6379,localhost:6380", Toxiproxy: "http://127.0.0.1:8474"}
	if _, err := ExternalFromFlags(good); err != nil {
		t.Fatal(err)
	}
	good.Toxiproxy = "127.0.0.1:8474" // toxiproxy's client takes host:port as http
	if _, err := ExternalFromFlags(good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    ExternalFlags
		want string
	}{
		{ExternalFlags{Topology: Single, Addrs: "127.0.0.1"}, `address "127.0.0.1": want host:port`},
		{ExternalFlags{Topology: Single, Addrs: "127.0.0.1:abc"}, "port 1-65535"},
		{ExternalFlags{Topology: Single, Addrs: "127.0.0.1:70000"}, "port 1-65535"},
		{ExternalFlags{Topology: Single, Addrs: ":6379"}, "want host:port"},
		{ExternalFlags{Topology: Single, Addrs: "127.0.0.1:6379", Toxiproxy: "ftp://x"}, "toxiproxy"},
		{ExternalFlags{Topology: Single, Addrs: "127.0.0.1:6379", Toxiproxy: "http://"}, "toxiproxy"},
		{ExternalFlags{Topology: Sentinel, Addrs: "127.0.0.1:6379", Sentinels: "127.0.0.1", MasterName: "m"}, "sentinels"},
	} {
		if _, err := ExternalFromFlags(c.f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}

// Several unreachable nodes are one line, saying how many.
func TestOneLine(t *testing.T) {
	err := oneLine("head", 3, []error{errorString("a\nb"), errorString("c")})
	if err.Error() != "head (2 of 3): a b; c" {
		t.Fatalf("%q", err)
	}
	if oneLine("head", 3, nil) != nil {
		t.Fatal("no errors gave an error")
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
