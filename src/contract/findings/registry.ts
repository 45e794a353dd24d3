/**
 * Every doctor check, in the order findings are reported. Adding one: a function in a file
 * of this folder, a line here, and its entry in docs/contract.md (a test keeps them in step).
 */
import type { Check } from '../finding.js'
import { classIsolation } from './isolation.js'
import { contextHog, kvHeadroom, kvOvercommit } from './kv.js'
import { tpotUnattainable, ttftUnattainable } from './latency.js'
import { failOpenStale, scrapeSlowerThanTtft } from './metrics.js'

export const CHECKS: readonly { readonly id: string; readonly check: Check }[] = [
  { id: 'kv-headroom', check: kvHeadroom },
  { id: 'kv-overcommit', check: kvOvercommit },
  { id: 'class-isolation', check: classIsolation },
  { id: 'context-hog', check: contextHog },
  { id: 'tpot-unattainable', check: tpotUnattainable },
  { id: 'ttft-unattainable', check: ttftUnattainable },
  { id: 'fail-open-stale', check: failOpenStale },
  { id: 'scrape-slower-than-ttft', check: scrapeSlowerThanTtft },
]

/** The ids of findings doctor itself reports (not from a check): what it could not read. */
export const INFO_IDS = ['facts-unavailable', 'no-step-model'] as const
