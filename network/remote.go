package network

import (
	"fmt"
	"strings"
	"sync"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
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

// Server is a running toxiproxy server reached through its HTTP API (toxiproxy's own Go client), for
// deployments lockcheck did not start.
type Server struct {
	api     *toxiclient.Client
	prefix  string
	mu      sync.Mutex
	created []*toxiclient.Proxy
}

// Dial connects to the toxiproxy server at url (http://host:8474); proxies lockcheck creates there are
// named prefix-….
func Dial(url, prefix string) (*Server, error) {
	api := toxiclient.NewClient(url)
	if _, err := api.Proxies(); err != nil {
		return nil, fmt.Errorf("toxiproxy server at %s: %w", url, err)
	}
	return &Server{api: api, prefix: prefix}, nil
}

// Add creates a proxy on the server in front of upstream, listening on a free loopback port.
func (s *Server) Add(name, upstream string) (*Remote, error) {
	p, err := s.api.CreateProxy(s.prefix+"-"+strings.ReplaceAll(name, ">", ""), "127.0.0.1:0", upstream)
	if err != nil {
		return nil, fmt.Errorf("toxiproxy: create %s: %w", name, err)
	}
	s.mu.Lock()
	s.created = append(s.created, p)
	s.mu.Unlock()
	return &Remote{proxy: p}, nil
}

// Existing returns a proxy the deployment already has (one its nodes announce, say).
func (s *Server) Existing(name string) (*Remote, error) {
	p, err := s.api.Proxy(name)
	if err != nil {
		return nil, fmt.Errorf("toxiproxy: no proxy %q: %w", name, err)
	}
	return &Remote{proxy: p}, nil
}

// Close deletes the proxies lockcheck created.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.created {
		_ = p.Delete()
	}
	s.created = nil
}

// Remote is a proxy on a toxiproxy server. Its faults are the same toxics as Link's.
type Remote struct {
	proxy *toxiclient.Proxy
	mu    sync.Mutex
	state string
}

// Addr is where clients connect.
func (r *Remote) Addr() string { return r.proxy.Listen }

// State says which fault the proxy is under ("" when healthy).
func (r *Remote) State() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

type toxic struct {
	name, kind, stream string
	attrs              toxiclient.Attributes
}

func (r *Remote) apply(state string, toxics ...toxic) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != "" {
		return fmt.Errorf("proxy %s is already under %s", r.proxy.Name, r.state)
	}
	for _, t := range toxics {
		if _, err := r.proxy.AddToxic(t.name, t.kind, t.stream, 1, t.attrs); err != nil {
			r.healLocked()
			return fmt.Errorf("proxy %s: %w", r.proxy.Name, err)
		}
	}
	r.state = state
	return nil
}

// Cut black-holes both directions.
func (r *Remote) Cut() error {
	return r.apply("cut", toxic{ours + "cut-up", "timeout", "upstream", toxiclient.Attributes{"timeout": 0}},
		toxic{ours + "cut-down", "timeout", "downstream", toxiclient.Attributes{"timeout": 0}})
}

// DropReplies black-holes the reply direction.
func (r *Remote) DropReplies() error {
	return r.apply("drop-replies", toxic{ours + "drop-down", "timeout", "downstream", toxiclient.Attributes{"timeout": 0}})
}

// Delay adds latency and jitter both ways.
func (r *Remote) Delay(latencyMs, jitterMs int) error {
	a := toxiclient.Attributes{"latency": latencyMs, "jitter": jitterMs}
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

func (r *Remote) healLocked() error {
	toxics, err := r.proxy.Toxics()
	if err != nil {
		return fmt.Errorf("proxy %s: %w", r.proxy.Name, err)
	}
	var errs []string
	for _, t := range toxics {
		if !strings.HasPrefix(t.Name, ours) {
			continue
		}
		if err := r.proxy.RemoveToxic(t.Name); err != nil {
			errs = append(errs, err.Error())
		}
	}
	r.state = ""
	if len(errs) > 0 {
		return fmt.Errorf("proxy %s: %s", r.proxy.Name, strings.Join(errs, "; "))
	}
	return nil
}
