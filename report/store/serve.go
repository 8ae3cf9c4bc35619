package store

import (
	_ "embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
)

//go:embed index.html.tmpl
var indexText string

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"href": href,
	"secs": func(s float64) string { return fmt.Sprintf("%.3f", s) },
}).Parse(indexText))

// Handler serves the store at dir: the index at /, and a run's files under /runs/<dir>/. A file is served
// only if it is a regular file that every user may read (mode o+r) inside the store: the nodes' directories
// and configs (0700, 0600: they hold the password) stay as private over HTTP as on disk, and os.Root keeps
// a symlink from reaching outside the store.
func Handler(dir string) (http.Handler, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		runs, err := List(dir)
		if err != nil && runs == nil {
			http.Error(w, "lockcheck: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = indexTmpl.Execute(w, struct {
			Dir  string
			Runs []Run
		}{dir, runs})
	})
	mux.HandleFunc("GET /runs/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/runs/")
		if strings.HasSuffix(r.URL.Path, "/") {
			name = path.Join(name, "index.html")
		}
		if !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		f, err := root.Open(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			http.NotFound(w, r)
			return
		}
		if fi.Mode().Perm()&0o004 == 0 {
			http.Error(w, "lockcheck: not served: the file is private to its owner", http.StatusForbidden)
			return
		}
		if strings.HasSuffix(name, ".jsonl") {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
	})
	return mux, nil
}
