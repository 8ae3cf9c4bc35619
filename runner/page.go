package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/report/page"
)

// pageName is the summary page beside the results: index.html for a run, and for a re-check one named after
// its input (history.jsonl gives history.check.summary.html), so that a re-check never replaces the run's.
func pageName(resultsName string) string {
	if resultsName == "results.json" {
		return "index.html"
	}
	return strings.TrimSuffix(resultsName, ".json") + ".summary.html"
}

// writePage writes the summary page. The verdict stands whatever happens here: a page that cannot be
// written is a note in the results (and so on the terminal), never the run's error.
// in brings what the page draws besides the results and meta (the proof excerpt).
func writePage(h *history.History, in page.Input, res *report.Results, meta Meta, counted bool, resultsName string) {
	defer func() { // a bug in the page must not cost the run its verdict
		if r := recover(); r != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("no summary page: %v", r))
			delete(res.Files, "page")
		}
	}()
	dir := res.Files["dir"]
	path := filepath.Join(dir, pageName(resultsName))
	err := report.Overwritable(path)
	if err == nil {
		in.Results, in.History, in.Command = res, h, meta.Command
		if c := meta.Client; c != nil {
			in.Client = strings.TrimSpace(c.Library + " " + c.Version)
		}
		if counted {
			in.Permits = meta.Checks.Permits
		}
		for _, k := range []string{"results", "history", "html", "proof"} {
			if f := res.Files[k]; f != "" {
				in.Links = append(in.Links, page.Link{Name: filepath.Base(f), Href: filepath.Base(f)})
			}
		}
		if fi, serr := os.Stat(filepath.Join(dir, "nodes")); serr == nil && fi.IsDir() {
			in.Links = append(in.Links, page.Link{Name: "nodes/ (configs and logs)", Href: "nodes/"})
		}
		err = page.Write(path, in)
	}
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("no summary page: %v", err))
		return
	}
	res.Files["page"] = path
}
