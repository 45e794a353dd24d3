/**
 * The TTFT CDF of each class as a standalone SVG (no charting dependency): the share of a
 * class's successful requests whose TTFT was at most x, with its TTFT objective as a dashed
 * line. The x axis runs to the largest P99 (or objective) with a little room; the rest of a
 * curve is clipped at the edge.
 */

export interface CdfSeries {
  readonly name: string
  /** Ascending TTFTs, ms. */
  readonly values: ArrayLike<number>
  readonly sloMs?: number
}

const W = 720
const H = 420
const M = { left: 60, right: 170, top: 36, bottom: 48 }
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf']

const esc = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')

const NICE = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]

/** A round axis end at or above v (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten). */
export function niceCeil(v: number): number {
  if (!(v > 0)) return 1
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of NICE) if (m * p >= v * (1 - 1e-12)) return m * p
  return 10 * p
}

const r1 = (v: number) => Math.round(v * 10) / 10

const at99 = (v: ArrayLike<number>) =>
  v.length === 0 ? 0 : v[Math.min(v.length - 1, Math.floor(0.99 * v.length))]!

export function ttftCdfSvg(series: readonly CdfSeries[], title = 'TTFT CDF by class'): string {
  const top = Math.max(1, ...series.map((s) => Math.max(at99(s.values) * 1.1, (s.sloMs ?? 0) * 1.1)))
  const xMax = niceCeil(top)
  const pw = W - M.left - M.right
  const ph = H - M.top - M.bottom
  const x = (v: number) => r1(M.left + (Math.min(v, xMax) / xMax) * pw)
  const y = (f: number) => r1(M.top + (1 - f) * ph)
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${M.left}" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ]
  for (let i = 0; i <= 5; i++) {
    const v = (xMax * i) / 5
    const f = i / 5
    out.push(
      `<line x1="${x(v)}" y1="${M.top}" x2="${x(v)}" y2="${M.top + ph}" stroke="#eee"/>`,
      `<text x="${x(v)}" y="${M.top + ph + 16}" text-anchor="middle">${+v.toPrecision(4)}</text>`,
      `<line x1="${M.left}" y1="${y(f)}" x2="${M.left + pw}" y2="${y(f)}" stroke="#eee"/>`,
      `<text x="${M.left - 6}" y="${y(f) + 4}" text-anchor="end">${f.toFixed(1)}</text>`,
    )
  }
  out.push(
    `<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`,
    `<text x="${M.left + pw / 2}" y="${H - 10}" text-anchor="middle">TTFT (ms)</text>`,
    `<text x="16" y="${M.top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 ${M.top + ph / 2})">share of requests</text>`,
  )
  series.forEach((s, k) => {
    const color = COLORS[k % COLORS.length]!
    const n = s.values.length
    // a step per value, thinned to at most ~600 points
    const step = Math.max(1, Math.floor(n / 600))
    const pts: string[] = [`${x(0)},${y(0)}`]
    for (let i = 0; i < n; i += step) {
      const v = s.values[i]!
      pts.push(`${x(v)},${y(i / n)}`, `${x(v)},${y((i + 1) / n)}`)
    }
    if (n > 0) pts.push(`${x(s.values[n - 1]!)},${y(1)}`)
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`)
    if (s.sloMs !== undefined)
      out.push(
        `<line x1="${x(s.sloMs)}" y1="${M.top}" x2="${x(s.sloMs)}" y2="${M.top + ph}" stroke="${color}" stroke-dasharray="5,4"/>`,
      )
    const ly = M.top + 10 + k * 34
    out.push(
      `<line x1="${M.left + pw + 12}" y1="${ly}" x2="${M.left + pw + 36}" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${M.left + pw + 42}" y="${ly + 4}">${esc(s.name)} (n=${n})</text>`,
    )
    if (s.sloMs !== undefined)
      out.push(
        `<text x="${M.left + pw + 42}" y="${ly + 18}" fill="#555">dashed: SLO ${+s.sloMs.toPrecision(6)} ms</text>`,
      )
  })
  out.push('</svg>')
  return `${out.join('\n')}\n`
}
