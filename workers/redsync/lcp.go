//go:build ignore

package main

// LCP/1 plumbing (docs/protocol.md): one JSON object a line on stdin/stdout, one goroutine per request,
// one mutex around stdout. Copied, not shared, between the Go workers so that each stays its own module
// with its library's version free of lockcheck's own dependencies.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
)

// Protocol error codes (docs/protocol.md, "Errors").
const (
	codeTimeout      = 0
	codeNotSupported = 10
	codeUnavailable  = 11
	codeMalformed    = 12
	codeCrash        = 13
	codeNotHeld      = 40
)

type node struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

type topology struct {
	Kind       string            `json:"kind"`
	Nodes      []node            `json:"nodes"`
	Sentinels  []string          `json:"sentinels"`
	MasterName string            `json:"master_name"`
	NAT        map[string]string `json:"nat"`
}

type request struct {
	Type     string   `json:"type"`
	MsgID    *int64   `json:"msg_id"`
	Protocol int      `json:"protocol"`
	Client   string   `json:"client"`
	Topology topology `json:"topology"`
	Password string   `json:"password"`
	Lock     struct {
		Kind   string `json:"kind"`
		Family string `json:"family"`
	} `json:"lock"`
	Options struct {
		LeaseMS    int64 `json:"lease_ms"`
		WatchdogMS int64 `json:"watchdog_ms"`
		WaitMS     int64 `json:"wait_ms"`
		TimeoutMS  int64 `json:"timeout_ms"`
	} `json:"options"`
	LibraryOptions map[string]string `json:"library_options"`

	Thread  int64    `json:"thread"`
	Keys    []string `json:"keys"`
	Mode    string   `json:"mode"`
	WaitMS  int64    `json:"wait_ms"`
	LeaseMS int64    `json:"lease_ms"`
}

// protoError is a reply of type "error".
type protoError struct {
	code int
	text string
}

func (e *protoError) Error() string { return e.text }

// fail makes an error reply; its text is one line (go-multierror's are several).
func fail(code int, format string, args ...any) *protoError {
	text := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	return &protoError{code, text}
}

var stdout struct {
	sync.Mutex
	enc *json.Encoder
}

func send(msg map[string]any) {
	stdout.Lock()
	defer stdout.Unlock()
	if err := stdout.enc.Encode(msg); err != nil {
		fmt.Fprintln(os.Stderr, "worker: stdout:", err)
		os.Exit(1)
	}
}

func reply(req *request, body map[string]any, perr *protoError) {
	if perr != nil {
		send(map[string]any{"type": "error", "in_reply_to": *req.MsgID, "code": perr.code, "text": perr.text})
		return
	}
	if body == nil {
		body = map[string]any{}
	}
	body["type"] = req.Type + "_ok"
	body["in_reply_to"] = *req.MsgID
	send(body)
}

// serve runs the request loop: init first (answered before anything else), then every request on its
// own goroutine. It returns when stdin closes or on shutdown; nothing is released.
func serve(in io.Reader, initFn func(*request) (map[string]any, *protoError), handle func(*request) (map[string]any, *protoError)) {
	stdout.enc = json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 2<<20)
	ready := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		req := new(request)
		if err := json.Unmarshal(line, req); err != nil || req.MsgID == nil {
			var id struct {
				MsgID *int64 `json:"msg_id"`
			}
			if json.Unmarshal(line, &id) == nil && id.MsgID != nil {
				send(map[string]any{"type": "error", "in_reply_to": *id.MsgID, "code": codeMalformed, "text": fmt.Sprintf("malformed request: %v", err)})
			} else {
				fmt.Fprintf(os.Stderr, "worker: ignoring a line with no msg_id: %.200s\n", line)
			}
			continue
		}
		switch {
		case req.Type == "init":
			body, perr := initFn(req)
			reply(req, body, perr)
			if perr != nil {
				os.Exit(1)
			}
			ready = true
		case req.Type == "shutdown":
			reply(req, nil, nil)
			return
		case !ready:
			reply(req, nil, fail(codeMalformed, "%s before init", req.Type))
		default:
			go func() {
				body, perr := handle(req)
				reply(req, body, perr)
			}()
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "worker: stdin:", err)
	}
}

// leaves flattens an error tree: errors.Join, fmt's %w, hashicorp/go-multierror (redsync before v4.5). Shared by the
// Go library workers: redislock's lcp.go links here, and each build.sh copies it into its module.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, c := range e.Unwrap() {
			out = append(out, leaves(c)...)
		}
		return out
	case interface{ WrappedErrors() []error }:
		var out []error
		for _, c := range e.WrappedErrors() {
			out = append(out, leaves(c)...)
		}
		return out
	}
	// redsync's RedisError{Node, Err} (v4.8 on) had no Unwrap before v4.12/v4.13: descend into an Err field.
	if v := reflect.Indirect(reflect.ValueOf(err)); v.Kind() == reflect.Struct {
		if f := v.FieldByName("Err"); f.IsValid() && f.CanInterface() {
			if inner, ok := f.Interface().(error); ok && inner != nil {
				return leaves(inner)
			}
		}
	}
	return []error{err}
}

// isTimeout: the call may have reached Redis and run there (indefinite).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// isUnsent: the command surely never left the client (refused dial, pool exhausted).
func isUnsent(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection pool timeout")
}

// typeName is an error's type name without its package path, for error types that only some versions
// of a library declare (a type switch on them would not compile against the others).
func typeName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// redisError maps an error that is none of the library's own answers onto a protocol code.
func redisError(what string, err error) *protoError {
	switch {
	case isTimeout(err):
		return fail(codeTimeout, "%s: %v", what, err)
	case isUnsent(err):
		return fail(codeUnavailable, "%s: %v", what, err)
	}
	return fail(codeCrash, "%s: %v", what, err)
}
