/** The flags of `slo-gateway bench`, and its usage. */
import { parseFlags, UsageError } from '../cli-flags.js'
import type { LoopMode } from './bench-run.js'

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
  }
}

/** The origin and the path prefix (`/v1`, or the target's own path when it ends in /v1). */
export function splitTarget(target: string): { origin: string; prefix: string } {
  const url = new URL(target)
  const path = url.pathname.replace(/\/+$/, '')
  return { origin: url.origin, prefix: path.endsWith('/v1') ? path : `${path}/v1` }
}
