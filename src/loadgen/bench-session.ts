/**
 * A target and a workload, ready to run at any load: the connection pool, the tenants' keys,
 * the model (asked of GET /v1/models once), and `run(level)`, which sends the seeded workload
 * at one load and summarizes it. A single `slo-gateway bench` runs it once; a sweep or the
 * search for the highest rate within SLO runs it once per level. Every run gets its own run
 * tag, so no level finds the prompts of another in a prefix cache.
 */
import { randomBytes } from 'node:crypto'
import { type Dispatcher, Pool } from 'undici'
import { isRecord } from '../is-record.js'
import { splitTarget } from './bench-args.js'
import type { RunInfo } from './bench-markdown.js'
import { type LoopMode, type Progress, type RunResult, runBench } from './bench-run.js'
import { type BenchSummary, summarizeRun } from './bench-summary.js'
import type { TableLookup } from './lengths.js'
import { RequestBuilder } from './request-builder.js'
import { RequestPlan } from './request-plan.js'
import { type LoadedWorkload, loadWorkload, tableKey, WorkloadError } from './workload-load.js'
import type { SloSpec, Workload } from './workload-schema.js'

/** The run could not start (the target unreachable, no model). Exit 1. */
export class BenchError extends Error {
  override readonly name = 'BenchError'
}

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

export interface SessionOptions {
  /** The server's base URL (/v1 is added unless given). */
  readonly target: string
  /** A workload file, or one already loaded. */
  readonly workload: string | LoadedWorkload
  /** Default: the workload's, else the first of GET /v1/models. */
  readonly model?: string
  /** Default: the workload's. */
  readonly seed?: number
}

/** One load to run: open loop at a rate or closed loop at a concurrency, for a time or a count. */
export interface Level {
  readonly mode: LoopMode
  readonly durationS?: number
  readonly requests?: number
  readonly onProgress?: (p: Progress) => void
}

export interface LevelRun {
  readonly result: RunResult
  readonly summary: BenchSummary
  readonly info: RunInfo
}

export function loadText(mode: LoopMode, w: Workload): string {
  if ('concurrency' in mode) return `closed loop, ${mode.concurrency} at a time`
  const burst = w.arrival.process === 'gamma' ? ` (burstiness ${w.arrival.burstiness})` : ''
  return `open loop, ${w.arrival.process}${burst} arrivals at ${+mode.rate.toPrecision(6)} req/s`
}

export class BenchSession {
  private constructor(
    readonly target: string,
    readonly loaded: LoadedWorkload,
    readonly model: string,
    readonly seed: number,
    private readonly pool: Pool,
    private readonly prefix: string,
    private readonly keys: (string | undefined)[],
    private readonly defaultKey: string | undefined,
  ) {}

  get workload(): Workload {
    return this.loaded.workload
  }

  /** The objectives by class name, in the workload's order. */
  get slos(): ReadonlyMap<string, SloSpec> {
    return new Map(this.workload.classes.map((c) => [c.name, c.slo]))
  }

  /** Loads the workload (unless given loaded), connects, and settles the model. */
  static async open(o: SessionOptions): Promise<BenchSession> {
    const loaded = typeof o.workload === 'string' ? loadWorkload(o.workload) : o.workload
    const w = loaded.workload
    const keys = tenantKeys(loaded)
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
      return new BenchSession(o.target, loaded, model, o.seed ?? w.seed, pool, prefix, keys, defaultKey)
    } catch (err) {
      await pool.close()
      throw err
    }
  }

  /** Sends the workload at one load (a fresh run tag, the session's seed) and summarizes it. */
  async run(level: Level): Promise<LevelRun> {
    const w = this.workload
    const { mode } = level
    const runTag = randomBytes(3).toString('hex')
    const table = (spec: Parameters<TableLookup>[0]) =>
      this.loaded.tables.get(tableKey(this.loaded.file, spec)) ?? []
    const plan = new RequestPlan(w, table, 'rate' in mode ? mode.rate : undefined, this.seed)
    const builder = new RequestBuilder({
      workload: { ...w, seed: this.seed },
      model: this.model,
      pathPrefix: this.prefix,
      tenantKeys: this.keys,
      ...(this.defaultKey === undefined ? {} : { defaultKey: this.defaultKey }),
      runTag,
    })
    const result = await runBench({
      client: this.pool,
      plan,
      builder,
      classNames: w.classes.map((c) => c.name),
      tenantNames: w.tenants.map((t) => t.name),
      mode,
      ...(level.durationS === undefined ? {} : { durationMs: level.durationS * 1000 }),
      ...(level.requests === undefined ? {} : { requests: level.requests }),
      drainMs: w.drain_timeout_s * 1000,
      ...(level.onProgress === undefined ? {} : { onProgress: level.onProgress }),
    })
    const summary = summarizeRun(result.records, this.slos, result.elapsedMs)
    const info: RunInfo = {
      target: this.target,
      model: this.model,
      workload: this.loaded.file,
      seed: this.seed,
      runTag,
      load: loadText(mode, w),
      limit: level.durationS !== undefined ? `for ${level.durationS} s` : `${level.requests} requests`,
      startedAt: new Date(result.startedAt).toISOString(),
      sent: result.records.length,
      sendingS: result.sendingMs / 1000,
      loopDelay: result.loopDelay,
      sendLagMs: result.sendLagMs,
      cpuShare: result.elapsedMs > 0 ? result.cpuMs / result.elapsedMs : Number.NaN,
    }
    return { result, summary, info }
  }

  async close(): Promise<void> {
    await this.pool.close()
  }
}
