// slo-gateway dashboard: the charts, hand-written SVG (no library, no build step).
// Each function redraws one <svg> in place from plain arrays; sizes come from the
// viewBox, so a chart never changes the page's layout.

const NS = 'http://www.w3.org/2000/svg'
export const W = 360
export const H = 150
const PAD = { left: 44, right: 8, top: 16, bottom: 20 }

export function el(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v))
  if (text !== undefined) e.textContent = text
  return e
}

export function newChart(label) {
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'chart' })
  return svg
}

/** A round number at or above v, for an axis maximum. */
export function niceMax(v) {
  if (!(v > 0)) return 1
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}

export function fmt(v, digits = 0) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–'
  const a = Math.abs(v)
  if (a >= 10_000) return `${(v / 1000).toFixed(0)}k`
  if (a >= 1000) return `${(v / 1000).toFixed(1)}k`
  return v.toFixed(digits)
}

function frame(svg, yMax, unit, xTicks) {
  svg.replaceChildren()
  const iw = W - PAD.left - PAD.right
  const ih = H - PAD.top - PAD.bottom
  const g = el('g', { class: 'axis' })
  for (let i = 0; i <= 4; i++) {
    const y = PAD.top + ih - (ih * i) / 4
    g.append(el('line', { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y, class: 'gridline' }))
    g.append(
      el('text', { x: PAD.left - 4, y: y + 3, 'text-anchor': 'end' }, fmt((yMax * i) / 4, yMax < 4 ? 1 : 0)),
    )
  }
  g.append(el('text', { x: 2, y: 9, 'text-anchor': 'start', class: 'unit' }, unit))
  for (const [frac, label] of xTicks) {
    const x = PAD.left + iw * frac
    g.append(el('text', { x, y: H - 5, 'text-anchor': frac === 1 ? 'end' : 'middle' }, label))
  }
  svg.append(g)
  return {
    x: (frac) => PAD.left + iw * frac,
    y: (v) => PAD.top + ih - (ih * Math.min(v, yMax)) / yMax,
    iw,
    ih,
  }
}

export const TIME_TICKS = [
  [0, '−5 min'],
  [0.2, '−4'],
  [0.4, '−3'],
  [0.6, '−2'],
  [0.8, '−1'],
  [1, 'now'],
]

/**
 * Stacked bars, one per slot: `layers` bottom first, each { cls, values } (same length).
 * Returns the tallest stack drawn.
 */
export function stackedBars(svg, layers, unit) {
  const n = layers[0]?.values.length ?? 0
  let top = 0
  for (let i = 0; i < n; i++) {
    let sum = 0
    for (const l of layers) sum += l.values[i] ?? 0
    top = Math.max(top, sum)
  }
  const f = frame(svg, niceMax(top), unit, TIME_TICKS)
  const bw = n > 0 ? f.iw / n : 0
  for (let i = 0; i < n; i++) {
    let base = 0
    for (const l of layers) {
      const v = l.values[i] ?? 0
      if (v <= 0) continue
      const y0 = f.y(base)
      const y1 = f.y(base + v)
      svg.append(
        el('rect', { x: f.x(i / n) + 0.5, y: y1, width: Math.max(1, bw - 1), height: y0 - y1, class: l.cls }),
      )
      base += v
    }
  }
  return top
}

/** Lines over the 5 minutes (null: a gap) and dashed reference lines { value, cls, label }. */
export function lines(svg, series, refs, unit, fixedMax) {
  let top = 0
  for (const s of series) for (const v of s.values) if (v !== null && v > top) top = v
  for (const r of refs) if (r.value !== null && r.value > top) top = r.value
  const yMax = fixedMax ?? niceMax(top * 1.1)
  const f = frame(svg, yMax, unit, TIME_TICKS)
  for (const r of refs) {
    if (r.value === null) continue
    const y = f.y(r.value)
    svg.append(el('line', { x1: f.x(0), x2: f.x(1), y1: y, y2: y, class: `ref ${r.cls}` }))
    svg.append(
      el('text', { x: f.x(1) - 2, y: y - 3, 'text-anchor': 'end', class: `ref-label ${r.cls}` }, r.label),
    )
  }
  for (const s of series) {
    const n = s.values.length
    let d = ''
    let pen = false
    s.values.forEach((v, i) => {
      if (v === null) {
        pen = false
        return
      }
      const x = f.x((i + 0.5) / n).toFixed(1)
      const y = f.y(v).toFixed(1)
      d += `${pen ? 'L' : 'M'}${x},${y}`
      pen = true
      // a point of its own too, so a lone slot (no neighbour to join) still shows
      svg.append(el('circle', { cx: x, cy: y, r: 1.8, class: `point ${s.cls}` }))
    })
    if (d !== '') svg.append(el('path', { d, class: `line ${s.cls}` }))
  }
}

/** Predicted (x) against actual (y) TTFT in ms, with the diagonal and the objective. */
export function scatter(svg, points, sloMs) {
  let top = sloMs ?? 0
  for (const [p, a] of points) top = Math.max(top, p, a)
  const max = niceMax(top * 1.05)
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((t) => [t, fmt(max * t, max < 4 ? 1 : 0)])
  const f = frame(svg, max, 'ms', ticks)
  const xs = (v) => f.x(Math.min(v, max) / max)
  svg.append(el('line', { x1: xs(0), y1: f.y(0), x2: xs(max), y2: f.y(max), class: 'diag' }))
  if (sloMs !== null) {
    svg.append(el('line', { x1: xs(0), x2: xs(max), y1: f.y(sloMs), y2: f.y(sloMs), class: 'ref slo' }))
    svg.append(
      el(
        'text',
        { x: xs(max) - 2, y: f.y(sloMs) - 3, 'text-anchor': 'end', class: 'ref-label slo' },
        'objective',
      ),
    )
  }
  for (const [p, a] of points)
    svg.append(el('circle', { cx: xs(p).toFixed(1), cy: f.y(a).toFixed(1), r: 2, class: 'dot' }))
  svg.append(
    el(
      'text',
      { x: W - PAD.right, y: 9, 'text-anchor': 'end', class: 'unit' },
      'x: predicted ms, y: actual ms',
    ),
  )
}
