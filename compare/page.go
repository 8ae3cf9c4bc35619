package compare

import (
	"html/template"
	"os"
	"path/filepath"
	"strings"
)

var page = template.Must(template.New("compare").Funcs(template.FuncMap{"join": strings.Join}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>lockcheck compare</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
.violates{background:#f8c9c9}.safe{background:#d6f5d6}.na{background:#eee;color:#777}.undecided{background:#fde9b5}
.disagree{outline:3px solid #c00}
small{color:#555}
</style></head><body>
<h1>Redlock or a single node? {{.T.Seeds}} seed(s) per cell</h1>
<p>Each cell: violations / seeds and the median time to the first violation; below it, what the reference
(Kleppmann, antirez, the Redis docs) predicts. A red outline marks a measurement that disagrees. Each cell links to
its runs.</p>
<table id="matrix"><tr><th>lock</th>{{range .T.Scenarios}}<th>{{.ID}} {{.Name}}</th>{{end}}</tr>
{{range .Rows}}<tr><td><b>{{.Lock.Name}}</b><br><small>{{.Lock.What}}</small></td>
{{range .Cells}}<td class="{{.Class}}{{if .Disagree}} disagree{{end}}">{{.Text}}<br>{{range $i, $r := .Runs}}<a href="{{$r}}/index.html">run {{$i}}</a> {{end}}</td>{{end}}</tr>
{{end}}</table>
<h2>What it costs</h2>
<table id="costs"><tr><th>lock</th><th>acquire p50</th><th>p99</th><th>ops/s</th><th>granted during faults</th><th>heal to first grant</th></tr>
{{range .Costs}}<tr><td>{{.Lock}}</td><td>{{.P50}}</td><td>{{.P99}}</td><td>{{.Rate}}</td><td>{{.Avail}}</td><td>{{.Heal}}</td></tr>
{{end}}</table>
<h2>Scenarios</h2><ul>{{range .T.Scenarios}}<li><b>{{.ID}}</b> {{.Name}}: {{.Why}} <code>{{join .Args " "}}</code></li>{{end}}</ul>
<h2>Not measured yet</h2><ul>{{range $id, $why := .T.Unmeasured}}<li><b>{{$id}}</b>: {{$why}}</li>{{end}}</ul>
</body></html>
`))

// WritePage writes index.html beside compare.json.
func (t *Table) WritePage(dir string) error {
	type cell struct {
		Class, Text string
		Disagree    bool
		Runs        []string
	}
	type row struct {
		Lock  Lock
		Cells []cell
	}
	var rows []row
	for _, l := range t.Locks {
		r := row{Lock: l}
		for _, s := range t.Scenarios {
			for _, c := range t.Cells {
				if c.Lock != l.Name || c.Scenario != s.ID {
					continue
				}
				class := map[string]string{Violates: "violates", Safe: "safe", NotApplicable: "na"}[c.Measured]
				if class == "" {
					class = "undecided"
				}
				var runs []string
				for _, d := range c.Runs {
					if d != "" {
						runs = append(runs, filepath.ToSlash(d))
					}
				}
				r.Cells = append(r.Cells, cell{Class: class, Text: c.text(), Disagree: c.Agrees != nil && !*c.Agrees, Runs: runs})
			}
		}
		rows = append(rows, r)
	}
	type cost struct{ Lock, P50, P99, Rate, Avail, Heal string }
	var costs []cost
	for _, c := range t.Costs {
		costs = append(costs, cost{c.Lock, num(c.AcquireP50, "%.1f ms"), num(c.AcquireP99, "%.1f ms"), num(c.OpsPerSec, "%.0f"),
			num(c.Available*100, "%.0f%%"), num(c.HealToGrant, "%.2f s")})
	}
	f, err := os.Create(filepath.Join(dir, "index.html"))
	if err != nil {
		return err
	}
	err = page.Execute(f, map[string]any{"T": t, "Rows": rows, "Costs": costs})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
