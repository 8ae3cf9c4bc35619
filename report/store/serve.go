package store

import (
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

//go:embed index.html.tmpl
var indexText string

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"href": href,
	"secs": func(s float64) string { return fmt.Sprintf("%.3f", s) },
}).Parse(indexText))

// Hosts are the names the server answers to. A page on another site can make the browser resolve its own
// name to 127.0.0.1 (DNS rebinding) and read the store as its own origin; the requests still carry that
// name in Host, so a Host that is not one of the server's names is refused.
type Hosts struct {
	Port int // the port the server is bound to: the Host must carry it (or none, for port 80)
	// Names are accepted besides localhost, ip6-localhost and the loopback addresses: the host --addr gave.
	Names []string
	// AnyAddress accepts every IP address literal, for a server reached beyond loopback by one of the
	// machine's addresses: a rebinding page's origin is a name, never an address.
	AnyAddress bool
}

// allows says whether a request's Host names this server.
func (h Hosts) allows(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: the scheme's, 80
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "80"
	}
	if port != strconv.Itoa(h.Port) {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ip := net.ParseIP(host)
	switch {
	case host == "localhost" || host == "ip6-localhost":
		return true
	case ip != nil && (ip.IsLoopback() || h.AnyAddress):
		return true
	}
	for _, n := range h.Names {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		if n == host || ip != nil && ip.Equal(net.ParseIP(n)) {
			return true
		}
	}
	return false
}

// plain is the type of every file not in types: a worker's stderr.log holding HTML must not run in the
// server's origin.
const plain = "text/plain; charset=utf-8"

// types maps the extensions served as something else than plain text (besides lockcheck's own pages). A
// fixed table: the shipped image (FROM scratch) has no system MIME table to consult.
var types = map[string]string{".json": "application/json"}

// ownPage says whether name is one of the pages lockcheck writes (a run's summary and history, a
// re-check's, a suite's or a comparison's index): only these are served as HTML.
func ownPage(name string) bool {
	base := path.Base(name)
	return base == "index.html" || base == "history.html" || strings.HasSuffix(base, ".check.html") ||
		strings.HasSuffix(base, ".summary.html")
}

// contentType is what name is served as, by its extension alone (never sniffed).
func contentType(name string) string {
	if ownPage(name) {
		return "text/html; charset=utf-8"
	}
	if t, ok := types[path.Ext(name)]; ok {
		return t
	}
	return plain
}

// sandbox gives every HTML page an origin of its own: its scripts run (the charts, the index's filters), but
// cannot read the store's other files, whatever a page copied into a store (a merged shard) holds.
const sandbox = "sandbox allow-scripts"

type server struct {
	dir  string
	root *os.Root
	real string // the store's directory with every symlink resolved, as the kernel names what it opened
}

// Handler serves the store at dir: the index at /, and a run's files under /runs/<dir>/, to requests whose
// Host is one of hosts. A file is served only if it is a regular file inside the store that every user may
// read where it is (mode o+r, and every directory from the store down to it o+x): the nodes' directories and
// configs (0700, 0600: they hold the password) stay as private over HTTP as on disk, Sentinel's config
// rewritten 0644 inside its 0700 directory included. Every response carries nosniff, and a file's type
// comes from its extension alone.
func Handler(dir string, hosts Hosts) (http.Handler, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, root: root, real: real}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /runs/", s.file)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !hosts.allows(r.Host) {
			http.Error(w, fmt.Sprintf("lockcheck: not served under the name %q: open the address serve printed", r.Host),
				http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	}), nil
}

func (s *server) index(w http.ResponseWriter, r *http.Request) {
	runs, err := list(s.root)
	if err != nil && runs == nil {
		http.Error(w, "lockcheck: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", sandbox)
	w.Header().Set("Cache-Control", "no-store")
	_ = indexTmpl.Execute(w, struct {
		Dir  string
		Runs []Run
	}{s.dir, runs})
}

func (s *server) file(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/runs/")
	if strings.HasSuffix(r.URL.Path, "/") {
		name = path.Join(name, "index.html")
	}
	if !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	f, fi, err := safefile.OpenIn(s.root, name) // never blocks on a FIFO, never leaves the store
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	if err := s.public(f, fi); err != nil {
		http.Error(w, "lockcheck: not served: "+err.Error(), http.StatusForbidden)
		return
	}
	ctype := contentType(name)
	w.Header().Set("Content-Type", ctype)
	if ownPage(name) {
		w.Header().Set("Content-Security-Policy", sandbox)
	}
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

// public says why f may not be served, if so: it is not readable by every user, or one of the directories
// from the store down to it is not open to every user. The path checked is the one the kernel opened, so a
// symlink inside the store cannot lead around a private directory.
func (s *server) public(f *os.File, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o004 == 0 {
		return errors.New("the file is private to its owner")
	}
	at, err := openedPath(f)
	if err != nil {
		return fmt.Errorf("cannot tell where the file is: %v", err)
	}
	rel, err := filepath.Rel(s.real, at)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return errors.New("the file is outside the store")
	}
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		di, err := s.root.Lstat(d)
		if err != nil || !di.IsDir() || di.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the directory %s is private to its owner", filepath.ToSlash(d))
		}
	}
	return nil
}

// openedPath is the path of the file f has open, every symlink resolved (Linux: /proc/self/fd).
func openedPath(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var p string
	cerr := rc.Control(func(fd uintptr) {
		p, err = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	})
	if cerr != nil {
		return "", cerr
	}
	return p, err
}
