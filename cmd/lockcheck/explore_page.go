package main

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
)

// exploreTmpl is explore's page: the figures, then one row per finding with its schedule, k of n, known or
// new, and report; then the corpus. Plain HTML, no script, like the suite page.
var exploreTmpl = template.Must(template.New("explore").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>explore {{.Lock}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
.new{background:#fdd}.known{background:#ffd}</style></head><body>
<h1>lockcheck explore: {{.Lock}} ({{.Family}})</h1>
<p>{{.Runs}} runs in {{printf "%.0f" .Seconds}} s ({{.Invalid}} invalid, {{.Errors}} errors), coverage {{.Coverage}} transitions, corpus {{len .Corpus}}, seed {{.Seed}}{{if .Shard}}, shard {{.Shard}}{{end}}{{if .Stopped}}, stopped: {{.Stopped}}{{end}}.
Flags of every run: <code>{{.ArgsText}}</code>. Faults it could start: {{.FaultsText}}. The map: <a href="coverage.json">coverage.json</a>.</p>
<h2>Findings ({{len .Findings}})</h2>
{{if .Findings}}<table><tr><th>finding</th><th>signature</th><th>first</th><th>runs</th><th>fails again</th><th>catalog</th><th>files</th></tr>
{{range .Rows}}<tr class="{{.Class}}"><td>{{.ID}}</td><td>{{.Signature}}<br><small>{{.Story}}</small></td><td>run {{.First}}, {{.Found}}</td><td>{{.Runs}}</td><td>{{.KofN}}</td><td>{{.Known}}</td>
<td><a href="{{.Schedule}}">schedule</a>{{if .Run}} · <a href="{{.Run}}">run</a>{{end}}{{if .Shrunk}} · <a href="{{.Shrunk}}">timed steps</a>{{end}}{{if .Report}} · <a href="{{.Report}}">report</a>{{end}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
<h2>Corpus ({{len .Corpus}})</h2>
<table><tr><th>entry</th><th>run</th><th>how it was made</th><th>transitions it reached first</th></tr>
{{range .Corpus}}<tr><td>{{if .File}}<a href="{{.File}}">{{.ID}}</a>{{else}}{{.ID}}{{end}}</td><td>{{.Run}}</td><td>{{.Origin}}</td><td><small>{{range .New}}{{.}}<br>{{end}}</small></td></tr>
{{end}}</table></body></html>
`))

type exploreRow struct {
	ID, Signature, Story, Found, KofN, Known, Class string
	Schedule, Run, Shrunk, Report                   string
	First, Runs                                     int
}

// page writes index.html, its links relative to the explore's directory.
func (ex *Explore) page(w io.Writer) error {
	link := func(p string) string {
		if p == "" {
			return ""
		}
		if filepath.IsAbs(p) {
			p = rel(ex.dir, p)
		}
		return filepath.ToSlash(p)
	}
	var rows []exploreRow
	for _, f := range ex.Findings {
		r := exploreRow{ID: f.ID, Signature: f.Signature, Story: f.Story, Found: fmt.Sprintf("%.0f s", f.FoundS),
			KofN: "not settled", Known: "?", Schedule: link(f.File), Run: link(f.Dir), First: f.FirstRun, Runs: len(f.Runs)}
		if s := f.Settled; s != nil {
			r.KofN, r.Known, r.Class = fmt.Sprintf("%d of %d", s.Caught, s.Of), "new", "new"
			switch {
			case s.As != "":
				r.KofN = "as " + s.As
			case s.ScheduleOf > 0:
				r.KofN += fmt.Sprintf(" (timed steps %d of %d)", s.ScheduleCaught, s.ScheduleOf)
			}
			if c := s.Changes(); c != "" {
				r.KofN += " once " + c
			}
			if s.Known != "" {
				r.Known, r.Class = "known: "+s.Known, "known"
			}
			r.Shrunk, r.Report = link(s.Schedule), link(s.Report)
		}
		rows = append(rows, r)
	}
	return exploreTmpl.Execute(w, struct {
		*Explore
		Rows                 []exploreRow
		ArgsText, FaultsText string
	}{ex, rows, strings.Join(ex.Args, " "), orNone(strings.Join(ex.Faults, ", "))})
}
