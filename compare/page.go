package compare

import (
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"

	chartpage "github.com/lockcheck/lockcheck/report/page"
)

var page = template.Must(template.New("compare").Funcs(template.FuncMap{"join": strings.Join}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>lockcheck compare</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
.violates{background:#f8c9c9}.safe{background:#d6f5d6}.na{background:#eee;color:#777}.undecided{background:#fde9b5}
.disagree{outline:3px solid #c00}
small{color:#555}
</style></head><body id="compare">
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
<h2>Charts</h2>
<div style="max-width:900px"><canvas id="violations"></canvas></div>
<div style="max-width:900px"><canvas id="latency"></canvas></div>
<script>{{.ChartJS}}</script>
<script>
(function(){
  var d = {{.Data}};
  var colors = ["#d62728","#1f77b4","#2ca02c","#ff7f0e","#9467bd","#8c564b","#e377c2","#7f7f7f"];
  new Chart(document.getElementById("violations"), {type:"bar", data:{labels:d.scenarios,
    datasets:d.locks.map(function(l,i){return {label:l, data:d.share[i], backgroundColor:colors[i%colors.length]};})},
    options:{animation:false, plugins:{title:{display:true,text:"share of seeds with a violation (n/a: not drawn)"}}, scales:{y:{min:0,max:1}}}});
  new Chart(document.getElementById("latency"), {type:"bar", data:{labels:d.locks,
    datasets:[{label:"acquire p50 (ms)", data:d.p50, backgroundColor:"#1f77b4"},{label:"acquire p99 (ms)", data:d.p99, backgroundColor:"#ff7f0e"}]},
    options:{animation:false, plugins:{title:{display:true,text:"what safety costs: acquire latency"}}}});
  document.body.setAttribute("data-rendered","yes");
  console.log("lockcheck: every chart rendered");
})();
</script>
<h2>Scenarios</h2><ul>{{range .T.Scenarios}}<li><b>{{.ID}}</b> {{.Name}}: {{.Why}} <code>{{join .Args " "}}</code></li>{{end}}</ul>
{{if .T.Unmeasured}}<h2>Not measured yet</h2><ul>{{range $id, $why := .T.Unmeasured}}<li><b>{{$id}}</b>: {{$why}}</li>{{end}}</ul>{{end}}
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
	data := map[string]any{"scenarios": []string{}, "locks": []string{}, "share": [][]any{}, "p50": []any{}, "p99": []any{}}
	var scen, lks []string
	for _, s := range t.Scenarios {
		scen = append(scen, s.ID+" "+s.Name)
	}
	var share [][]any
	var p50, p99 []any
	for i, l := range t.Locks {
		lks = append(lks, l.Name)
		var row []any
		for _, s := range t.Scenarios {
			var v any // nil: n/a, not drawn
			for _, c := range t.Cells {
				if c.Lock == l.Name && c.Scenario == s.ID && c.Seeds > 0 {
					v = float64(c.Violations) / float64(c.Seeds)
				}
			}
			row = append(row, v)
		}
		share = append(share, row)
		p50, p99 = append(p50, finite(t.Costs[i].AcquireP50)), append(p99, finite(t.Costs[i].AcquireP99))
	}
	data["scenarios"], data["locks"], data["share"], data["p50"], data["p99"] = scen, lks, share, p50, p99
	err = page.Execute(f, map[string]any{"T": t, "Rows": rows, "Costs": costs, "Data": data,
		"ChartJS": template.JS(chartpage.ChartJS())})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func finite(f float64) any {
	if math.IsNaN(f) {
		return nil
	}
	return f
}
