package network

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// silentServer accepts connections and never answers them, as a wedged toxiproxy API would.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// A toxiproxy API that accepts and never answers fails Dial within apiTimeout, and a cancelled run ends
// the call at once. Before, toxiproxy's client waited for ever, deaf to Ctrl-C.
func TestDialSilentServerIsBounded(t *testing.T) {
	api := silentServer(t)
	begin := time.Now()
	_, err := Dial(context.Background(), api, "t")
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("Dial = %v, want no answer within %s", err, apiTimeout)
	}
	if took := time.Since(begin); took < apiTimeout || took > apiTimeout+3*time.Second {
		t.Fatalf("gave up after %v, want about %v", took, apiTimeout)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	begin = time.Now()
	if _, err := Dial(ctx, api, "t"); err == nil {
		t.Fatal("Dial succeeded on a silent server")
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("a cancelled Dial took %v", took)
	}
}
