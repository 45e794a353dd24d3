// slo-gateway dashboard: asks /dashboard/data about once a second and draws it.
// The admin token (when the gateway has one) is asked for once, kept in this tab's
// sessionStorage and sent as an Authorization header; nothing is shown without it.

import { fmt, lines, newChart, scatter, stackedBars } from './charts.js'

const TOKEN_KEY = 'slo-gateway-admin-token'
const $ = (sel) => document.querySelector(sel)

let timer
let layout = ''

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v
    else if (k === 'style')
      Object.assign(e.style, v) // CSSOM: allowed under the page's CSP
    else e.setAttribute(k, String(v))
  }
  e.append(...children)
  return e
}

const pct = (v) => (v === null || v === undefined ? '–' : `${(v * 100).toFixed(1)}%`)
const ms = (v) => (v === null || v === undefined ? '–' : `${fmt(v, v < 10 ? 1 : 0)} ms`)
const signedPct = (v) =>
  v === null || v === undefined ? '–' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}%`

function setStatus(text, bad = false) {
  const s = $('#status')
  s.textContent = text
  s.classList.toggle('bad', bad)
}

function askToken(why) {
  clearTimeout(timer)
  $('#main').replaceChildren()
  layout = ''
  const form = $('#login')
  form.hidden = false
  $('#login-why').textContent = why ?? 'This gateway needs its admin token (server.admin_token).'
  setStatus('waiting for the admin token')
  $('#token').focus()
}

$('#login').addEventListener('submit', (ev) => {
  ev.preventDefault()
  const value = $('#token').value.trim()
  if (value === '') return
  sessionStorage.setItem(TOKEN_KEY, value)
  $('#token').value = ''
  $('#login').hidden = true
  poll()
})

async function poll() {
  clearTimeout(timer)
  const token = sessionStorage.getItem(TOKEN_KEY)
  const headers = token ? { authorization: `Bearer ${token}` } : {}
  let res
  try {
    res = await fetch('/dashboard/data', { headers, cache: 'no-store' })
  } catch {
    setStatus('the gateway does not answer; trying again', true)
    timer = setTimeout(poll, 2000)
    return
  }
  if (res.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY)
    askToken('The token was refused: enter the admin token again.')
    return
  }
  if (!res.ok) {
    setStatus(`GET /dashboard/data: HTTP ${res.status}; trying again`, true)
    timer = setTimeout(poll, 2000)
    return
  }
  const data = await res.json()
  render(data)
  setStatus(
    `updated ${new Date().toLocaleTimeString()} · in flight ${data.inflight}${data.draining ? ' · DRAINING' : ''}`,
    data.draining,
  )
  timer = setTimeout(poll, data.refreshMs ?? 1000)
}

// ---- layout: built once per set of classes and pools, then updated in place ----

function panel(name, title, ...body) {
  return h('div', { class: `panel ${name}`, 'data-panel': name }, h('h3', {}, title), ...body)
}

function legend(items) {
  return h(
    'div',
    { class: 'legend' },
    ...items.map(([cls, label]) => h('span', { class: `key ${cls}` }, label)),
  )
}

function objectives(c) {
  const o = []
  if (c.ttftMs !== null) o.push(`TTFT ≤ ${c.ttftMs} ms`)
  if (c.tpotMs !== null) o.push(`TPOT ≤ ${c.tpotMs} ms`)
  if (c.e2eMs !== null) o.push(`E2E ≤ ${fmt(c.e2eMs / 1000)} s`)
  o.push(`attainment target ${pct(c.attainmentTarget)}`, `KV limit ${pct(c.maxKvUsage)}`)
  return o.join(' · ')
}

function buildClass(c) {
  const sec = h('section', { class: 'class', 'data-class': c.name })
  sec.append(h('h2', {}, c.name, h('small', {}, objectives(c))))
  const grid = h('div', { class: 'grid' })
  grid.append(
    panel(
      'rates',
      'Requests per second (5 s slots, last 5 min)',
      newChart('requests per second'),
      legend([
        ['good', 'good'],
        ['miss', 'admitted, not good'],
        ['refused', 'refused'],
      ]),
      h('p', { class: 'figures' }),
    ),
    panel(
      'attainment',
      'SLO attainment (5 min)',
      h('div', { class: 'big' }),
      newChart('attainment'),
      legend([
        ['offered', 'of offered'],
        ['admitted', 'of admitted'],
        ['target', 'target'],
      ]),
    ),
    panel(
      'ttft',
      'TTFT p50 / p99',
      newChart('TTFT'),
      legend([
        ['p50', 'p50'],
        ['p99', 'p99'],
        ['slo', 'objective'],
      ]),
      h('p', { class: 'figures' }),
    ),
    panel(
      'tpot',
      'TPOT p50 / p99',
      newChart('TPOT'),
      legend([
        ['p50', 'p50'],
        ['p99', 'p99'],
        ['slo', 'objective'],
      ]),
      h('p', { class: 'figures' }),
    ),
    panel('queue', 'Queue, per pool', h('table', {})),
    panel('refusals', 'Refusals by reason · degradations by action (5 min)', h('div', { class: 'bars' })),
    panel(
      'scatter',
      'Predicted against actual TTFT (last requests)',
      newChart('predicted against actual TTFT'),
      h('p', { class: 'figures' }),
    ),
  )
  sec.append(grid)
  return sec
}

function buildLayout(data) {
  const main = $('#main')
  main.replaceChildren()
  if (!data.telemetry)
    main.append(
      h(
        'p',
        { class: 'note' },
        'Telemetry is off (telemetry.enabled: false): only queues and backends are shown.',
      ),
    )
  for (const c of data.classes) main.append(buildClass(c))
  main.append(
    h(
      'section',
      { class: 'fleet' },
      h('h2', {}, 'Backends'),
      panel(
        'backends',
        'Per endpoint: KV usage against each class’s limit (ticks), engine queue, scrape age',
        h('table', {}),
      ),
      h('h2', {}, 'Tenants'),
      panel(
        'tenants',
        'Cost per 1K tokens per tenant (5 min; cost arrives when its interval closes)',
        h('table', {}),
      ),
    ),
  )
}

// ---- updates ----

function rates(series, i) {
  const s = series.spanS[i]
  return s > 0 ? 1 / s : 0
}

function updateClass(sec, c, data) {
  const w = data.windows[c.name]?.['5m']
  const w1 = data.windows[c.name]?.['1m']
  const s = data.series[c.name]
  const q = (sel) => sec.querySelector(sel)
  if (s !== undefined) {
    const per = (arr) => arr.map((v, i) => v * rates(s, i))
    const miss = s.admitted.map((a, i) => a - s.good[i])
    const p = q('[data-panel=rates]')
    stackedBars(
      p.querySelector('svg'),
      [
        { cls: 'good', values: per(s.good) },
        { cls: 'miss', values: per(miss) },
        { cls: 'refused', values: per(s.rejected) },
      ],
      'req/s',
    )
    const sum = (arr) => arr.reduce((a, b) => a + b, 0)
    Object.assign(p.dataset, {
      offered: sum(s.offered),
      admitted: sum(s.admitted),
      good: sum(s.good),
      rejected: sum(s.rejected),
    })
    p.querySelector('.figures').textContent =
      `1 min: offered ${fmt(w1?.offeredRps, 2)}/s · good ${fmt(w1?.goodputRps, 2)}/s · ${fmt(w1?.goodputTokensPerS, 0)} good tok/s`

    const att = (num, den) => num.map((g, i) => (den[i] > 0 ? g / den[i] : null))
    const a = q('[data-panel=attainment]')
    lines(
      a.querySelector('svg'),
      [
        { cls: 'offered', values: att(s.good, s.offered).map((v) => (v === null ? null : v * 100)) },
        { cls: 'admitted', values: att(s.good, s.admitted).map((v) => (v === null ? null : v * 100)) },
      ],
      [{ value: c.attainmentTarget * 100, cls: 'target', label: `target ${pct(c.attainmentTarget)}` }],
      '%',
      100,
    )
    a.dataset.attainment = w?.attainment ?? ''
    a.dataset.attainmentAdmitted = w?.attainmentAdmitted ?? ''
    const below = (v) => (v !== null && v !== undefined && v < c.attainmentTarget ? ' below' : '')
    a.querySelector('.big').replaceChildren(
      h('span', { class: `stat${below(w?.attainment)}` }, h('b', {}, pct(w?.attainment)), ' of offered'),
      h(
        'span',
        { class: `stat${below(w?.attainmentAdmitted)}` },
        h('b', {}, pct(w?.attainmentAdmitted)),
        ' of admitted',
      ),
    )

    for (const [name, p50, p99, slo, key] of [
      ['ttft', s.ttftP50, s.ttftP99, c.ttftMs, 'ttftMs'],
      ['tpot', s.tpotP50, s.tpotP99, c.tpotMs, 'tpotMs'],
    ]) {
      const el = q(`[data-panel=${name}]`)
      lines(
        el.querySelector('svg'),
        [
          { cls: 'p50', values: p50 },
          { cls: 'p99', values: p99 },
        ],
        slo === null ? [] : [{ value: slo, cls: 'slo', label: `objective ${slo} ms` }],
        'ms',
      )
      el.dataset.p50 = w?.[key].p50 ?? ''
      el.dataset.p99 = w?.[key].p99 ?? ''
      el.querySelector('.figures').textContent =
        `5 min: p50 ${ms(w?.[key].p50)} · p99 ${ms(w?.[key].p99)}${slo === null ? ' · no objective' : ` · objective ${slo} ms`}`
    }
  }

  const qp = q('[data-panel=queue]')
  const rows = data.queues.filter((x) => x.class === c.name)
  qp.dataset.queued = rows.reduce((a, r) => a + r.queued, 0)
  qp.querySelector('table').replaceChildren(
    h(
      'tr',
      {},
      h('th', {}, 'pool'),
      h('th', {}, 'queued'),
      h('th', {}, 'in flight'),
      h('th', {}, 'oldest wait'),
    ),
    ...rows.map((r) =>
      h(
        'tr',
        { 'data-pool': r.pool },
        h('td', {}, r.pool),
        h('td', {}, String(r.queued)),
        h('td', {}, String(r.inflight)),
        h('td', {}, ms(r.oldestWaitMs)),
      ),
    ),
  )

  const rp = q('[data-panel=refusals]')
  const reasons = Object.entries(w?.rejectionsByReason ?? {}).sort((x, y) => y[1] - x[1])
  const actions = Object.entries(w?.degradationsByAction ?? {}).sort((x, y) => y[1] - x[1])
  rp.dataset.rejected = reasons.reduce((a, [, n]) => a + n, 0)
  rp.dataset.degraded = actions.reduce((a, [, n]) => a + n, 0)
  const top = Math.max(1, ...reasons.map((r) => r[1]), ...actions.map((r) => r[1]))
  const bar = (kind, [name, n]) =>
    h(
      'div',
      { class: `bar ${kind}`, 'data-key': name, 'data-count': n },
      h('span', { class: 'name' }, name),
      h(
        'span',
        { class: 'track' },
        h('span', { class: 'fill', style: { width: `${((n / top) * 100).toFixed(1)}%` } }),
      ),
      h('span', { class: 'n' }, String(n)),
    )
  const none = (what) => h('div', { class: 'none' }, what)
  rp.querySelector('.bars').replaceChildren(
    h('h4', {}, 'refused'),
    ...(reasons.length ? reasons.map((r) => bar('refused', r)) : [none('none')]),
    h('h4', {}, 'degraded'),
    ...(actions.length ? actions.map((r) => bar('degraded', r)) : [none('none')]),
  )

  const sp = q('[data-panel=scatter]')
  const sc = data.scatter[c.name]
  if (sc !== undefined) {
    scatter(sp.querySelector('svg'), sc.points, c.ttftMs)
    sp.dataset.points = sc.points.length
    const est = data.estimator.map((e) => `${e.pool} estimator ${pct(e.meanAbsRelativeError)}`).join(' · ')
    sp.querySelector('.figures').textContent =
      `${sc.error.n} requests: mean |error| ${pct(sc.error.meanAbsRelative)} · bias ${signedPct(sc.error.meanRelative)}${est ? ` · ${est}` : ''}`
  }
}

function kvCell(b, classes) {
  const track = h('span', { class: 'kv' })
  track.append(h('span', { class: 'kvfill', style: { width: `${((b.kvUsage ?? 0) * 100).toFixed(1)}%` } }))
  for (const c of classes)
    track.append(
      h('span', {
        class: 'limit',
        title: `${c.name} ${pct(c.maxKvUsage)}`,
        style: { left: `${(c.maxKvUsage * 100).toFixed(1)}%` },
      }),
    )
  return h('td', { class: 'kvcell' }, track, h('span', { class: 'n' }, pct(b.kvUsage)))
}

function updateFleet(data) {
  const bp = $('[data-panel=backends]')
  bp.dataset.endpoints = data.backends.length
  bp.querySelector('table').replaceChildren(
    h(
      'tr',
      {},
      ...[
        'pool',
        'endpoint',
        'state',
        `KV usage (${data.classes.map((c) => `${c.name} ≤ ${pct(c.maxKvUsage)}`).join(', ')})`,
        'waiting',
        'running',
        'scrape age',
      ].map((t) => h('th', {}, t)),
    ),
    ...data.backends.map((b) =>
      h(
        'tr',
        { 'data-endpoint': b.name, 'data-status': b.status },
        h('td', {}, b.pool),
        h('td', {}, b.name),
        h(
          'td',
          {},
          h(
            'span',
            { class: `badge ${b.ejected ? 'ejected' : b.up ? 'up' : 'down'}` },
            b.ejected ? 'ejected' : b.up ? 'up' : 'down',
          ),
          ` ${b.status}`,
        ),
        kvCell(b, data.classes),
        h('td', {}, fmt(b.waiting)),
        h('td', {}, fmt(b.running)),
        h('td', {}, ms(b.scrapeAgeMs)),
      ),
    ),
  )
  const tp = $('[data-panel=tenants]')
  tp.dataset.tenants = data.tenants.length
  tp.querySelector('table').replaceChildren(
    h(
      'tr',
      {},
      h('th', {}, 'tenant'),
      h('th', {}, 'tokens'),
      h('th', {}, 'cost'),
      h('th', {}, 'cost / 1K tokens'),
    ),
    ...(data.tenants.length === 0
      ? [h('tr', {}, h('td', { colspan: 4, class: 'none' }, 'no tokens in the last 5 minutes'))]
      : data.tenants.map((t) =>
          h(
            'tr',
            { 'data-tenant': t.tenant, 'data-tokens': t.tokens },
            h('td', {}, t.tenant),
            h('td', {}, fmt(t.tokens)),
            h('td', {}, t.cost.toFixed(6)),
            h('td', {}, t.costPer1kTokens === null ? '–' : t.costPer1kTokens.toFixed(6)),
          ),
        )),
  )
}

function render(data) {
  const shape = JSON.stringify([data.telemetry, data.classes])
  if (shape !== layout) {
    buildLayout(data)
    layout = shape
  }
  for (const c of data.classes) updateClass($(`section.class[data-class="${CSS.escape(c.name)}"]`), c, data)
  updateFleet(data)
  document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes ?? 0) + 1)
}

async function start() {
  if (location.hash.startsWith('#token=')) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(location.hash.slice(7)))
    history.replaceState(null, '', location.pathname)
  }
  let auth = { tokenRequired: false }
  try {
    auth = await (await fetch('/dashboard/auth', { cache: 'no-store' })).json()
  } catch {
    setStatus('the gateway does not answer', true)
  }
  if (auth.tokenRequired && !sessionStorage.getItem(TOKEN_KEY)) askToken()
  else poll()
}

start()
