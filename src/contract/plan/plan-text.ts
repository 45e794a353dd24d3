/** The plan as a markdown table and summary (printed, and written as plan.md with --out). */
import { markdownTable } from '../../loadgen/report.js'
import type { CostFigures, PlanResult } from './plan.js'
import type { RunResult } from './run-outcomes.js'

const f = (v: number, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-')
const pct = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : '-')

function cells(r: RunResult): string[] {
  return [f(r.goodput), pct(r.attainment), f(r.ttftP99Ms, 0), f(r.tpotP99Ms, 1), String(r.refused)]
}

function costLine(name: string, c: CostFigures | undefined): string {
  if (c === undefined) return `- ${name}: no good requests`
  return `- ${name}: ${c.per1kTokens.toPrecision(3)} per 1K tokens (prompt + output), ${c.per1kOutputTokens.toPrecision(3)} per 1K output tokens, ${c.perRequest.toPrecision(3)} per request`
}

export function planMarkdown(p: PlanResult): string {
  const lines: string[] = []
  const judged = p.sloClass === undefined ? 'every request' : `class ${p.sloClass}`
  lines.push(`# plan: ${p.profile}, ${p.workload}`)
  lines.push('')
  lines.push(
    `Virtual time, one replica, ${p.durationS} simulated s per rate; attainment of ${judged} >= ${p.attainmentTarget}. First guess of capacity: ${f(p.capacityGuess)} requests/s.`,
  )
  lines.push('')
  const head = [
    'rate/replica',
    'goodput (gw)',
    'attain (gw)',
    'TTFT p99 ms (gw)',
    'TPOT p99 ms (gw)',
    'refused (gw)',
  ]
  const raw = ['goodput (direct)', 'attain (direct)', 'TTFT p99 ms (direct)', 'TPOT p99 ms (direct)']
  lines.push(
    markdownTable(
      [...head, ...raw],
      p.sweep.map((s) => [f(s.rate), ...cells(s.withAdmission), ...cells(s.withoutAdmission).slice(0, 4)]),
    ),
  )
  lines.push('')
  const mg = (name: string, m: PlanResult['withAdmission']) =>
    `- max goodput per replica ${name}: **${f(m.rate)} requests/s**${m.run ? ` (${f(m.run.goodput)} good/s, ${f(m.run.goodOutputTokensPerS, 0)} good output tokens/s, attainment ${pct(m.run.attainment)})` : ''}; lowest failing rate ${m.failRate === undefined ? 'none found' : f(m.failRate)}`
  lines.push(mg('with admission', p.withAdmission))
  lines.push(mg('without admission', p.withoutAdmission))
  if (p.sizing !== undefined) {
    const s = p.sizing
    lines.push(
      `- for ${f(s.targetRate)} requests/s: **${s.replicas} replica(s)** (max goodput x (1 - headroom)); at ${f(s.perReplicaRate)} per replica the plan measures attainment ${pct(s.run.attainment)}, TTFT p99 ${f(s.run.ttftP99Ms, 0)} ms, TPOT p99 ${f(s.run.tpotP99Ms, 1)} ms`,
    )
  }
  if (p.cost !== undefined) {
    lines.push(`- at ${p.cost.gpuCostPerHour} per replica-hour:`)
    lines.push(`  ${costLine('at max goodput', p.cost.atMax)}`)
    if (p.sizing !== undefined) lines.push(`  ${costLine('at the target rate', p.cost.atTarget)}`)
  }
  const t = p.timing
  lines.push(
    `- time: sweep ${(t.sweepMs / 1000).toFixed(1)} s, total ${(t.totalMs / 1000).toFixed(1)} s of CPU for ${t.runs} runs (${t.simulatedS} simulated s)`,
  )
  return `${lines.join('\n')}\n`
}
