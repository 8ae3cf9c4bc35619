// Package page writes a run's summary page, index.html: the verdict, each checker's first violation, plots
// over time with the fault windows shaded (operations per second, acquire latency, the holders of each key,
// a semaphore's permits), the fault plan, the command line and the versions. The page is one file with
// Chart.js and its data inlined, so it opens from file:// with no network.
package page

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/lockcheck/lockcheck/report"
)

//go:embed chartjs/chart.umd.min.js
var chartJS string

//go:embed page.js
var pageJS string

//go:embed page.css
var pageCSS string

// Render writes the page.
func Render(w io.Writer, in Input) error {
	js, err := json.Marshal(build(in)) // escapes <, > and &, so the JSON cannot close its script element
	if err != nil {
		return err
	}
	title := fmt.Sprintf("lockcheck %s: %s on %s", strings.ToUpper(in.Results.Valid.String()), in.Results.Lock, in.Results.Topology)
	var b bytes.Buffer
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" + report.PageMarker + "\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>\n%s</style>\n", html.EscapeString(title), pageCSS)
	// Errors are kept on the page as well as logged, so that a headless browser's DOM shows them.
	b.WriteString(`<script>
window.addEventListener('error', function (e) { document.documentElement.dataset.errors = (document.documentElement.dataset.errors || '') + (e.message || 'error') + '\n' });
(function () { var ce = console.error; console.error = function () { document.documentElement.dataset.errors = (document.documentElement.dataset.errors || '') + Array.prototype.join.call(arguments, ' ') + '\n'; ce.apply(console, arguments) } })();
</script>
</head>
<body>
`)
	b.WriteString(skeleton)
	b.WriteString("<script id=\"data\" type=\"application/json\">")
	b.Write(js)
	b.WriteString("</script>\n<script>\n")
	b.WriteString(stripSourceMap(chartJS))
	b.WriteString("\n</script>\n<script>\n")
	b.WriteString(pageJS)
	b.WriteString("</script>\n</body>\n</html>\n")
	_, err = w.Write(b.Bytes())
	return err
}

// stripSourceMap drops the bundle's source-map comment: the map is not shipped.
func stripSourceMap(js string) string {
	if i := strings.LastIndex(js, "//# sourceMappingURL="); i >= 0 {
		return js[:i]
	}
	return js
}

// Write writes the page to path through a temporary file renamed into place, so that a failed write leaves
// the previous page or none, never a partial one.
func Write(path string, in Input) error {
	return report.WriteAtomic(path, func(w io.Writer) error { return Render(w, in) })
}

const skeleton = `<header id="banner"></header>
<main>
<section>
<h2>Checkers</h2>
<table class="grid"><thead><tr><th>checker</th><th>verdict</th><th>summary</th><th>first violation</th></tr></thead>
<tbody id="checkers"></tbody></table>
</section>
<section id="plots">
<h2>Over time <button id="whole" type="button">whole run</button></h2>
<p class="hint">Shaded: the fault windows, labelled with the fault and its targets. Dashed red: the first violation.
A violation's time zooms every plot to it.</p>
<h3>Operations per second, by outcome</h3>
<div class="box"><canvas id="rate"></canvas></div>
<h3>Acquire latency</h3>
<p class="hint" id="latency-note"></p>
<div class="box"><canvas id="latency"></canvas></div>
<h3>Holder per key</h3>
<p class="hint">Bars: critical sections on the protected resource (red where they overlap another owner's), over the
leases granted to their acquires and renewals (from the reply until the lease surely ran out or was released).
Triangles: renewals.</p>
<p class="hint" id="gantt-note"></p>
<div class="box" id="gantt-box"><canvas id="gantt"></canvas></div>
<div id="proof-section" hidden>
<h3>The proof</h3>
<p class="hint" id="proof-note"></p>
<div class="box" id="proof-box"><canvas id="proof"></canvas></div>
</div>
<div id="permits-section" hidden>
<h3>Permits in use against permits that exist</h3>
<div class="box"><canvas id="permits"></canvas></div>
</div>
</section>
<section>
<h2>Faults applied</h2>
<table class="grid"><thead><tr><th>fault</th><th>targets</th><th>start</th><th>end</th><th></th><th>detail</th></tr></thead>
<tbody id="faults"></tbody></table>
<ul id="faultlog"></ul>
<details><summary>The fault plan</summary><pre id="plan"></pre></details>
</section>
<section id="coverage-section" hidden>
<h2>Model coverage</h2>
<p class="hint" id="coverage-note"></p>
<details id="coverage-details"><summary>The transitions seen</summary>
<table class="grid"><thead><tr><th>state before</th><th>operation</th><th>outcome</th><th>lease</th><th>waiting</th><th>fault</th><th>script→reply</th><th>times</th></tr></thead>
<tbody id="coverage"></tbody></table>
</details>
</section>
<section>
<h2>Reproduce</h2>
<pre id="command"></pre>
<h2>Versions</h2>
<table class="grid"><tbody id="versions"></tbody></table>
<h2>Files</h2>
<ul id="links"></ul>
</section>
</main>
`

// ChartJS is the vendored Chart.js, for other pages drawn in the same style (lockcheck compare).
func ChartJS() string { return chartJS }
