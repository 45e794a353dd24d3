/**
 * The Grafana dashboard parses, and every expression in it names only metrics the project
 * defines: the telemetry registry's, the backends module's, or a recording rule.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { exportedSeriesNames } from '../../../src/telemetry/index.js'
import { metricNames } from './promql-names.js'

const root = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url))

interface RuleFile {
  groups: { rules: { record?: string; alert?: string; expr: string }[] }[]
}

function recordingRules(): Set<string> {
  const file = parse(readFileSync(root('deploy/prometheus/recording-rules.yml'), 'utf8')) as RuleFile
  const names = new Set<string>()
  for (const g of file.groups) for (const r of g.rules) if (r.record !== undefined) names.add(r.record)
  return names
}

/** Every `expr` string and templating query anywhere in the dashboard. */
function expressions(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) expressions(n, out)
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if ((k === 'expr' || k === 'definition') && typeof v === 'string') out.push(v)
      else expressions(v, out)
    }
  }
  return out
}

describe('Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(root('deploy/grafana/slo-gateway.json'), 'utf8')) as {
    panels: { type: string; title: string; targets?: { expr: string }[] }[]
  }
  const defined = new Set([...exportedSeriesNames(), ...recordingRules()])

  it('parses, and every panel has at least one query', () => {
    const panels = dashboard.panels.filter((p) => p.type !== 'row')
    expect(panels.length).toBeGreaterThan(20)
    for (const p of panels) expect(p.targets?.length, p.title).toBeGreaterThan(0)
  })

  it('refers only to metrics and recording rules the project defines', () => {
    const exprs = expressions(dashboard)
    expect(exprs.length).toBeGreaterThan(40)
    const unknown: string[] = []
    let seen = 0
    for (const e of exprs) {
      const names = e.startsWith('label_values(') ? [e.slice(13).split(',')[0]!.trim()] : metricNames(e)
      for (const n of names) {
        seen++
        if (!defined.has(n)) unknown.push(`${n} in: ${e}`)
      }
    }
    expect(unknown).toEqual([])
    expect(seen).toBeGreaterThan(40)
  })

  it('the recording rules themselves only use defined metrics (or earlier rules)', () => {
    const file = parse(readFileSync(root('deploy/prometheus/recording-rules.yml'), 'utf8')) as RuleFile
    const alerts = parse(readFileSync(root('deploy/prometheus/alerts.yml'), 'utf8')) as RuleFile
    const unknown: string[] = []
    for (const g of [...file.groups, ...alerts.groups]) {
      for (const r of g.rules)
        for (const n of metricNames(r.expr))
          if (!defined.has(n)) unknown.push(`${n} in ${r.record ?? r.alert}`)
    }
    expect(unknown).toEqual([])
  })

  it('the extractor finds names and skips functions, labels, strings and keywords', () => {
    expect(
      metricNames(
        'sum by (class, le) (rate(slo_gateway_ttft_seconds_bucket{class=~"$class"}[$__rate_interval])) / on (class) group_left x:y:z > bool 1e3',
      ),
    ).toEqual(['slo_gateway_ttft_seconds_bucket', 'x:y:z'])
    expect(metricNames('vector(0.99)')).toEqual([])
  })
})
