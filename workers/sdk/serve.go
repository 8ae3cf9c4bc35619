package sdk

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
)

// Grant is an acquire's answer.
type Grant struct {
	Granted bool
	Token   int64         // fencing token, 0 for none
	Valid   time.Duration // how long the grant is valid from the reply (Redlock's validity), 0 if unsaid
}

// Mutex is what a Go lock library implements to become a worker (the mutex family). thread is the owner:
// keep one lock value per (thread, key). Serve calls it from one goroutine per request, so the client's
// threads (1..--threads) run concurrently on the one value Connect made, as an application's goroutines
// share one client; lockcheck never has two requests of one thread in flight. Return ErrNotHeld when the
// library says the owner does not hold the lock, an *Error for another protocol code, any other error for
// "crash" (indefinite).
type Mutex interface {
	Acquire(ctx context.Context, thread int64, keys []string, wait, lease time.Duration) (Grant, error)
	Release(ctx context.Context, thread int64, keys []string) error
	Extend(ctx context.Context, thread int64, keys []string, lease time.Duration) (bool, error)
}

// Worker describes a library and how to connect it.
type Worker struct {
	Library, Version string
	Kinds            []string // lock kinds it drives, e.g. "naive"
	Caps             []string // optional features: extend, fencing, watchdog, reentrant, events; single-thread (CapSingleThread)
	// LeaseGranularity, when the library's leases are whole multiples of a unit (whole seconds), is that
	// unit: announced in init_ok, so that lockcheck sends only leases the library can honour.
	LeaseGranularity time.Duration
	// Connect builds the lock from the init message; emit sends an event (type "event" is filled in). An
	// error is answered to init and the worker exits.
	Connect func(ctx context.Context, init *Message, emit func(Message)) (Mutex, error)
}

// Serve runs the worker on stdin and stdout and exits.
func Serve(w Worker) { os.Exit(ServeIO(w, os.Stdin, os.Stdout)) }

// ServeIO runs the worker on in and out and returns the exit code.
func ServeIO(w Worker, in io.Reader, out io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	bw := bufio.NewWriter(out)
	send := func(m Message) {
		b, _ := json.Marshal(m)
		mu.Lock()
		defer mu.Unlock()
		bw.Write(append(b, '\n'))
		bw.Flush()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var lock Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(os.Stderr, "malformed request: %v\n", err)
			continue // nothing to reply to
		}
		switch {
		case m.Type == TypeInit:
			l, err := w.Connect(ctx, &m, func(e Message) { e.Type = TypeEvent; send(e) })
			if err != nil {
				send(errorReply(m.MsgID, err))
				return 1
			}
			lock = l
			send(Message{Type: "init_ok", InReplyTo: m.MsgID, Library: w.Library, Version: w.Version,
				Runtime: runtime.Version(), Kinds: w.Kinds, Caps: w.Caps,
				LeaseGranularityMs: w.LeaseGranularity.Milliseconds()})
		case m.Type == TypeShutdown:
			send(Message{Type: "shutdown_ok", InReplyTo: m.MsgID})
			return 0
		case lock == nil:
			send(errorReply(m.MsgID, Errorf(CodeMalformed, "no init yet")))
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				send(handle(ctx, lock, m))
			}()
		}
	}
	return 0 // stdin closed: release nothing, exit
}

func handle(ctx context.Context, l Mutex, m Message) Message {
	ok := Message{Type: m.Type + "_ok", InReplyTo: m.MsgID}
	wait, lease := time.Duration(m.WaitMs)*time.Millisecond, time.Duration(m.LeaseMs)*time.Millisecond
	switch m.Type {
	case TypeAcquire:
		g, err := l.Acquire(ctx, m.Thread, m.Keys, wait, lease)
		if err != nil {
			return errorReply(m.MsgID, err)
		}
		ok.Granted = Bool(g.Granted)
		if g.Token != 0 {
			ok.Token = Int64(g.Token)
		}
		if g.Valid > 0 {
			ok.ValidMs = Int64(g.Valid.Milliseconds())
		}
	case TypeRelease:
		if err := l.Release(ctx, m.Thread, m.Keys); err != nil {
			return errorReply(m.MsgID, err)
		}
	case TypeExtend:
		done, err := l.Extend(ctx, m.Thread, m.Keys, lease)
		if err != nil {
			return errorReply(m.MsgID, err)
		}
		ok.Extended = Bool(done)
	default:
		return errorReply(m.MsgID, Errorf(CodeNotSupported, m.Type+" is not supported by this worker"))
	}
	return ok
}

func errorReply(id int64, err error) Message {
	code := CodeCrash // when unsure, indefinite
	var e *Error
	if errors.As(err, &e) {
		code = e.Code
	}
	return Message{Type: TypeError, InReplyTo: id, Code: &code, Text: err.Error()}
}
