/** The doctor report as text for a terminal: the findings, then the contract per pool. */
import type { DoctorReport } from './doctor.js'

const MARK = { error: 'ERROR', warning: 'WARN ', info: 'info ' } as const

function fmtNum(v: unknown): string {
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(2)
  return String(v)
}

function sloText(slo: Record<string, number | undefined>): string {
  const parts = Object.entries(slo)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k.replace(/_ms$/, '')} ${v}${k.endsWith('_ms') ? ' ms' : ''}`)
  return parts.length === 0 ? 'none' : parts.join(', ')
}

export function doctorText(r: DoctorReport): string {
  const out: string[] = []
  const { error, warning, info } = r.counts
  out.push(`slo-gateway doctor: ${r.config}: ${error} error(s), ${warning} warning(s), ${info} note(s)`)
  for (const f of r.findings) {
    out.push('')
    out.push(`${MARK[f.severity]} ${f.id}: ${f.title}`)
    out.push(`      at:   ${f.path}`)
    const nums = Object.entries(f.numbers).map(([k, v]) => `${k}=${fmtNum(v)}`)
    if (nums.length > 0) out.push(`      data: ${nums.join(' ')}`)
    out.push(`      why:  ${f.why}`)
    out.push(`      fix:  ${f.fix}`)
  }
  for (const p of r.contract) {
    out.push('')
    out.push(
      `Contract: pool ${p.pool} (${p.engine}, models ${p.models.join(', ')}; ${p.replicas > 0 ? `${p.replicas} replica(s)` : 'replicas by discovery'}; step model: ${p.stepModel})`,
    )
    const facts = Object.entries(p.facts).filter(([k]) => k !== 'stepTime' && k !== 'models')
    out.push(
      `  resources: ${facts.length === 0 ? 'unknown (no server answered, no profile)' : facts.map(([k, v]) => `${k} ${fmtNum(v.value)} (${v.source})`).join('; ')}`,
    )
    for (const c of p.classes) {
      const z = c.safeZone
      const lim = c.limits
      out.push(
        `  ${c.class} (priority ${c.priority}): SLO ${sloText(c.slo)}; KV limit ${c.maxKvUsage}; max_tokens ${lim.maxTokens}${lim.degradedMaxTokens ? ` (degraded ${lim.degradedMaxTokens})` : ''}${lim.maxContextTokens ? `; context <= ${lim.maxContextTokens}` : ''}; typical ${c.typical.promptTokens} in / ${c.typical.outputTokens} out`,
      )
      out.push(
        z.concurrency === undefined
          ? '    safe zone: unknown (needs the KV size or max_num_seqs)'
          : `    safe zone per replica: ${z.concurrency} at once (bound by ${z.boundBy}), ~${fmtNum(z.ratePerReplica)} req/s (${fmtNum(z.requestMs)} ms per request)`,
      )
    }
  }
  return `${out.join('\n')}\n`
}
