/** The flags of `slo-gateway bench`, and its usage. */
import { parseFlags, UsageError } from '../cli-flags.js'
import type { LoopMode } from './bench-run.js'
import type { Workload } from './workload-schema.js'

export const BENCH_USAGE = `Usage: slo-gateway bench --target URL --workload FILE [options]

Sends a workload to an OpenAI-compatible server (the gateway, or a model server directly),
streams every answer and times it as \`vllm bench serve\` does (TTFT, TPOT, ITL, E2E), and
reports per class: latency percentiles, SLO attainment, goodput, refusals by reason,
degradations, the same by prompt length, and the gateway's predicted TTFT against the measured.

Options:
  --target URL         the server's base URL, e.g. http://localhost:8080 (/v1 is added unless given)
  --workload FILE      the workload YAML (examples in config/workloads/: chat, chat-plus-batch,
                       multi-tenant, long-context, multi-turn)
  --rate R             open loop: R requests/s on average, arrivals as the workload's
                       process (poisson, or gamma with its burstiness)
  --concurrency C      closed loop instead: C requests at a time, each sent when one ends
  --duration S         send for S seconds...
  --requests N         ...or N requests (default: the workload's, else 60 s)
  --seed N             the seed of every draw (default: the workload's); same seed, same requests
  --model NAME         the model (default: the workload's, else the first of GET /v1/models)
  --out DIR            where the files go (default bench-results/<date-time>)

Load curves (open loop; --duration or --requests is then per level):
  --sweep M1,M2,...    one run per multiple of the capacity, e.g. 0.5,1,2,4
  --capacity R         the capacity (req/s) the multiples are of; without it the bench
                       measures the saturation throughput first: a closed-loop ramp,
                       concurrency 1, 2, 4, ... until a step gains < 10% or refuses > 10%
  --find-max-goodput   the highest rate whose SLO attainment of offered requests stays
                       >= --attainment (DistServe's goodput per server): from --rate, else
                       half the capacity, double or halve to bracket it, then bisect
  --attainment A       the share that must be good (default 0.9)
  --slo-class NAME     judge one class's attainment (default: every request)
  --tolerance T        stop bisecting when the bracket is within T of its top (default 0.05)
  --max-trials N       at most N runs in the search (default 10)
  --search-step F      bracket by times/divided by F instead of 2 (F > 1; a --rate known
                       to be close brackets in fewer runs)
  --probe-duration S   each step of the capacity ramp (default 10)
  --quiet              no progress line
  -h, --help           this help

A progress line goes to stderr about once a second; the summary to stdout. Tenants' keys come
from the workload (api_key or api_key_env); with no tenants, OPENAI_API_KEY is sent if set.
`

export interface BenchOptions {
  readonly target: string
  readonly workload: string
  readonly mode?: LoopMode
  readonly durationS?: number
  readonly requests?: number
  readonly seed?: number
  readonly model?: string
  readonly out?: string
  readonly quiet?: boolean
  /** Multiples of the capacity, one run each. */
  readonly sweep?: readonly number[]
  readonly capacity?: number
  readonly findMaxGoodput?: boolean
  readonly attainment?: number
  readonly sloClass?: string
  readonly tolerance?: number
  readonly maxTrials?: number
  readonly step?: number
  readonly probeDurationS?: number
}

/** Each run's limit: the flags over the workload's; 60 s when neither sets one. */
export function runLimits(o: BenchOptions, w: Workload): { durationS?: number; requests?: number } {
  const fromFlags = o.durationS !== undefined || o.requests !== undefined
  const durationS = fromFlags ? o.durationS : w.duration_s
  const requests = fromFlags ? o.requests : w.requests
  return {
    ...(durationS === undefined && requests === undefined ? { durationS: 60 } : {}),
    ...(durationS === undefined ? {} : { durationS }),
    ...(requests === undefined ? {} : { requests }),
  }
}

/** `0.5,1,2,4`: positive numbers, ascending, no repeats. */
function multiples(v: string | undefined): number[] | undefined {
  if (v === undefined) return undefined
  const parts = v.split(',').map((x) => x.trim())
  const ns = parts.map(Number)
  const bad = parts.find((x, i) => x === '' || !(Number.isFinite(ns[i]) && ns[i]! > 0))
  if (bad !== undefined)
    throw usage(`--sweep: expected multiples > 0 separated by commas (e.g. 0.5,1,2,4), got '${v}'`)
  if (new Set(ns).size !== ns.length) throw usage(`--sweep: a multiple appears twice in '${v}'`)
  return [...ns].sort((a, b) => a - b)
}

export function usage(message: string): UsageError {
  return new UsageError(message, BENCH_USAGE, 'bench')
}

type NumberKind = 'positive' | 'count' | 'seed'
const KIND_TEXT: Record<NumberKind, string> = {
  positive: 'a number > 0',
  count: 'an integer >= 1',
  seed: 'an integer >= 0',
}

function num(name: string, v: string | undefined, kind: NumberKind): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  const ok =
    v.trim() !== '' &&
    Number.isFinite(n) &&
    (kind === 'positive' ? n > 0 : Number.isInteger(n) && n >= (kind === 'count' ? 1 : 0))
  if (!ok) throw usage(`--${name}: expected ${KIND_TEXT[kind]}, got '${v}'`)
  return n
}

export function parseBenchArgs(argv: string[]): BenchOptions | 'help' {
  const { values } = parseFlags('bench', BENCH_USAGE, argv, {
    target: { type: 'string' },
    workload: { type: 'string' },
    rate: { type: 'string' },
    concurrency: { type: 'string' },
    duration: { type: 'string' },
    requests: { type: 'string' },
    seed: { type: 'string' },
    model: { type: 'string' },
    out: { type: 'string' },
    quiet: { type: 'boolean' },
    sweep: { type: 'string' },
    capacity: { type: 'string' },
    'find-max-goodput': { type: 'boolean' },
    attainment: { type: 'string' },
    'slo-class': { type: 'string' },
    tolerance: { type: 'string' },
    'max-trials': { type: 'string' },
    'search-step': { type: 'string' },
    'probe-duration': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  })
  if (values.help) return 'help'
  if (values.target === undefined) throw usage('--target URL is required')
  if (values.workload === undefined) throw usage('--workload FILE is required')
  if (!/^https?:\/\/[^/]/.test(values.target))
    throw usage(`--target: expected an http(s) URL, got '${values.target}'`)
  if (values.rate !== undefined && values.concurrency !== undefined)
    throw usage('--rate and --concurrency exclude each other: an open loop or a closed one')
  if (values.duration !== undefined && values.requests !== undefined)
    throw usage('--duration and --requests exclude each other')
  const rate = num('rate', values.rate, 'positive')
  const concurrency = num('concurrency', values.concurrency, 'count')
  const durationS = num('duration', values.duration, 'positive')
  const requests = num('requests', values.requests, 'count')
  const seed = num('seed', values.seed, 'seed')
  const curve = curveOptions(values)
  if (curve.sweep !== undefined && concurrency !== undefined)
    throw usage('--sweep runs open loops: it takes no --concurrency')
  if (curve.sweep !== undefined && rate !== undefined)
    throw usage('--sweep: its rates are multiples of --capacity; it takes no --rate')
  if (curve.findMaxGoodput === true && concurrency !== undefined)
    throw usage('--find-max-goodput runs open loops: it takes no --concurrency (--rate is its first rate)')
  const mode = rate !== undefined ? { rate } : concurrency !== undefined ? { concurrency } : undefined
  return {
    target: values.target,
    workload: values.workload,
    ...(mode === undefined ? {} : { mode }),
    ...(durationS === undefined ? {} : { durationS }),
    ...(requests === undefined ? {} : { requests }),
    ...(seed === undefined ? {} : { seed }),
    ...(values.model === undefined ? {} : { model: values.model }),
    ...(values.out === undefined ? {} : { out: values.out }),
    ...(values.quiet ? { quiet: true } : {}),
    ...curve,
  }
}

type Values = ReturnType<typeof parseFlags>['values']

function curveOptions(values: Values): Partial<BenchOptions> {
  const str = (k: string) => {
    const v = values[k]
    return typeof v === 'string' ? v : undefined
  }
  const sweep = multiples(str('sweep'))
  const find = values['find-max-goodput'] === true
  if (sweep !== undefined && find) throw usage('--sweep and --find-max-goodput exclude each other')
  const attainment = num('attainment', str('attainment'), 'positive')
  if (attainment !== undefined && attainment > 1)
    throw usage(`--attainment: expected a share in (0, 1], got '${str('attainment')}'`)
  const tolerance = num('tolerance', str('tolerance'), 'positive')
  if (tolerance !== undefined && tolerance >= 1)
    throw usage(`--tolerance: expected a share in (0, 1), got '${str('tolerance')}'`)
  const step = num('search-step', str('search-step'), 'positive')
  if (step !== undefined && !(step > 1))
    throw usage(`--search-step: expected a factor > 1, got '${str('search-step')}'`)
  const o: Partial<BenchOptions> = {
    ...(sweep === undefined ? {} : { sweep }),
    ...(find ? { findMaxGoodput: true } : {}),
    ...opt('capacity', num('capacity', str('capacity'), 'positive')),
    ...opt('attainment', attainment),
    ...opt('sloClass', str('slo-class')),
    ...opt('tolerance', tolerance),
    ...opt('maxTrials', num('max-trials', str('max-trials'), 'count')),
    ...opt('step', step),
    ...opt('probeDurationS', num('probe-duration', str('probe-duration'), 'positive')),
  }
  const curveOnly = [
    'attainment',
    'tolerance',
    'maxTrials',
    'step',
    'capacity',
    'probeDurationS',
    'sloClass',
  ] as const
  const flag = {
    attainment: 'attainment',
    tolerance: 'tolerance',
    maxTrials: 'max-trials',
    step: 'search-step',
    capacity: 'capacity',
    probeDurationS: 'probe-duration',
    sloClass: 'slo-class',
  }
  if (sweep === undefined && !find)
    for (const k of curveOnly)
      if (o[k] !== undefined) throw usage(`--${flag[k]} goes with --sweep or --find-max-goodput`)
  if (sweep !== undefined)
    for (const k of ['attainment', 'tolerance', 'maxTrials', 'step'] as const)
      if (o[k] !== undefined) throw usage(`--${flag[k]} goes with --find-max-goodput, not --sweep`)
  return o
}

function opt<K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [k]: v }) as { [P in K]?: V }
}

/** The origin and the path prefix (`/v1`, or the target's own path when it ends in /v1). */
export function splitTarget(target: string): { origin: string; prefix: string } {
  const url = new URL(target)
  const path = url.pathname.replace(/\/+$/, '')
  return { origin: url.origin, prefix: path.endsWith('/v1') ? path : `${path}/v1` }
}
