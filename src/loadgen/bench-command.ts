/**
 * `slo-gateway bench`: the workload, then the run against the target (any
 * OpenAI-compatible server, with or without the gateway in front), then the report: printed,
 * and written to --out as bench.json (every request), summary.md and ttft-cdf.svg.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Dispatcher, Pool } from 'undici'
import { isRecord } from '../is-record.js'
import { type BenchOptions, splitTarget, usage } from './bench-args.js'
import { benchMarkdown, type RunInfo } from './bench-markdown.js'
import { ProgressLine } from './bench-progress.js'
import { type LoopMode, type RunResult, runBench } from './bench-run.js'
import { type BenchSummary, outcomeOf, summarizeRun } from './bench-summary.js'
import type { TableLookup } from './lengths.js'
import { sorted } from './report.js'
import { RequestBuilder } from './request-builder.js'
import { RequestPlan } from './request-plan.js'
import { ttftCdfSvg } from './ttft-cdf-svg.js'
import { type LoadedWorkload, loadWorkload, tableKey, WorkloadError } from './workload-load.js'
import type { SloSpec, Workload } from './workload-schema.js'

function tenantKeys(loaded: LoadedWorkload): (string | undefined)[] {
  const problems: string[] = []
  const keys = loaded.workload.tenants.map((t, i) => {
    if (t.api_key_env === undefined) return t.api_key
    const v = process.env[t.api_key_env]
    if (v === undefined || v === '')
      problems.push(`${loaded.file}: tenants[${i}].api_key_env: ${t.api_key_env} is not set`)
    return v
  })
  if (problems.length > 0) throw new WorkloadError(problems)
  return keys
}

/**
 * The model asked for (flag, then workload), else the first the target lists. Asks
 * GET /v1/models either way: a target that does not answer stops the run before it starts.
 */
async function pickModel(
  pool: Pool,
  prefix: string,
  key: string | undefined,
  target: string,
  chosen: string | undefined,
): Promise<string> {
  let res: Dispatcher.ResponseData
  try {
    res = await pool.request({
      method: 'GET',
      path: `${prefix}/models`,
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    })
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException }
    throw new BenchError(`cannot reach ${target}: ${e.cause?.code ?? e.code ?? e.message}`)
  }
  const body: unknown = await res.body.json().catch(() => undefined)
  if (chosen !== undefined) return chosen
  const data = isRecord(body) && Array.isArray(body.data) ? body.data : []
  const id = isRecord(data[0]) ? data[0].id : undefined
  if (res.statusCode !== 200 || typeof id !== 'string')
    throw new BenchError(
      `GET ${prefix}/models answered ${res.statusCode} without a model: set model: in the workload, or --model`,
    )
  return id
}

/** The run could not start (the target unreachable, no model). Exit 1. */
export class BenchError extends Error {
  override readonly name = 'BenchError'
}

/** Times to the microsecond in bench.json: enough, and a third of the size. */
const roundFloats = (_key: string, v: unknown) =>
  typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v

function stamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
}

interface RunShape {
  readonly mode: LoopMode
  readonly durationS?: number
  readonly requests?: number
  readonly seed: number
}

/** The flags over the workload's defaults; 60 s when neither sets a limit. */
function runShape(o: BenchOptions, w: Workload): RunShape {
  const mode: LoopMode | undefined =
    o.mode ??
    (w.rate !== undefined
      ? { rate: w.rate }
      : w.concurrency !== undefined
        ? { concurrency: w.concurrency }
        : undefined)
  if (mode === undefined)
    throw usage('set --rate or --concurrency (or rate: or concurrency: in the workload)')
  const fromFlags = o.durationS !== undefined || o.requests !== undefined
  const durationS = fromFlags ? o.durationS : w.duration_s
  const requests = fromFlags ? o.requests : w.requests
  return {
    mode,
    ...(durationS === undefined && requests === undefined ? { durationS: 60 } : {}),
    ...(durationS === undefined ? {} : { durationS }),
    ...(requests === undefined ? {} : { requests }),
    seed: o.seed ?? w.seed,
  }
}

function loadText(shape: RunShape, w: Workload): string {
  const m = shape.mode
  if ('concurrency' in m) return `closed loop, ${m.concurrency} at a time`
  const burst = w.arrival.process === 'gamma' ? ` (burstiness ${w.arrival.burstiness})` : ''
  return `open loop, ${w.arrival.process}${burst} arrivals at ${m.rate} req/s`
}

/** bench.json (every request), summary.md and ttft-cdf.svg in `out`; returns their paths. */
function writeOutputs(
  out: string,
  info: RunInfo,
  w: Workload,
  result: RunResult,
  summary: BenchSummary,
  markdown: string,
): string[] {
  mkdirSync(out, { recursive: true })
  const files = ['bench.json', 'summary.md', 'ttft-cdf.svg'].map((f) => join(out, f))
  const { sendLagMs: _lag, ...run } = info
  writeFileSync(
    files[0]!,
    `${JSON.stringify({ run, workload: w, summary, requests: result.records }, roundFloats)}\n`,
  )
  writeFileSync(files[1]!, markdown)
  const series = w.classes.map((c) => ({
    name: c.name,
    values: sorted(
      result.records.flatMap((r) =>
        r.class === c.name && outcomeOf(r) === 'ok' && r.ttftMs !== undefined ? [r.ttftMs] : [],
      ),
    ),
    ...(c.slo.ttft_ms === undefined ? {} : { sloMs: c.slo.ttft_ms }),
  }))
  writeFileSync(files[2]!, ttftCdfSvg(series))
  return files
}

/** Runs the bench; returns the exit code. */
export async function runBenchCommand(o: BenchOptions): Promise<number> {
  const loaded = loadWorkload(o.workload)
  const w = loaded.workload
  const keys = tenantKeys(loaded)
  const shape = runShape(o, w)
  const { mode, seed } = shape
  const { origin, prefix } = splitTarget(o.target)
  const defaultKey = w.tenants.length === 0 ? process.env.OPENAI_API_KEY || undefined : undefined
  const timeoutMs = w.request_timeout_s * 1000
  const pool = new Pool(origin, {
    keepAliveTimeout: 60_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  })
  try {
    const key = defaultKey ?? keys.find((k) => k !== undefined)
    const model = await pickModel(pool, prefix, key, o.target, o.model ?? w.model)
    const runTag = randomBytes(3).toString('hex')
    const table = (spec: Parameters<TableLookup>[0]) => loaded.tables.get(tableKey(loaded.file, spec)) ?? []
    const plan = new RequestPlan(w, table, 'rate' in mode ? mode.rate : undefined, seed)
    const builder = new RequestBuilder({
      workload: { ...w, seed },
      model,
      pathPrefix: prefix,
      tenantKeys: keys,
      ...(defaultKey === undefined ? {} : { defaultKey }),
      runTag,
    })
    const tty = process.stderr.isTTY === true
    const progress = new ProgressLine(shape.durationS, shape.requests)
    const result = await runBench({
      client: pool,
      plan,
      builder,
      classNames: w.classes.map((c) => c.name),
      tenantNames: w.tenants.map((t) => t.name),
      mode,
      ...(shape.durationS === undefined ? {} : { durationMs: shape.durationS * 1000 }),
      ...(shape.requests === undefined ? {} : { requests: shape.requests }),
      drainMs: w.drain_timeout_s * 1000,
      ...(o.quiet
        ? {}
        : {
            onProgress: (p) =>
              process.stderr.write(tty ? `\r\x1b[K${progress.line(p)}` : `${progress.line(p)}\n`),
          }),
    })
    if (!o.quiet && tty) process.stderr.write('\n')
    const slos = new Map<string, SloSpec>(w.classes.map((c) => [c.name, c.slo]))
    const summary = summarizeRun(result.records, slos, result.elapsedMs)
    const info: RunInfo = {
      target: o.target,
      model,
      workload: o.workload,
      seed,
      runTag,
      load: loadText(shape, w),
      limit: shape.durationS !== undefined ? `for ${shape.durationS} s` : `${shape.requests} requests`,
      startedAt: new Date(result.startedAt).toISOString(),
      sent: result.records.length,
      sendingS: result.sendingMs / 1000,
      loopDelay: result.loopDelay,
      sendLagMs: result.sendLagMs,
      cpuShare: result.elapsedMs > 0 ? result.cpuMs / result.elapsedMs : Number.NaN,
    }
    const markdown = benchMarkdown(info, summary, slos)
    const files = writeOutputs(
      o.out ?? join('bench-results', stamp(new Date(result.startedAt))),
      info,
      w,
      result,
      summary,
      markdown,
    )
    process.stdout.write(`${markdown}\nWrote ${files.join(', ')}\n`)
    return 0
  } finally {
    await pool.close()
  }
}
