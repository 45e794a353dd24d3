/**
 * `npm run bench:prefix [-- --quick] [-- --rate R] [-- --scale S] [-- --levels 1,2] [-- --out FILE]`
 *
 * Prefix-aware routing against least-wait picking, through the gateway, on a pool of
 * simulated replicas (prefix caching on, as vLLM V1's default), time-scaled. The workload
 * is `slo-gateway bench`'s own (src/loadgen: the plan, the request builder that grows
 * conversations, the streaming client, the summary), from config/workloads/multi-turn.yaml
 * (a shared system prompt and growing conversations; --workload multi-turn-long for long
 * agent-like ones), plus config/workloads/chat.yaml (no shared prefix at all: routing must
 * change nothing there). 1× is measured first (least-wait's max goodput) unless --rate says it. Each run starts fresh
 * processes (cold caches): the simulator's replicas in one, the gateway in another.
 *
 * Per run, at each load level (× the rate given as 1×): the engines' prefix-cache hit rate
 * (their own counters, summed over the replicas), TTFT p50/p99 and goodput at the client,
 * the routing decisions and the gateway's predicted hit ratio. A single replica at a
 * quarter of the rate gives the hit rate one replica achieves on the same workload (the
 * target's yardstick). Times and rates are in model time (wall ÷ scale). Writes
 * reports/prefix-routing.md. Benchmarks report; they never assert.
 */
import { existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Pool, request } from 'undici'
import { runBench } from '../src/loadgen/bench-run.js'
import { summarizeRun } from '../src/loadgen/bench-summary.js'
import { searchMaxRate } from '../src/loadgen/goodput-search.js'
import { fmt } from '../src/loadgen/report.js'
import { RequestBuilder } from '../src/loadgen/request-builder.js'
import { RequestPlan } from '../src/loadgen/request-plan.js'
import { loadWorkload, tableKey } from '../src/loadgen/workload-load.js'
import type { Workload } from '../src/loadgen/workload-schema.js'
import { spawnPrefixChild } from './prefix-routing-child.js'
import { pct, type RunResult, type RunSpec, writeReport } from './prefix-routing-report.js'
import type { Child } from './processes.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

const USAGE = `Usage: npm run bench:prefix -- [options]

  --quick          a smoke run: least-wait and prefix-affinity at one level, short (about a minute)
  --only LIST      runs to do, of single, least-wait, prefix-affinity, chat (default all)
  --workload NAME  the shared-prefix workload, of config/workloads (default multi-turn;
                   multi-turn-long: agent-like conversations whose prompts reach 4k-8k tokens;
                   multi-turn-think: the same with users thinking 4-12 s between turns, so
                   many conversations are open at once)
  --rate R|auto    1x, in requests/s of model time. auto (the default; --quick: 24) measures it
                   first: least-wait's max goodput on the workload (attainment >= 90%), searched
                   from --rate-guess by a factor of 1.5, then bisected to 10%
  --rate-guess R   where auto starts (default 24)
  --calibrate-duration S  model seconds of load per run of that search (default 20)
  --levels LIST    load levels, multiples of --rate (default 1,2)
  --scale S        time scale (default 3; --quick 2)
  --duration S     model seconds of load per run, measured (default 60; --quick 8)
  --warmup S       model seconds of load before it, not judged (default 90; --quick 10): the
                   conversations grow to their steady depth, and the caches fill, as in a service
                   that has been running; chat (unique prompts) gets at most 10
  --replicas N     replicas in the pool (default 4)
  --profile P      simulator profile (default llama-3.1-70b-h100-tp4)
  --routing JSON   more routing keys for the prefix-affinity runs, e.g. '{"prefix_weight":4}'
  --retries N      a conversation's refused turn is sent again after its Retry-After up to N
                   times (default: the workload's conversation.retries; 0 ends it at a refusal)
  --out FILE       report file (default reports/prefix-routing.md)
  -h, --help       this help
`

/** The runs, by name: one replica (the hit-rate yardstick), each routing on multi-turn, both on chat. */
const RUNS = ['single', 'least-wait', 'prefix-affinity', 'chat']

const log = (s: string) => process.stderr.write(`[bench:prefix] ${s}\n`)

async function text(url: string): Promise<string> {
  const r = await request(url)
  return r.body.text()
}

function sample(metrics: string, name: string): number {
  let sum = 0
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(name)) continue
    const v = Number(line.slice(line.lastIndexOf(' ') + 1))
    if (Number.isFinite(v)) sum += v
  }
  return sum
}

function labelled(metrics: string, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {}
  const re = new RegExp(`^${name}\\{[^}]*${label}="([^"]+)"[^}]*\\} (\\S+)`)
  for (const line of metrics.split('\n')) {
    const m = re.exec(line)
    if (m !== null) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2])
  }
  return out
}

interface Counters {
  /** The engines' prefix-cache hits and queries (tokens), summed over the replicas. */
  readonly hits: number
  readonly queries: number
  /** The gateway's routing decisions so far, by decision. */
  readonly decisions: Record<string, number>
  /** Prompt tokens the gateway predicted cached where it sent them, and all it sent (prefix-aware). */
  readonly predictedHitTokens: number
  readonly promptTokens: number
}

const EMPTY_COUNTERS: Counters = {
  hits: 0,
  queries: 0,
  decisions: {},
  predictedHitTokens: 0,
  promptTokens: 0,
}

async function counters(urls: readonly string[], adminUrl: string): Promise<Counters> {
  let hits = 0
  let queries = 0
  for (const u of urls) {
    const m = await text(`${u}/metrics`)
    hits += sample(m, 'vllm:prefix_cache_hits_total')
    queries += sample(m, 'vllm:prefix_cache_queries_total')
  }
  const gm = await text(`${adminUrl}/metrics`)
  return {
    hits,
    queries,
    decisions: labelled(gm, 'slo_gateway_prefix_routing_total', 'decision'),
    predictedHitTokens: labelled(gm, 'slo_gateway_prefix_predicted_hit_tokens_total', 'pool').sim ?? 0,
    promptTokens: labelled(gm, 'slo_gateway_prefix_prompt_tokens_total', 'pool').sim ?? 0,
  }
}

/** The workload file with its objectives in wall time (× scale), and --retries if given. */
function scaled(w: Workload, scale: number, retries: number | undefined): Workload {
  const t = (v: number | undefined) => (v === undefined ? undefined : v * scale)
  return {
    ...w,
    classes: w.classes.map((c) => ({
      ...c,
      ...(c.conversation === undefined || retries === undefined
        ? {}
        : { conversation: { ...c.conversation, retries } }),
      slo: {
        ...(c.slo.ttft_ms === undefined ? {} : { ttft_ms: t(c.slo.ttft_ms) }),
        ...(c.slo.tpot_ms === undefined ? {} : { tpot_ms: t(c.slo.tpot_ms) }),
        ...(c.slo.e2e_ms === undefined ? {} : { e2e_ms: t(c.slo.e2e_ms) }),
      },
    })),
  } as Workload
}

async function runOne(
  spec: RunSpec,
  o: {
    scale: number
    durationS: number
    /** Model seconds of load before the measured window (conversations grow to their steady depth). */
    warmupS: number
    profile: string
    seed: number
    drainMs: number
    routing?: string
    retries?: number
  },
): Promise<RunResult> {
  const children: Child[] = []
  try {
    const sim = await spawnPrefixChild('simulator', [
      'sim',
      '--replicas',
      String(spec.replicas),
      '--profile',
      o.profile,
      '--scale',
      String(o.scale),
      '--seed',
      String(o.seed),
    ])
    children.push(sim.child)
    const urls = sim.info.urls as string[]
    const model = sim.info.model as string
    const gw = await spawnPrefixChild('gateway', [
      'gateway',
      '--sims',
      urls.join(','),
      '--model',
      model,
      '--scale',
      String(o.scale),
      '--scorer',
      spec.scorer,
      ...(spec.scorer === 'prefix-affinity' && o.routing !== undefined ? ['--routing', o.routing] : []),
    ])
    children.push(gw.child)
    const adminUrl = gw.info.adminUrl as string
    // wait for a first scrape of every replica (a pool with stale endpoints refuses)
    for (let i = 0; i < 100; i++) {
      const st = JSON.parse(await text(`${adminUrl}/admin/state`)) as {
        backends?: { pools?: { usable?: number }[] }
      }
      if ((st.backends?.pools?.[0]?.usable ?? 0) >= urls.length) break
      await new Promise((r) => setTimeout(r, 100))
    }
    const file = join(ROOT, `config/workloads/${spec.workload}.yaml`)
    const loaded = loadWorkload(file)
    const w = scaled(loaded.workload, o.scale, o.retries)
    const wallRate = (spec.rate * spec.level) / o.scale
    const table = (s: Parameters<typeof tableKey>[1]) => loaded.tables.get(tableKey(loaded.file, s)) ?? []
    const client = new Pool(gw.info.url as string, { connections: 4096, headersTimeout: 0, bodyTimeout: 0 })
    const warmupMs = o.warmupS * o.scale * 1000
    // the engines' and the gateway's counters where the measured window starts
    let atWarmup: Promise<Counters> = Promise.resolve(EMPTY_COUNTERS)
    const timer =
      warmupMs > 0
        ? setTimeout(() => {
            atWarmup = counters(urls, adminUrl)
            atWarmup.catch(() => {})
          }, warmupMs)
        : undefined
    const result = await runBench({
      client,
      plan: new RequestPlan(w, table, wallRate, o.seed),
      builder: new RequestBuilder({
        workload: { ...w, seed: o.seed },
        model,
        pathPrefix: '/v1',
        tenantKeys: [],
        runTag: `${spec.workload}-${spec.scorer}-${spec.level}-${spec.replicas}`,
        // users think in model time: stretched with the objectives
        timeScale: o.scale,
      }),
      classNames: w.classes.map((c) => c.name),
      tenantNames: [],
      mode: { rate: wallRate },
      durationMs: (o.warmupS + o.durationS) * o.scale * 1000,
      drainMs: o.drainMs,
    })
    clearTimeout(timer)
    await client.close()
    const slos = new Map(w.classes.map((c) => [c.name, c.slo]))
    // judged: the requests due in the measured window, after the warm-up
    const measured = result.records.filter((r) => r.dueMs >= warmupMs)
    const summary = summarizeRun(measured, slos, result.elapsedMs)
    const cls = summary.classes[0]
    const start = await atWarmup
    const end = await counters(urls, adminUrl)
    const st = JSON.parse(await text(`${adminUrl}/admin/state`)) as {
      backends?: { pools?: { routing?: { saturatedBy?: Record<string, number> } }[] }
      admission?: { pools?: { outOfTurn?: number; refusedRecompute?: number }[] }
    }
    const saturatedBy = st.backends?.pools?.[0]?.routing?.saturatedBy
    if (saturatedBy !== undefined)
      log(`  saturated picks by why (whole run, warm-up included): ${JSON.stringify(saturatedBy)}`)
    const outOfTurn = st.admission?.pools?.[0]?.outOfTurn
    if (outOfTurn !== undefined)
      log(`  sent to their home ahead of a head whose home was closed: ${outOfTurn}`)
    const refusedRecompute = st.admission?.pools?.[0]?.refusedRecompute
    if (refusedRecompute !== undefined && refusedRecompute > 0)
      log(`  refused past capacity rather than recomputed away from a closed home: ${refusedRecompute}`)
    const hits = end.hits - start.hits
    const queries = end.queries - start.queries
    const decisions: Record<string, number> = {}
    for (const [k, v] of Object.entries(end.decisions)) decisions[k] = v - (start.decisions[k] ?? 0)
    const perBackend = new Map<string, number>()
    for (const r of measured) {
      const b = r.headers['x-gateway-backend']
      if (b !== undefined) perBackend.set(b, (perBackend.get(b) ?? 0) + 1)
    }
    const routed = [...perBackend.values()].reduce((a, b) => a + b, 0)
    return {
      spec,
      sent: measured.length,
      hitRate: queries > 0 ? hits / queries : Number.NaN,
      ttftP50: (cls?.ttftMs.p50 ?? Number.NaN) / o.scale,
      ttftP99: (cls?.ttftMs.p99 ?? Number.NaN) / o.scale,
      // good requests per second of offered load (the drain after it is not load)
      goodputRps: (cls?.good ?? 0) / o.durationS,
      attainment: cls?.attainmentOffered ?? 0,
      refused: cls?.refused ?? 0,
      retried: measured.filter((r) => r.conversation?.retry === true).length,
      predictedHit:
        end.promptTokens > start.promptTokens
          ? (end.predictedHitTokens - start.predictedHitTokens) / (end.promptTokens - start.promptTokens)
          : undefined,
      decisions,
      spread: [...perBackend.keys()].sort().map((k) => (perBackend.get(k) ?? 0) / Math.max(1, routed)),
    }
  } finally {
    for (const c of children.reverse()) await c.stop()
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      rate: { type: 'string' },
      'rate-guess': { type: 'string', default: '24' },
      'calibrate-duration': { type: 'string', default: '20' },
      workload: { type: 'string', default: 'multi-turn' },
      levels: { type: 'string' },
      scale: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      replicas: { type: 'string', default: '4' },
      profile: { type: 'string', default: 'llama-3.1-70b-h100-tp4' },
      seed: { type: 'string', default: '1' },
      out: { type: 'string', default: join(ROOT, 'reports/prefix-routing.md') },
      only: { type: 'string' },
      routing: { type: 'string' },
      retries: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const num = (name: string, v: string | undefined, ok: (x: number) => boolean) => {
    const x = Number(v)
    if (v === undefined || !ok(x)) throw new RangeError(`--${name}: got '${v}'`)
    return x
  }
  const rateArg = values.rate ?? (values.quick ? '24' : 'auto')
  const workload = values.workload
  if (!existsSync(join(ROOT, `config/workloads/${workload}.yaml`)))
    throw new RangeError(`--workload: no config/workloads/${workload}.yaml`)
  const scale = num('scale', values.scale ?? (values.quick ? '2' : '3'), (x) => x > 0)
  const replicas = num('replicas', values.replicas, (x) => Number.isInteger(x) && x >= 2)
  const durationS = num('duration', values.duration ?? (values.quick ? '8' : '60'), (x) => x > 0)
  const warmupS = num('warmup', values.warmup ?? (values.quick ? '10' : '90'), (x) => x >= 0)
  const levels = (values.levels ?? (values.quick ? '1' : '1,2'))
    .split(',')
    .map((s) => num('levels', s, (x) => x > 0))
  const o = {
    scale,
    durationS,
    warmupS,
    profile: values.profile,
    seed: Number(values.seed),
    drainMs: (values.quick ? 5_000 : 20_000) * scale,
    ...(values.routing === undefined ? {} : { routing: values.routing }),
    ...(values.retries === undefined
      ? {}
      : { retries: num('retries', values.retries, (x) => Number.isInteger(x) && x >= 0 && x <= 10) }),
  }
  const shared = loadWorkload(join(ROOT, `config/workloads/${workload}.yaml`)).workload
  const loadBefore = loadavg()
  const started = performance.now()

  const calibration: RunResult[] = []
  const calibrateS = num('calibrate-duration', values['calibrate-duration'], (x) => x > 0)
  let rate: number
  if (rateArg === 'auto') {
    const guess = num('rate-guess', values['rate-guess'], (x) => x > 0)
    const calibrate = { ...o, durationS: calibrateS }
    log(`1x: least-wait's max goodput on ${workload}, from ${fmt(guess, 1)}/s`)
    const found = await searchMaxRate(
      async (r) => {
        const res = await runOne({ workload, scorer: 'least-wait', level: 1, replicas, rate: r }, calibrate)
        log(`  ${fmt(r, 1)}/s: attainment ${pct(res.attainment)}, goodput ${fmt(res.goodputRps, 2)}/s`)
        calibration.push(res)
        return res
      },
      { start: guess, attainment: 0.9, step: 1.5, tolerance: 0.1, maxTrials: 6 },
    )
    if (found.rate === 0) throw new Error(`no rate down to ${fmt(guess / 64, 2)}/s met 90% attainment`)
    rate = found.rate
    log(`1x = ${fmt(rate, 1)}/s (${found.stop})`)
  } else rate = num('rate', rateArg, (x) => x > 0)

  const only = new Set(
    (values.only ?? (values.quick ? 'least-wait,prefix-affinity' : RUNS.join(','))).split(','),
  )
  for (const r of only)
    if (!RUNS.includes(r)) throw new RangeError(`--only: ${r} is not one of ${RUNS.join(', ')}`)
  const specs: RunSpec[] = []
  if (only.has('single'))
    specs.push({ workload, scorer: 'least-wait', level: 1, replicas: 1, rate: rate / replicas })
  for (const level of levels)
    for (const scorer of ['least-wait', 'prefix-affinity'] as const)
      if (only.has(scorer)) specs.push({ workload, scorer, level, replicas, rate })
  if (only.has('chat'))
    for (const scorer of ['least-wait', 'prefix-affinity'] as const)
      specs.push({ workload: 'chat', scorer, level: levels[0]!, replicas, rate: rate / 2 })
  const results: RunResult[] = []
  for (const spec of specs) {
    log(
      `${spec.workload}, ${spec.replicas} replica(s), ${spec.scorer}, ${spec.level}× of ${fmt(spec.rate, 1)}/s`,
    )
    // unique prompts need no time to grow: a short warm-up (JIT, connections, the estimator)
    const r = await runOne(spec, spec.workload === 'chat' ? { ...o, warmupS: Math.min(warmupS, 10) } : o)
    log(
      `  sent ${r.sent}, hit ${pct(r.hitRate)}, TTFT p50 ${fmt(r.ttftP50, 0)} p99 ${fmt(r.ttftP99, 0)} ms, goodput ${fmt(r.goodputRps, 2)}/s`,
    )
    results.push(r)
  }

  writeReport(results, {
    out: values.out,
    quick: values.quick,
    loadBefore,
    wallS: (performance.now() - started) / 1000,
    profile: o.profile,
    routing: o.routing,
    scale,
    durationS,
    warmupS,
    rate,
    calibration,
    calibrationS: calibrateS,
    workload,
    description: shared.description ?? workload,
    retries: o.retries ?? shared.classes[0]?.conversation?.retries ?? 0,
    replicas,
    levels,
  })
  log(`wrote ${values.out}`)
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:prefix: ${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
