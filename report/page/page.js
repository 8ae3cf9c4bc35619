// lockcheck's run summary: draws the page from the JSON in #data with Chart.js (inlined before this script).
'use strict'
;(function () {
  const d = JSON.parse(document.getElementById('data').textContent)
  const $ = (id) => document.getElementById(id)
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v
      else e.setAttribute(k, v)
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)))
    return e
  }
  const fmt = (s) => s.toFixed(3) + 's'
  const faultColors = {
    partition: 'rgba(255, 99, 71, 0.16)', kill: 'rgba(128, 0, 128, 0.14)', pause: 'rgba(255, 165, 0, 0.18)',
    clock: 'rgba(0, 128, 128, 0.14)', failover: 'rgba(70, 70, 255, 0.14)'
  }
  const faultColor = (k) => faultColors[k] || 'rgba(120, 120, 120, 0.16)'

  // Banner, checkers, facts.
  const banner = $('banner')
  banner.classList.add(d.verdict)
  banner.append(el('div', { class: 'verdict' }, d.verdict.toUpperCase()))
  if (d.story) banner.append(el('div', { class: 'story', id: 'story' }, d.story))
  for (const k of d.known || []) banner.append(el('div', { class: 'known' }, k))
  if (d.ran) banner.append(el('div', { class: 'note', id: 'ran' }, 'what ran: ' + d.ran))
  if (d.steps && d.steps.length) {
    const ul = el('ul', { class: 'steps', id: 'steps' })
    for (const s of d.steps) ul.append(el('li', {}, s))
    banner.append(el('div', {}, 'the schedule\'s steps, each with what it did:'), ul)
  }
  banner.append(el('div', {}, `lock ${d.lock} on ${d.topology}` + (d.client ? `, client ${d.client}` : '') +
    `, nemesis ${d.nemesis && d.nemesis.length ? d.nemesis.join(',') : 'none'}, seed ${d.seed}, ${fmt(d.duration)}`))
  if (d.first) {
    const p = el('div', { class: 'first' }, `first violation (${d.first.checker}) at `,
      el('a', { href: '#t=' + d.first.at, 'data-at': d.first.at }, fmt(d.first.at)), ': ' + d.first.text)
    banner.append(p)
  }
  for (const n of d.notes || []) banner.append(el('div', { class: 'note' }, 'note: ' + n))
  banner.append(el('div', { class: 'note', id: 'clock' }, d.clock))
  const tl = d.links.find((l) => /\.html$/.test(l.href) && /^history/.test(l.href))
  if (tl) {
    banner.append(el('div', { class: 'note' }, el('a', { href: tl.href }, "porcupine's timeline"),
      ' of every lock command, rows named by client thread' + (d.first ? "; its 'jump to first error' shows the first command no legal order can place" : '')))
  }

  const ct = $('checkers')
  for (const c of d.checkers) {
    const tr = el('tr', {}, el('td', {}, c.name), el('td', { class: 'v ' + c.verdict }, c.verdict), el('td', {}, c.summary))
    const v = el('td', {})
    if (c.violation) {
      v.append(el('a', { href: '#t=' + c.at, 'data-at': c.at }, 'at ' + fmt(c.at)), ': ' + c.violation)
    }
    tr.append(v)
    ct.append(tr)
  }

  const ft = $('faults')
  if (d.faults.length === 0) ft.append(el('tr', {}, el('td', { colspan: 6 }, 'no fault was applied')))
  for (const f of d.faults) {
    ft.append(el('tr', {}, el('td', {}, el('span', { class: 'swatch', style: 'background:' + faultColor(f.kind) }), f.kind),
      el('td', {}, f.targets), el('td', {}, fmt(f.start)), el('td', {}, fmt(f.end)),
      el('td', {}, f.healed ? 'healed' : 'until the final heal'), el('td', {}, f.detail || '')))
  }
  for (const l of d.fault_log || []) $('faultlog').append(el('li', {}, l))
  $('plan').textContent = d.plan ? JSON.stringify(d.plan, null, 1) : 'none'
  if (d.model_coverage) {
    const mc = d.model_coverage
    $('coverage-section').hidden = false
    $('coverage-details').open = mc.rows.length <= 20 // a short list is shown, a long one on request
    $('coverage-note').textContent = `${mc.distinct} distinct transitions of the lock's model (docs/coverage.md says how they are counted)` +
      (mc.breaking ? `; bold: the one at the first violation, ${mc.breaking}` : '') +
      (mc.hidden ? `; ${mc.hidden} more not listed` : '')
    for (const t of mc.rows) {
      $('coverage').append(el('tr', t.key === mc.breaking ? { class: 'breaking' } : {}, el('td', {}, t.before), el('td', {}, t.op),
        el('td', {}, t.outcome), el('td', {}, t.lease), el('td', {}, t.waiting ? 'yes' : ''), el('td', {}, t.fault || ''),
        el('td', {}, t.script || ''), el('td', {}, t.count)))
    }
  }
  $('command').textContent = d.command || '(not recorded)'
  const vt = $('versions')
  for (const k of Object.keys(d.versions || {}).sort()) vt.append(el('tr', {}, el('td', {}, k), el('td', {}, d.versions[k])))
  for (const l of d.links) $('links').append(el('li', {}, el('a', { href: l.href }, l.name)))

  // Charts. Every plot shares the run's time axis, the shaded fault windows and the first violation.
  const charts = []
  let moment = null
  let drawn = 0
  const xAxis = () => ({ type: 'linear', offset: false, min: 0, max: Math.max(d.duration, 1), title: { display: true, text: d.workload ? 'seconds on the run\'s clock (the workload began at ' + fmt(d.workload) + ')' : 'seconds since the workload began' } })
  const shading = {
    id: 'lockcheckFaults',
    beforeDatasetsDraw (chart) {
      const { ctx, chartArea: a, scales: { x } } = chart
      let bands = 0
      ctx.save()
      ctx.font = '11px sans-serif'
      ctx.textBaseline = 'top'
      for (const f of d.faults) {
        const x1 = Math.max(a.left, x.getPixelForValue(f.start))
        const x2 = Math.min(a.right, x.getPixelForValue(Math.max(f.end, f.start)))
        if (x2 < x1) continue
        ctx.fillStyle = faultColor(f.kind)
        ctx.fillRect(x1, a.top, Math.max(x2 - x1, 2), a.bottom - a.top)
        bands++
      }
      ctx.restore()
      chart.canvas.dataset.bands = bands
    },
    afterDatasetsDraw (chart) {
      const { ctx, chartArea: a, scales: { x } } = chart
      ctx.save()
      ctx.font = '11px sans-serif'
      ctx.textBaseline = 'top'
      // Each window's edges and label go over the data, so that no bar hides which fault it is.
      for (const f of d.faults) {
        const x1 = Math.max(a.left, x.getPixelForValue(f.start))
        const x2 = Math.min(a.right, x.getPixelForValue(Math.max(f.end, f.start)))
        if (x2 < x1) continue
        ctx.fillStyle = faultColor(f.kind).replace(/[0-9.]+\)$/, '0.9)')
        ctx.fillRect(x1, a.top, Math.max(x2 - x1, 2), 3)
        ctx.fillRect(x1, a.top, 1, a.bottom - a.top)
        ctx.fillRect(Math.max(x2 - 1, x1), a.top, 1, a.bottom - a.top)
        ctx.save()
        ctx.beginPath()
        ctx.rect(x1, a.top, Math.max(x2 - x1, 2), a.bottom - a.top)
        ctx.clip()
        ctx.fillStyle = '#333'
        ctx.fillText(f.kind + ' ' + f.targets, x1 + 3, a.top + 4)
        ctx.restore()
      }
      const line = (t, color, label) => {
        const px = x.getPixelForValue(t)
        if (px < a.left || px > a.right) return
        ctx.strokeStyle = color
        ctx.setLineDash([4, 3])
        ctx.beginPath()
        ctx.moveTo(px, a.top)
        ctx.lineTo(px, a.bottom)
        ctx.stroke()
        ctx.setLineDash([])
        ctx.fillStyle = color
        ctx.fillText(label, px + 3, a.bottom - 14)
      }
      // A liveness checker's span with no progress: a hatched band along the bottom, labelled.
      for (const s of d.stalls || []) {
        const x1 = Math.max(a.left, x.getPixelForValue(s.start))
        const x2 = Math.min(a.right, x.getPixelForValue(s.end))
        if (x2 < x1) continue
        ctx.fillStyle = 'rgba(123,31,162,0.55)'
        ctx.fillRect(x1, a.bottom - 8, Math.max(x2 - x1, 2), 8)
        ctx.fillStyle = '#6a1b9a'
        ctx.fillText(s.label, x1 + 3, a.bottom - 30)
      }
      chart.canvas.dataset.stalls = (d.stalls || []).length
      if (d.first) line(d.first.at, '#d00', 'first violation')
      if (moment !== null && (!d.first || moment !== d.first.at)) line(moment, '#333', fmt(moment))
      ctx.restore()
    },
    afterRender (chart) {
      if (chart.$lockcheckDrawn) return
      chart.$lockcheckDrawn = true
      chart.canvas.dataset.rendered = 'true'
      drawn++
      if (drawn === charts.length) {
        document.body.dataset.rendered = 'true'
        document.body.dataset.renderMs = Math.round(performance.now()) // since navigation began
        console.log('lockcheck: every chart rendered')
      }
    }
  }
  Chart.register(shading)
  Chart.defaults.animation = false
  Chart.defaults.maintainAspectRatio = false

  const specs = []
  const n = d.rate.ok.length
  // Counts per bin (a second, unless the run is very long) as a stacked step area of operations per second;
  // a last point closes the final step.
  const bin = d.bin || 1
  const perSec = (a) => a.map((v, i) => ({ x: i * bin, y: v / bin })).concat(a.length ? [{ x: Math.max(d.duration, (a.length - 1) * bin), y: a[a.length - 1] / bin }] : [])
  const area = (label, values, color, fill) => ({ label, data: perSec(values), stepped: 'after', fill, borderColor: color, backgroundColor: color + 'bb', borderWidth: 1, pointRadius: 0 })
  specs.push(['rate', {
    type: 'line',
    data: {
      datasets: [
        area('ok', d.rate.ok, '#4caf50', 'origin'),
        area('fail', d.rate.fail, '#ff9800', '-1'),
        area('unknown', d.rate.unknown, '#9c27b0', '-1')
      ]
    },
    options: { scales: { x: xAxis(), y: { stacked: true, beginAtZero: true, title: { display: true, text: 'operations completed per second' } } } }
  }])

  const pts = (o) => d.latency.points.filter((p) => p[2] === o).map((p) => ({ x: p[0], y: Math.max(p[1], 0.01) }))
  const q = (a) => a.map((v, i) => ({ x: (i + 0.5) * bin, y: v === null ? null : Math.max(v, 0.01) }))
  specs.push(['latency', {
    type: 'scatter',
    data: {
      datasets: [
        { label: d.latency.op + ' ok', data: pts(0), backgroundColor: 'rgba(76,175,80,0.5)', pointRadius: 2 },
        { label: d.latency.op + ' fail', data: pts(1), backgroundColor: 'rgba(255,152,0,0.6)', pointRadius: 2 },
        { label: d.latency.op + ' unknown', data: pts(2), backgroundColor: 'rgba(156,39,176,0.7)', pointRadius: 3 },
        { label: 'p50', data: q(d.latency.p50), type: 'line', borderColor: '#1565c0', pointRadius: 0, spanGaps: false },
        { label: 'p99', data: q(d.latency.p99), type: 'line', borderColor: '#c62828', pointRadius: 0, spanGaps: false }
      ]
    },
    options: { scales: { x: xAxis(), y: { type: 'logarithmic', title: { display: true, text: d.latency.op + ' latency (ms)' } } } }
  }])
  $('latency-note').textContent = d.latency.points.length < d.latency.total
    ? `${d.latency.points.length} of ${d.latency.total} calls drawn (${d.latency.all_odd ? 'every failed or unknown one kept' : 'failed and unknown ones sampled too'}); p50 and p99 are of all of them`
    : `${d.latency.total} calls`

  const g = d.gantt
  const bar = (s) => ({ x: [s.s, Math.max(s.e, s.s + 0.002)], y: g.rows[s.r] })
  specs.push(['gantt', {
    type: 'bar',
    data: {
      labels: g.rows,
      datasets: [
        { label: 'critical section', data: g.sections.filter((s) => !s.bad && !s.rej).map(bar), backgroundColor: '#4caf50', barPercentage: 0.55, grouped: false, order: 1 },
        { label: 'OVERLAPPING critical section', data: g.sections.filter((s) => s.bad && !s.rej).map(bar), backgroundColor: '#e00000', barPercentage: 0.75, grouped: false, order: 0 },
        { label: 'stale token rejected', data: g.sections.filter((s) => s.rej).map(bar), backgroundColor: '#ffb300', barPercentage: 0.55, grouped: false, order: 0 },
        { label: 'lease (granted, renewed, until released)', data: g.leases.map(bar), backgroundColor: 'rgba(33,150,243,0.22)', barPercentage: 0.95, grouped: false, order: 3 },
        { label: 'renewed', type: 'scatter', data: g.marks.filter((m) => m.k === 'renewed').map((m) => ({ x: m.t, y: g.rows[m.r] })), pointStyle: 'triangle', backgroundColor: '#00838f', pointRadius: 4, order: 0 },
        { label: 'lost (worker report)', type: 'scatter', data: g.marks.filter((m) => m.k === 'lost').map((m) => ({ x: m.t, y: g.rows[m.r] })), pointStyle: 'crossRot', borderColor: '#b71c1c', borderWidth: 2, pointRadius: 6, order: 0 }
      ]
    },
    options: { indexAxis: 'y', scales: { x: xAxis(), y: { type: 'category', labels: g.rows } } }
  }])
  $('gantt-box').style.height = (Math.max(g.rows.length, 1) * 22 + 120) + 'px'
  $('gantt').dataset.overlaps = g.sections.filter((s) => s.bad).length
  const gn = []
  if (g.sections.length < g.total_sections) gn.push(`${g.sections.length} of ${g.total_sections} critical sections drawn (${g.all_bad ? 'every overlapping one kept' : 'overlapping ones sampled too'})`)
  if (g.leases.length < g.total_leases) gn.push(`${g.leases.length} of ${g.total_leases} leases drawn`)
  if (g.hidden_rows) gn.push(`${g.hidden_rows} more rows not drawn`)
  gn.push(`${d.overlaps} critical sections overlap another owner's`)
  $('gantt-note').textContent = gn.join('; ')

  // The proof: its own axis (its few commands span less than the run), not zoomed with the others; the
  // fault windows and the first violation are shaded on it as on every plot.
  if (d.proof) {
    const pr = d.proof
    $('proof-section').hidden = false
    const colors = { ok: '#4caf50', fail: '#ff9800', unknown: '#9c27b0', cs: '#e00000' }
    const lo = Math.min(...pr.ops.map((o) => o.s))
    const hi = Math.max(...pr.ops.map((o) => o.e))
    const pad = Math.max((hi - lo) * 0.1, 0.01)
    specs.push(['proof', {
      type: 'bar',
      data: {
        labels: pr.rows,
        datasets: ['ok', 'fail', 'unknown', 'cs'].map((t) => ({
          label: t === 'cs' ? 'critical section' : 'answered ' + t, backgroundColor: colors[t], barPercentage: t === 'cs' ? 0.3 : 0.6, grouped: false,
          data: pr.ops.filter((o) => o.type === t).map((o) => ({ x: [o.s, Math.max(o.e, o.s + 0.001)], y: pr.rows[o.r], text: o.text }))
        }))
      },
      options: {
        indexAxis: 'y',
        scales: { x: { type: 'linear', min: Math.max(0, lo - pad), max: hi + pad, title: { display: true, text: 'seconds since the run started' } }, y: { type: 'category', labels: pr.rows } },
        plugins: { tooltip: { callbacks: { label: (c) => c.raw.text + ', ' + fmt(c.raw.x[0]) + '–' + fmt(c.raw.x[1]) } } }
      }
    }])
    $('proof-box').style.height = (Math.max(pr.rows.length, 1) * 28 + 120) + 'px'
    $('proof').dataset.ops = pr.ops.length
    $('proof-note').append((pr.checker === 'porcupine'
      ? `${pr.ops.length} of ${pr.total} operations that have no legal order on their own, nor with every other command of the key taking effect or not: `
      : `what ${pr.checker}'s violation rests on: `) +
      pr.ops.map((o) => `${pr.rows[o.r]} ${o.text} at ${fmt(o.s)}`).join('; '))
    const pl = d.links.find((l) => /proof/.test(l.name))
    if (pl) $('proof-note').append('; the excerpt, a history of its own: ', el('a', { href: pl.href }, pl.name))
  }

  if (d.permits) {
    $('permits-section').hidden = false
    specs.push(['permits', {
      type: 'line',
      data: {
        datasets: [
          { label: 'permits in use (most at once in the second)', data: d.permits.in_use.map((v, i) => ({ x: i * bin, y: v })), stepped: 'after', borderColor: '#1565c0', pointRadius: 0 },
          { label: 'permits set', data: [{ x: 0, y: d.permits.exist }, { x: Math.max(d.duration, n), y: d.permits.exist }], borderColor: '#e00000', borderDash: [6, 3], pointRadius: 0 },
          { label: 'permits that exist (an available read + those held then)', type: 'scatter', data: d.permits.reads.map((p) => ({ x: p[0], y: p[1] })), backgroundColor: '#6a1b9a', pointRadius: 4, pointStyle: 'rectRot' }
        ]
      },
      options: { scales: { x: xAxis(), y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'permits' } } } }
    }])
  }

  for (const [id, spec] of specs) charts.push([id, spec])
  for (let i = 0; i < charts.length; i++) charts[i] = new Chart($(charts[i][0]), charts[i][1])

  // A violation's link zooms every plot to its moment; "whole run" zooms back out.
  const zoom = (lo, hi) => {
    for (const c of charts) {
      if (c.canvas.id === 'proof') continue // its own axis
      c.options.scales.x.min = lo
      c.options.scales.x.max = hi
      c.update('none')
    }
  }
  const go = () => {
    const m = /^#t=([0-9.]+)$/.exec(location.hash)
    if (!m) return
    moment = parseFloat(m[1])
    zoom(Math.max(0, moment - 2), Math.min(Math.max(d.duration, 1), moment + 2))
    $('plots').scrollIntoView()
  }
  window.addEventListener('hashchange', go)
  $('whole').addEventListener('click', () => { moment = null; zoom(0, Math.max(d.duration, 1)) })
  go()
})()
