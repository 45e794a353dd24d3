/**
 * Findings about the metrics admission relies on: a pool that fails open on stale metrics,
 * and a scrape interval longer than a TTFT objective.
 */
import type { Check, Finding } from '../finding.js'

export const failOpenStale: Check = ({ config, pools }) => {
  if (!config.admission.enabled) return []
  const out: Finding[] = []
  for (const p of pools) {
    if (!p.pool.fail_open) continue
    out.push({
      id: 'fail-open-stale',
      severity: 'warning',
      pool: p.name,
      path: `${p.path}.fail_open`,
      title: `pool ${p.name} fails open: a server whose metrics are stale still takes requests`,
      numbers: { failOpen: true, staleAfterMs: p.pool.stale_after_ms },
      why: "Admission's headroom gates and TTFT predictions read each server's metrics. Stale metrics freeze the last load seen: a server that is saturated, or wedged, keeps getting requests that will miss their objectives, and the gateway keeps predicting they will not.",
      fix: `remove ${p.path}.fail_open (stale counts as saturated, the default) unless the servers' metrics are known to be unreliable`,
    })
  }
  return out
}

export const scrapeSlowerThanTtft: Check = ({ config, pools }) => {
  const out: Finding[] = []
  const ttfts = Object.entries(config.classes).filter(([, c]) => c.slo.ttft_ms !== undefined)
  if (ttfts.length === 0) return out
  const [name, tightest] = ttfts.reduce((a, b) => (b[1].slo.ttft_ms! < a[1].slo.ttft_ms! ? b : a))
  const ttft = tightest.slo.ttft_ms!
  for (const p of pools) {
    const interval = p.pool.scrape_interval_ms
    if (interval <= ttft) continue
    out.push({
      id: 'scrape-slower-than-ttft',
      severity: 'warning',
      pool: p.name,
      class: name,
      path: `${p.path}.scrape_interval_ms`,
      title: `pool ${p.name} is scraped every ${interval} ms, longer than class ${name}'s TTFT objective (${ttft} ms)`,
      numbers: { scrapeIntervalMs: interval, ttftMs: ttft },
      why: 'Admission decides on load up to one scrape interval old: a whole TTFT objective of arrivals can land on a server that filled up since, before the gateway sees it.',
      fix: `set ${p.path}.scrape_interval_ms to ${Math.max(50, Math.floor(ttft / 5))} or less (100 by default; 50 for a sidecar)`,
    })
  }
  return out
}
