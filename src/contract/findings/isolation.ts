/**
 * Interactive and batch traffic isolated, or not: a class refused on its TTFT (interactive)
 * and a class that waits (batch) must not share a priority, and batch must not fill the KV
 * cache above interactive's limit; with admission off there is one FCFS queue at the engine.
 */
import type { Check, Finding } from '../finding.js'

export const classIsolation: Check = ({ config }) => {
  const out: Finding[] = []
  const entries = Object.entries(config.classes)
  const latency = entries.filter(([, c]) => c.reject_on_ttft && c.slo.ttft_ms !== undefined)
  const throughput = entries.filter(([, c]) => !c.reject_on_ttft)
  if (latency.length === 0 || throughput.length === 0) return out
  if (!config.admission.enabled) {
    out.push({
      id: 'class-isolation',
      severity: 'error',
      path: 'admission.enabled',
      title: `admission is off: ${latency.map(([n]) => n).join(', ')} and ${throughput.map(([n]) => n).join(', ')} share the engine's FCFS queue`,
      numbers: { admission: false },
      why: 'Without admission the gateway is a plain proxy: a batch flood queues in front of interactive requests at the engine, and the interactive tail (TTFT p99) explodes.',
      fix: 'set admission.enabled: true',
    })
    return out
  }
  for (const [ln, l] of latency) {
    for (const [tn, t] of throughput) {
      if (t.priority <= l.priority) {
        out.push({
          id: 'class-isolation',
          severity: 'error',
          class: tn,
          path: `classes.${tn}.priority`,
          title: `class ${tn} (waits) has priority ${t.priority}, not below ${ln} (priority ${l.priority})`,
          numbers: { [`${tn}Priority`]: t.priority, [`${ln}Priority`]: l.priority },
          why: `Equal priority means one queue order for both: a burst of ${tn} requests is dispatched ahead of ${ln} requests that arrive after it, and ${ln} misses its TTFT objective while ${tn}, which could have waited, is served.`,
          fix: `set classes.${tn}.priority above ${l.priority} (e.g. ${l.priority + 1}); give ${tn} a min_share (e.g. 0.05) so it still progresses`,
        })
      }
      if (t.max_kv_usage > l.max_kv_usage) {
        out.push({
          id: 'class-isolation',
          severity: 'warning',
          class: tn,
          path: `classes.${tn}.max_kv_usage`,
          title: `class ${tn} may fill the KV cache to ${t.max_kv_usage}, above ${ln}'s limit ${l.max_kv_usage}`,
          numbers: { [`${tn}MaxKvUsage`]: t.max_kv_usage, [`${ln}MaxKvUsage`]: l.max_kv_usage },
          why: `Once ${tn}'s long sequences hold the cache above ${l.max_kv_usage}, no ${ln} request may be dispatched (kv_exhausted) until they finish: minutes, for batch.`,
          fix: `set classes.${tn}.max_kv_usage below ${l.max_kv_usage} (batch 0.7 under interactive 0.8 by default)`,
        })
      }
    }
  }
  return out
}
