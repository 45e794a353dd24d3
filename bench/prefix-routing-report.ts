/**
 * The prefix-routing bench's report (bench/prefix-routing.ts runs it): every run's figures,
 * then prefix-affinity against least-wait per load level, beside the issue's targets.
 */
import { cpus } from 'node:os'
import { fmt, Report } from '../src/loadgen/report.js'

export type Scorer = 'least-wait' | 'prefix-affinity'

export interface RunSpec {
  /** A file of config/workloads; `chat` is the no-shared-prefix check. */
  readonly workload: string
  readonly scorer: Scorer
  readonly level: number
  readonly replicas: number
  readonly rate: number
}

export interface RunResult {
  readonly spec: RunSpec
  readonly sent: number
  readonly hitRate: number
  readonly ttftP50: number
  readonly ttftP99: number
  readonly goodputRps: number
  readonly attainment: number
  readonly refused: number
  /** Turns sent again after a refusal (each attempt is also one of `sent`). */
  readonly retried: number
  readonly predictedHit: number | undefined
  readonly decisions: Record<string, number>
  /** Requests per replica (x-gateway-backend), as shares. */
  readonly spread: readonly number[]
}

export const pct = (v: number | undefined) =>
  v === undefined || Number.isNaN(v) ? '–' : `${fmt(100 * v, 1)}%`

export function change(a: number, b: number): string {
  return a > 0 && Number.isFinite(a) && Number.isFinite(b)
    ? `${b >= a ? '+' : ''}${fmt((100 * (b - a)) / a, 0)}%`
    : '–'
}

export function resultRows(results: readonly RunResult[]): (string | number)[][] {
  return results.map((r) => {
    const d = r.decisions
    const total = Object.values(d).reduce((a, b) => a + b, 0)
    const share = (k: string[]) => (total > 0 ? pct(k.reduce((s, x) => s + (d[x] ?? 0), 0) / total) : '–')
    return [
      r.spec.workload,
      `${r.spec.replicas}`,
      r.spec.scorer,
      `${r.spec.level}× (${fmt(r.spec.rate * r.spec.level, 1)}/s)`,
      r.sent,
      pct(r.hitRate),
      pct(r.predictedHit),
      fmt(r.ttftP50, 0),
      fmt(r.ttftP99, 0),
      fmt(r.goodputRps, 2),
      pct(r.attainment),
      r.refused,
      r.retried,
      share(['affinity', 'session']),
      share(['saturated']),
      r.spread.map((s) => fmt(100 * s, 0)).join('/'),
    ]
  })
}

export interface ReportFacts {
  readonly out: string
  readonly quick: boolean
  readonly loadBefore: readonly number[]
  readonly wallS: number
  readonly profile: string
  readonly routing: string | undefined
  readonly scale: number
  readonly durationS: number
  /** Model seconds of load before the measured window, not judged. */
  readonly warmupS: number
  readonly rate: number
  /** The least-wait runs that measured 1× (empty when --rate gave it). */
  readonly calibration: readonly RunResult[]
  /** Model seconds of load per run of that search. */
  readonly calibrationS: number
  readonly workload: string
  readonly description: string
  /** Times a conversation's refused turn is sent again after its Retry-After. */
  readonly retries: number
  readonly replicas: number
  readonly levels: readonly number[]
}

/** Prints the report (as it is built) and writes it to `f.out`. */
export function writeReport(results: readonly RunResult[], f: ReportFacts): void {
  const report = new Report()
  report.heading('slo-gateway: prefix-aware routing against least-wait', 1)
  report.paragraph(
    [
      `Run ${new Date().toISOString()}${f.quick ? ' with `--quick` (a smoke run: too short to judge by)' : ''}; ` +
        `${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}, load average before ${f.loadBefore.map((v) => v.toFixed(2)).join(' ')}; ` +
        `${fmt(f.wallS, 0)} s wall.`,
      `Simulator profile \`${f.profile}\` (prefix caching on), time scale ${f.scale}: all times and rates below are model time.`,
      `prefix-affinity with the shipped weights${f.routing === undefined ? '' : ` and ${f.routing}`}.`,
      `Each run: fresh simulator and gateway processes (cold caches), open-loop Poisson load from`,
      "`slo-gateway bench`'s machinery (src/loadgen): a warm-up of " +
        `${f.warmupS} s (chat: ${Math.min(f.warmupS, 10)} s), not judged, in which conversations grow to their steady depth and the caches fill,`,
      `then ${f.durationS} s measured (the requests due in it are judged; the hit rate and the routing decisions are the counters' change over it),`,
      'then the requests still running are let finish.',
      `Workloads: \`config/workloads/${f.workload}.yaml\` (${f.description}; each request sends its conversation's whole history;`,
      f.retries > 0
        ? `a refused turn is sent again after its Retry-After, up to ${f.retries} times, as the \`openai\` client does, then its conversation ends)`
        : 'a refused turn ends its conversation)',
      'and `config/workloads/chat.yaml` (unique prompts: no shared prefix), at half the rate.',
      `1× = ${fmt(f.rate, 1)} req/s on ${f.replicas} replicas${f.calibration.length > 0 ? ": least-wait's max goodput on the workload (the highest rate keeping 90% of offered requests within both objectives), measured first (below)" : ' (given by --rate, not measured)'}; the single-replica row runs the same workload at 1/${f.replicas} of it.`,
      "Hit rate: the engines' own counters (prefix-cache hits / queries, tokens), over the replicas. Goodput: requests",
      'that met TTFT 500 ms and TPOT 50 ms, per second of load. Spread: the share of requests each replica served.',
    ].join('\n'),
  )
  report.table(
    [
      'workload',
      'replicas',
      'routing',
      'load',
      'requests',
      'hit rate',
      'predicted hit',
      'TTFT p50 ms',
      'TTFT p99 ms',
      'goodput/s',
      'attainment',
      'refused',
      'retried',
      'by affinity',
      'saturated',
      'spread %',
    ],
    resultRows(results),
  )
  const single = results.find((r) => r.spec.replicas === 1)
  const rows: (string | number)[][] = []
  for (const level of f.levels) {
    const lw = results.find(
      (r) =>
        r.spec.workload !== 'chat' &&
        r.spec.replicas > 1 &&
        r.spec.level === level &&
        r.spec.scorer === 'least-wait',
    )
    const pa = results.find(
      (r) =>
        r.spec.workload !== 'chat' &&
        r.spec.replicas > 1 &&
        r.spec.level === level &&
        r.spec.scorer === 'prefix-affinity',
    )
    if (lw === undefined || pa === undefined) continue
    rows.push([
      `${level}×`,
      single === undefined ? '–' : `${pct(pa.hitRate / single.hitRate)} (target ≥ 80%)`,
      `${change(lw.ttftP50, pa.ttftP50)} (target ≤ −30%)`,
      change(lw.ttftP99, pa.ttftP99),
      `${change(lw.goodputRps, pa.goodputRps)}${level >= 2 ? ' (target ≥ +20%)' : ''}`,
    ])
  }
  const chat = results.filter((r) => r.spec.workload === 'chat')
  if (chat.length === 2)
    rows.push([
      `chat, ${chat[0]!.spec.level}× of ${fmt(chat[0]!.spec.rate, 1)}/s`,
      `${pct(chat[1]!.hitRate)} vs ${pct(chat[0]!.hitRate)}`,
      change(chat[0]!.ttftP50, chat[1]!.ttftP50),
      change(chat[0]!.ttftP99, chat[1]!.ttftP99),
      `${change(chat[0]!.goodputRps, chat[1]!.goodputRps)} (target: within noise)`,
    ])
  report.heading('prefix-affinity against least-wait')
  report.table(['load', "hit rate ÷ one replica's", 'TTFT p50', 'TTFT p99', 'goodput'], rows)
  if (f.calibration.length > 0) {
    report.heading('1×: the search for least-wait’s max goodput')
    report.paragraph(
      `Runs of ${f.calibrationS} model s each after the same warm-up, least-wait on ${f.replicas} replicas, from --rate-guess up or down by 1.5, then bisected to 10%.`,
    )
    report.table(
      ['rate req/s', 'attainment', 'goodput/s', 'TTFT p50 ms', 'TTFT p99 ms', 'hit rate'],
      f.calibration.map((r) => [
        fmt(r.spec.rate, 1),
        pct(r.attainment),
        fmt(r.goodputRps, 2),
        fmt(r.ttftP50, 0),
        fmt(r.ttftP99, 0),
        pct(r.hitRate),
      ]),
    )
  }
  report.write(f.out)
}
