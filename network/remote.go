package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Proxy is one faultable link: in process (Link) or on a running toxiproxy server (Remote).
type Proxy interface {
	Cut() error
	DropReplies() error
	Delay(latencyMs, jitterMs int) error
	Heal() error
	Addr() string
	State() string
}

var _ Proxy = (*Link)(nil)

// apiTimeout bounds every call to a toxiproxy server's API: one that accepts and never answers must not
// hang a run, its start or its teardown.
const apiTimeout = 5 * time.Second

// Server is a running toxiproxy server reached through its HTTP API, for deployments lockcheck did not
// start. Its calls go through an HTTP client of lockcheck's own rather than toxiproxy's, which takes no
// context and sets no timeout.
type Server struct {
	url    string
	prefix string
	http   *http.Client
	// ctx is the run's: Ctrl-C ends a call in flight. Heals and deletes outlive it (bounded by
	// apiTimeout), since they undo what the run did.
	ctx     context.Context
	mu      sync.Mutex
	created []string
}

// Dial connects to the toxiproxy server at url (http://host:8474) for the run whose context is ctx;
// proxies lockcheck creates there are named prefix-….
func Dial(ctx context.Context, api, prefix string) (*Server, error) {
	if !strings.HasPrefix(api, "http://") && !strings.HasPrefix(api, "https://") {
		api = "http://" + api
	}
	s := &Server{url: strings.TrimSuffix(api, "/"), prefix: prefix, ctx: ctx, http: &http.Client{Timeout: apiTimeout}}
	if err := s.call(ctx, http.MethodGet, "/proxies", nil, http.StatusOK, nil); err != nil {
		return nil, fmt.Errorf("toxiproxy server at %s: %w", api, err)
	}
	return s, nil
}

// call sends one API request, bounded by apiTimeout and ctx, and decodes the answer into out (if not nil).
func (s *Server) call(ctx context.Context, method, path string, body any, want int, out any) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
			return fmt.Errorf("%s %s: no answer within %s", method, path, apiTimeout)
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		var e struct {
			Error string `json:"error"`
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(msg, &e) == nil && e.Error != "" {
			msg = []byte(e.Error)
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// apiProxy is a proxy as the API describes it.
type apiProxy struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
	Enabled  bool   `json:"enabled"`
}

// apiToxic is a toxic as the API describes it.
type apiToxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream,omitempty"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// Add creates a proxy on the server in front of upstream, listening on a free loopback port.
func (s *Server) Add(name, upstream string) (*Remote, error) {
	name = s.prefix + "-" + strings.ReplaceAll(name, ">", "")
	var p apiProxy
	if err := s.call(s.ctx, http.MethodPost, "/proxies", apiProxy{Name: name, Listen: "127.0.0.1:0", Upstream: upstream,
		Enabled: true}, http.StatusCreated, &p); err != nil {
		return nil, fmt.Errorf("toxiproxy: create %s: %w", name, err)
	}
	s.mu.Lock()
	s.created = append(s.created, name)
	s.mu.Unlock()
	return &Remote{srv: s, name: p.Name, listen: p.Listen}, nil
}

// Existing returns a proxy the deployment already has (one its nodes announce, say).
func (s *Server) Existing(name string) (*Remote, error) {
	var p apiProxy
	if err := s.call(s.ctx, http.MethodGet, "/proxies/"+url.PathEscape(name), nil, http.StatusOK, &p); err != nil {
		return nil, fmt.Errorf("toxiproxy: no proxy %q: %w", name, err)
	}
	return &Remote{srv: s, name: p.Name, listen: p.Listen}, nil
}

// Close deletes the proxies lockcheck created, each call bounded even after the run was interrupted.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.WithoutCancel(s.ctx)
	for _, name := range s.created {
		_ = s.call(ctx, http.MethodDelete, "/proxies/"+url.PathEscape(name), nil, http.StatusNoContent, nil)
	}
	s.created = nil
}

// Remote is a proxy on a toxiproxy server. Its faults are the same toxics as Link's.
type Remote struct {
	srv    *Server
	name   string
	listen string
	mu     sync.Mutex
	state  string
}

// Addr is where clients connect.
func (r *Remote) Addr() string { return r.listen }

// State says which fault the proxy is under ("" when healthy).
func (r *Remote) State() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

type toxic struct {
	name, kind, stream string
	attrs              map[string]any
}

func (r *Remote) toxicsPath() string { return "/proxies/" + url.PathEscape(r.name) + "/toxics" }

func (r *Remote) apply(state string, toxics ...toxic) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != "" {
		return fmt.Errorf("proxy %s is already under %s", r.name, r.state)
	}
	for _, t := range toxics {
		body := apiToxic{Name: t.name, Type: t.kind, Stream: t.stream, Toxicity: 1, Attributes: t.attrs}
		if err := r.srv.call(r.srv.ctx, http.MethodPost, r.toxicsPath(), body, http.StatusOK, nil); err != nil {
			r.healLocked()
			return fmt.Errorf("proxy %s: %w", r.name, err)
		}
	}
	r.state = state
	return nil
}

// Cut black-holes both directions.
func (r *Remote) Cut() error {
	return r.apply("cut", toxic{ours + "cut-up", "timeout", "upstream", map[string]any{"timeout": 0}},
		toxic{ours + "cut-down", "timeout", "downstream", map[string]any{"timeout": 0}})
}

// DropReplies black-holes the reply direction.
func (r *Remote) DropReplies() error {
	return r.apply("drop-replies", toxic{ours + "drop-down", "timeout", "downstream", map[string]any{"timeout": 0}})
}

// Delay adds latency and jitter both ways.
func (r *Remote) Delay(latencyMs, jitterMs int) error {
	a := map[string]any{"latency": latencyMs, "jitter": jitterMs}
	return r.apply("latency", toxic{ours + "lat-up", "latency", "upstream", a}, toxic{ours + "lat-down", "latency", "downstream", a})
}

// ours prefixes the toxics lockcheck adds, so a heal leaves a deployment's own toxics alone.
const ours = "lockcheck-"

// Heal removes the toxics lockcheck added.
func (r *Remote) Heal() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.healLocked()
}

// healLocked removes lockcheck's toxics. It outlives the run's context (a final heal follows Ctrl-C),
// each call bounded by apiTimeout.
func (r *Remote) healLocked() error {
	ctx := context.WithoutCancel(r.srv.ctx)
	var toxics []apiToxic
	if err := r.srv.call(ctx, http.MethodGet, r.toxicsPath(), nil, http.StatusOK, &toxics); err != nil {
		return fmt.Errorf("proxy %s: %w", r.name, err)
	}
	var errs []string
	for _, t := range toxics {
		if !strings.HasPrefix(t.Name, ours) {
			continue
		}
		if err := r.srv.call(ctx, http.MethodDelete, r.toxicsPath()+"/"+url.PathEscape(t.Name), nil, http.StatusNoContent, nil); err != nil {
			errs = append(errs, err.Error())
		}
	}
	r.state = ""
	if len(errs) > 0 {
		return fmt.Errorf("proxy %s: %s", r.name, strings.Join(errs, "; "))
	}
	return nil
}
