package sdk

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"
)

// meeting is a lock whose acquire by thread 1 returns only once thread 2's acquire has begun: a server
// that ran one request at a time would never answer thread 1.
type meeting struct{ two chan struct{} }

func (m *meeting) Acquire(ctx context.Context, thread int64, _ []string, _, _ time.Duration) (Grant, error) {
	if thread == 2 {
		close(m.two)
		return Grant{Granted: true}, nil
	}
	select {
	case <-m.two:
		return Grant{Granted: true}, nil
	case <-time.After(5 * time.Second):
		return Grant{}, errors.New("thread 2's request never ran while thread 1's was in flight")
	}
}
func (m *meeting) Release(context.Context, int64, []string) error { return nil }
func (m *meeting) Extend(context.Context, int64, []string, time.Duration) (bool, error) {
	return false, nil
}

// Serve answers the threads of one client concurrently, on the one lock value Connect made.
func TestServeRunsThreadsConcurrently(t *testing.T) {
	lock := &meeting{two: make(chan struct{})}
	connects := 0
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- ServeIO(Worker{Library: "meeting", Version: "1", Kinds: []string{"naive"},
			Connect: func(context.Context, *Message, func(Message)) (Mutex, error) { connects++; return lock, nil }}, inR, outW)
		outW.Close()
	}()
	// A server that ran one request at a time would leave the reads below waiting: fail them instead.
	stuck := time.AfterFunc(10*time.Second, func() {
		inW.CloseWithError(errors.New("stuck"))
		outR.CloseWithError(errors.New("stuck"))
	})
	defer stuck.Stop()
	enc := json.NewEncoder(inW)
	replies := bufio.NewScanner(outR)
	read := func() Message {
		if !replies.Scan() {
			t.Fatal("the worker closed its output")
		}
		var m Message
		if err := json.Unmarshal(replies.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	_ = enc.Encode(Message{Type: TypeInit, MsgID: 1})
	if m := read(); m.Type != "init_ok" {
		t.Fatalf("init: %+v", m)
	}
	_ = enc.Encode(Message{Type: TypeAcquire, MsgID: 2, Thread: 1, Keys: []string{"k"}})
	_ = enc.Encode(Message{Type: TypeAcquire, MsgID: 3, Thread: 2, Keys: []string{"k"}})
	got := map[int64]Message{}
	for len(got) < 2 {
		m := read()
		got[m.InReplyTo] = m
	}
	for id, m := range got {
		if m.Type != "acquire_ok" || m.Granted == nil || !*m.Granted {
			t.Errorf("reply to %d: %+v", id, m)
		}
	}
	_ = enc.Encode(Message{Type: TypeShutdown, MsgID: 4})
	read()
	inW.Close()
	if code := <-done; code != 0 || connects != 1 {
		t.Fatalf("exit %d after %d connects, want 0 after 1", code, connects)
	}
}
