/** What every kind of bench run writes alike: where (--out), JSON with times rounded, TTFT CDFs. */
import { join } from 'node:path'
import type { BenchOptions } from './bench-args.js'
import type { RunResult } from './bench-run.js'
import { outcomeOf } from './bench-summary.js'
import { sorted } from './report.js'
import type { CdfSeries } from './ttft-cdf-svg.js'
import type { Workload } from './workload-schema.js'

/** Times to the microsecond in bench.json: enough, and a third of the size. */
const roundFloats = (_key: string, v: unknown) =>
  typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v

/** JSON of `v`, times to the microsecond, one line. */
export const roundedJson = (v: unknown) => `${JSON.stringify(v, roundFloats)}\n`

function stamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
}

/** The output directory: --out, else bench-results/<date-time of the start>. */
export function outDir(o: BenchOptions, startedAt: number): string {
  return o.out ?? join('bench-results', stamp(new Date(startedAt)))
}

/** The TTFT of the successful requests of `cls`, ascending. */
export function ttftsOf(cls: string, result: RunResult): Float64Array {
  return sorted(
    result.records.flatMap((r) =>
      r.class === cls && outcomeOf(r) === 'ok' && r.ttftMs !== undefined ? [r.ttftMs] : [],
    ),
  )
}

/** The TTFT CDF of each class's successful requests, with its objective. */
export function cdfSeries(w: Workload, result: RunResult): CdfSeries[] {
  return w.classes.map((c) => ({
    name: c.name,
    values: ttftsOf(c.name, result),
    ...(c.slo.ttft_ms === undefined ? {} : { sloMs: c.slo.ttft_ms }),
  }))
}
