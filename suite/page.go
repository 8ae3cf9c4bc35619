package suite

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/report"
)

// Row is one line of the suite table: an entry on one topology under one nemesis, its cells one per seed
// and round.
type Row struct {
	Entry, Topology, Nemesis string
	Expect                   string
	Cells                    []Cell
}

// Cell is one run in the table.
type Cell struct {
	Label, Verdict, Link, Title string
	Met                         bool
}

// Table is the matrix as rows sorted by entry, topology and nemesis; two reports with the same outcomes give
// the same table, whatever order the runs finished in.
func Table(r *Report) []Row {
	byKey := map[string]*Row{}
	var keys []string
	outs := append([]Outcome(nil), r.Outcomes...)
	sort.SliceStable(outs, func(i, j int) bool {
		if outs[i].Seed != outs[j].Seed {
			return outs[i].Seed < outs[j].Seed
		}
		return outs[i].Round < outs[j].Round
	})
	for _, o := range outs {
		parts := strings.SplitN(o.ID, "/", 4)
		if len(parts) < 4 {
			parts = append(parts, make([]string, 4-len(parts))...)
		}
		k := strings.Join(parts[:3], "/")
		row := byKey[k]
		if row == nil {
			row = &Row{Entry: parts[0], Topology: parts[1], Nemesis: strings.ReplaceAll(parts[2], "+", ","), Expect: o.Case.expectText()}
			byKey[k] = row
			keys = append(keys, k)
		}
		label := fmt.Sprintf("seed %d", o.Seed)
		if o.Round > 1 {
			label += fmt.Sprintf(" #%d", o.Round)
		}
		link := ""
		if o.Dir != "" {
			link = filepath.ToSlash(o.Dir)
			if _, err := os.Stat(filepath.Join(r.dir, o.Dir, "index.html")); err == nil {
				link += "/index.html"
			} else if _, err := os.Stat(filepath.Join(r.dir, o.Dir, "results.json")); err == nil {
				link += "/results.json"
			}
		}
		title := fmt.Sprintf("exit %d, %.1fs. %s", o.Exit, o.Seconds, o.Violation)
		if o.Known != "" { // whether the catalog knows the finding, as the run's line says it
			title += " (" + o.Known + ")"
		}
		row.Cells = append(row.Cells, Cell{Label: label, Verdict: o.Verdict, Met: o.Met, Link: link, Title: title})
	}
	sort.Strings(keys)
	var rows []Row
	for _, k := range keys {
		rows = append(rows, *byKey[k])
	}
	return rows
}

var page = template.Must(template.New("suite").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>lockcheck suite {{.Name}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.met{background:#d6f5d6}.miss{background:#f8c9c9;font-weight:bold}
.banner{padding:.6em 1em;margin-bottom:1em;font-size:1.2em}
a{color:inherit}
</style></head><body>
<div class="banner {{if .Failed}}miss{{else}}met{{end}}" id="banner">suite {{.Name}}: {{.Runs}} runs, {{.Failed}} missed their expectation{{if .Stopped}} ({{.Stopped}}){{end}}</div>
<p>{{if .File}}file {{.File}}{{end}}{{if .Shard}}, shard {{.Shard}}{{end}}; {{printf "%.0f" .Seconds}} s</p>
<table id="matrix"><tr><th>entry</th><th>topology</th><th>nemesis</th><th>expect</th><th>runs</th></tr>
{{range .Rows}}<tr><td>{{.Entry}}</td><td>{{.Topology}}</td><td>{{.Nemesis}}</td><td>{{.Expect}}</td><td>
{{range .Cells}}<span class="{{if .Met}}met{{else}}miss{{end}}" title="{{.Title}}">{{if .Link}}<a href="{{.Link}}">{{.Label}}: {{.Verdict}}</a>{{else}}{{.Label}}: {{.Verdict}}{{end}}</span> {{end}}
</td></tr>
{{end}}</table></body></html>
`))

// WritePage writes the suite page, index.html, into dir.
func WritePage(dir string, r *Report) error {
	r.dir = dir
	return report.WriteAtomic(filepath.Join(dir, "index.html"), func(w io.Writer) error {
		return page.Execute(w, map[string]any{"Name": r.Name, "File": r.File, "Shard": r.Shard, "Seconds": r.Seconds,
			"Runs": len(r.Outcomes), "Failed": r.Failed(), "Stopped": r.Stopped, "Rows": Table(r)})
	})
}
