/**
 * The plan's figure as a standalone SVG: goodput (good requests/s per replica, left panel)
 * and SLO attainment (right panel, with the target as a dashed line) against the offered
 * rate per replica, with admission (solid) and without it (dashed).
 */
import { niceCeil } from '../../loadgen/ttft-cdf-svg.js'
import type { PlanResult } from './plan.js'

const W = 900
const H = 380
const PANEL = 360
const M = { left: 60, top: 40, bottom: 50 }
const GAP = 90
const COLORS = { with: '#1f77b4', without: '#d62728' }

const r1 = (v: number) => Math.round(v * 10) / 10
const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

interface Panel {
  readonly x0: number
  readonly yMax: number
  readonly title: string
  readonly value: (p: PlanResult['sweep'][number], admission: boolean) => number
  readonly ticks: readonly number[]
  readonly target?: number
}

export function planSvg(plan: PlanResult): string {
  const points = plan.sweep
  const xMax = niceCeil(Math.max(...points.map((p) => p.rate)) * 1.02)
  const gMax = niceCeil(
    Math.max(0.001, ...points.flatMap((p) => [p.withAdmission.goodput, p.withoutAdmission.goodput])) * 1.05,
  )
  const h = H - M.top - M.bottom
  const panels: Panel[] = [
    {
      x0: M.left,
      yMax: gMax,
      title: 'goodput (good requests/s per replica)',
      value: (p, a) => (a ? p.withAdmission : p.withoutAdmission).goodput,
      ticks: [0, 0.25, 0.5, 0.75, 1].map((f) => f * gMax),
    },
    {
      x0: M.left + PANEL + GAP,
      yMax: 1,
      title: 'SLO attainment (good / offered)',
      value: (p, a) => {
        const v = (a ? p.withAdmission : p.withoutAdmission).attainment
        return Number.isFinite(v) ? v : 0
      },
      ticks: [0, 0.25, 0.5, 0.75, 1],
      target: plan.attainmentTarget,
    },
  ]
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">${esc(`plan: ${plan.profile}, ${plan.workload.split('/').pop() ?? ''}, ${plan.durationS} s per rate`)}</text>`,
  ]
  for (const panel of panels) {
    const sx = (x: number) => r1(panel.x0 + (x / xMax) * PANEL)
    const sy = (y: number) => r1(M.top + h - (Math.min(y, panel.yMax) / panel.yMax) * h)
    out.push(
      `<text x="${panel.x0 + PANEL / 2}" y="${M.top - 8}" text-anchor="middle">${esc(panel.title)}</text>`,
    )
    out.push(`<rect x="${panel.x0}" y="${M.top}" width="${PANEL}" height="${h}" fill="none" stroke="#999"/>`)
    for (const t of panel.ticks) {
      out.push(`<line x1="${panel.x0}" x2="${panel.x0 + PANEL}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`)
      out.push(`<text x="${panel.x0 - 6}" y="${sy(t) + 4}" text-anchor="end">${r1(t * 100) / 100}</text>`)
    }
    for (const f of [0, 0.25, 0.5, 0.75, 1])
      out.push(`<text x="${sx(f * xMax)}" y="${M.top + h + 16}" text-anchor="middle">${r1(f * xMax)}</text>`)
    out.push(
      `<text x="${panel.x0 + PANEL / 2}" y="${H - 12}" text-anchor="middle">offered rate per replica (requests/s)</text>`,
    )
    if (panel.target !== undefined)
      out.push(
        `<line x1="${panel.x0}" x2="${panel.x0 + PANEL}" y1="${sy(panel.target)}" y2="${sy(panel.target)}" stroke="#555" stroke-dasharray="2 3"/>`,
      )
    for (const admission of [true, false]) {
      const color = admission ? COLORS.with : COLORS.without
      const pts = points.map((p) => `${sx(p.rate)},${sy(panel.value(p, admission))}`).join(' ')
      out.push(
        `<polyline points="${pts}" fill="none" stroke="${color}" stroke-width="2"${admission ? '' : ' stroke-dasharray="6 4"'}/>`,
      )
      for (const p of points)
        out.push(`<circle cx="${sx(p.rate)}" cy="${sy(panel.value(p, admission))}" r="3" fill="${color}"/>`)
    }
  }
  const lx = M.left + 10
  out.push(
    `<line x1="${lx}" x2="${lx + 24}" y1="${M.top + 14}" y2="${M.top + 14}" stroke="${COLORS.with}" stroke-width="2"/>`,
  )
  out.push(`<text x="${lx + 30}" y="${M.top + 18}">with admission</text>`)
  out.push(
    `<line x1="${lx}" x2="${lx + 24}" y1="${M.top + 30}" y2="${M.top + 30}" stroke="${COLORS.without}" stroke-width="2" stroke-dasharray="6 4"/>`,
  )
  out.push(`<text x="${lx + 30}" y="${M.top + 34}">without admission</text>`)
  out.push('</svg>')
  return `${out.join('\n')}\n`
}
