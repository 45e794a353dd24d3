/**
 * A metric against offered load as a standalone SVG (no charting dependency): one line with
 * markers per series (a class, or every request), the x axis the offered rate in requests/s.
 * Optional guides: a dashed horizontal line (the attainment target) and the diagonal y = x
 * (goodput can at best equal the offered load).
 */
import { niceCeil } from './ttft-cdf-svg.js'

export interface CurveSeries {
  readonly name: string
  /** [offered rate, value] pairs, in any order. */
  readonly points: readonly (readonly [number, number])[]
}

export interface CurveChart {
  readonly title: string
  readonly yLabel: string
  readonly series: readonly CurveSeries[]
  /** A fixed top of the y axis (1 for a share); else from the data. */
  readonly yMax?: number
  /** Show the y axis as percentages. */
  readonly percent?: boolean
  /** A dashed horizontal guide at this y, with its label. */
  readonly hline?: { readonly y: number; readonly label: string }
  /** Draw y = x, labelled. */
  readonly diagonal?: string
}

const W = 720
const H = 420
const M = { left: 64, right: 190, top: 36, bottom: 48 }
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf']

const esc = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')
const r1 = (v: number) => Math.round(v * 10) / 10
const finite = (v: number) => Number.isFinite(v)

export function loadCurveSvg(c: CurveChart): string {
  const pts = c.series.flatMap((s) => s.points.filter(([x, y]) => finite(x) && finite(y)))
  const xMax = niceCeil(Math.max(...pts.map(([x]) => x), 0) * 1.05)
  const yTop = Math.max(...pts.map(([, y]) => y), c.hline?.y ?? 0)
  const yMax = c.yMax ?? niceCeil(yTop * 1.1)
  const pw = W - M.left - M.right
  const ph = H - M.top - M.bottom
  const x = (v: number) => r1(M.left + (Math.min(Math.max(v, 0), xMax) / xMax) * pw)
  const y = (v: number) => r1(M.top + (1 - Math.min(Math.max(v, 0), yMax) / yMax) * ph)
  const yTick = (v: number) => (c.percent ? `${Math.round(v * 100)}%` : `${+v.toPrecision(4)}`)
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${M.left}" y="20" font-size="14" font-weight="bold">${esc(c.title)}</text>`,
  ]
  for (let i = 0; i <= 5; i++) {
    const xv = (xMax * i) / 5
    const yv = (yMax * i) / 5
    out.push(
      `<line x1="${x(xv)}" y1="${M.top}" x2="${x(xv)}" y2="${M.top + ph}" stroke="#eee"/>`,
      `<text x="${x(xv)}" y="${M.top + ph + 16}" text-anchor="middle">${+xv.toPrecision(4)}</text>`,
      `<line x1="${M.left}" y1="${y(yv)}" x2="${M.left + pw}" y2="${y(yv)}" stroke="#eee"/>`,
      `<text x="${M.left - 6}" y="${y(yv) + 4}" text-anchor="end">${yTick(yv)}</text>`,
    )
  }
  out.push(
    `<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`,
    `<text x="${M.left + pw / 2}" y="${H - 10}" text-anchor="middle">offered load (requests/s)</text>`,
    `<text x="16" y="${M.top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 ${M.top + ph / 2})">${esc(c.yLabel)}</text>`,
  )
  let legend = 0
  const legendAt = () => M.top + 10 + legend++ * 22
  if (c.diagonal !== undefined) {
    const end = Math.min(xMax, yMax)
    const ly = legendAt()
    out.push(
      `<line x1="${x(0)}" y1="${y(0)}" x2="${x(end)}" y2="${y(end)}" stroke="#999" stroke-dasharray="2,3"/>`,
      `<line x1="${M.left + pw + 12}" y1="${ly}" x2="${M.left + pw + 36}" y2="${ly}" stroke="#999" stroke-dasharray="2,3"/>`,
      `<text x="${M.left + pw + 42}" y="${ly + 4}">${esc(c.diagonal)}</text>`,
    )
  }
  if (c.hline !== undefined) {
    const ly = legendAt()
    out.push(
      `<line x1="${M.left}" y1="${y(c.hline.y)}" x2="${M.left + pw}" y2="${y(c.hline.y)}" stroke="#555" stroke-dasharray="6,4"/>`,
      `<line x1="${M.left + pw + 12}" y1="${ly}" x2="${M.left + pw + 36}" y2="${ly}" stroke="#555" stroke-dasharray="6,4"/>`,
      `<text x="${M.left + pw + 42}" y="${ly + 4}">${esc(c.hline.label)}</text>`,
    )
  }
  c.series.forEach((s, k) => {
    const color = COLORS[k % COLORS.length]!
    const ps = s.points.filter(([px, py]) => finite(px) && finite(py)).sort((a, b) => a[0] - b[0])
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${ps.map(([px, py]) => `${x(px)},${y(py)}`).join(' ')}"/>`,
    )
    for (const [px, py] of ps) out.push(`<circle cx="${x(px)}" cy="${y(py)}" r="3.5" fill="${color}"/>`)
    const ly = legendAt()
    out.push(
      `<line x1="${M.left + pw + 12}" y1="${ly}" x2="${M.left + pw + 36}" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${M.left + pw + 42}" y="${ly + 4}">${esc(s.name)}</text>`,
    )
  })
  out.push('</svg>')
  return `${out.join('\n')}\n`
}
