/**
 * `npm run bench:limiter [-- --quick] [-- --rounds N] [-- --rate R] [-- --out FILE] [-- --no-build]`
 *
 * What the tenant limiter adds to a request, side by side in one run (issue 15, item 8):
 *
 * 1. Through the gateway as shipped (`node dist/cli.js serve`), open loop at 1,000 req/s of
 *    small chat completions with a tenant key, in front of the trivial upstream, three ways:
 *    the tenant without limits (the limits stage calls no limiter), with limits in the memory
 *    store, and with the same limits in Redis (a redis-server the bench starts). The limits
 *    are set high enough that nothing is refused: what is measured is the cost of checking
 *    and settling, not of refusing. Added latency = the target's p50 / p99 minus the
 *    no-limiter gateway's, within a round, then the median over rounds.
 * 2. The stores alone, in this process: `check` then `settle` of one request, on the same
 *    schedule (1,000 per second), timed around each call: the round trip itself.
 *
 * Rounds rotate the order of the targets. Writes reports/limiter.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { stringify } from 'yaml'
import { connect, openLoop, type RequestSpec, succeeded } from '../src/loadgen/load-client.js'
import { fmt, median, Report, summarize } from '../src/loadgen/report.js'
import { hashKey } from '../src/tenants/directory.js'
import type { Limiter, TenantLimits } from '../src/tenants/limiter.js'
import { MemoryStore } from '../src/tenants/memory-store.js'
import { RedisStore } from '../src/tenants/redis-store.js'
import {
  buildForBench,
  type Child,
  freePort,
  loadAverage,
  pinClient,
  start,
  stopOnSignals,
  waitReady,
  which,
} from './processes.js'
import { startUpstream, type Upstream } from './targets.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const log = (s: string) => process.stderr.write(`[bench:limiter] ${s}\n`)

const USAGE = `Usage: npm run bench:limiter -- [options]

  --quick        3 rounds of 1 s slices instead of 5 of 3 s (about 1 min instead of about 3)
  --rounds N     rounds (default 5; 3 with --quick)
  --rate R       requests per second (default 1000)
  --out FILE     report file (default reports/limiter.md)
  --no-build     use dist/ and bench/dist/ as they are instead of running tsc first
  -h, --help     this help
`

const KEY = 'sk-bench-limiter'
/** Limits no slice comes near (1,000 req/s for 3 s is 3,000 requests): checked and settled, never refused. */
const LIMITS: TenantLimits = { rpm: 10_000_000, tpm: 1_000_000_000, max_concurrent: 100_000 }

type Key = 'none' | 'memory' | 'redis'
const LABEL: Record<Key, string> = {
  none: 'gateway, tenant without limits (no limiter call)',
  memory: 'gateway, limits in the memory store',
  redis: 'gateway, limits in Redis',
}

interface Gw {
  readonly key: Key
  readonly origin: string
  readonly child: Child
}

interface Slice {
  readonly p50: number
  readonly p99: number
  readonly ok: number
  readonly n: number
  readonly lagP99: number
}

async function startRedis(core: number | undefined): Promise<{ url: string; stop(): Promise<void> }> {
  const bin = which('redis-server')
  if (bin === undefined)
    throw new Error('redis-server not found (apt-get install redis-server; npm test installs it)')
  const port = await freePort()
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
  const child = start('redis', bin, args, core)
  const probe = new RedisStore({ url: `redis://127.0.0.1:${port}` })
  await waitReady(child, () =>
    probe.ready(200).then(
      () => true,
      () => false,
    ),
  )
  await probe.close()
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.stop() }
}

async function startGw(key: Key, up: Upstream, redisUrl: string, dir: string, core: number | undefined) {
  const [port, admin] = [await freePort(), await freePort()]
  const file = join(dir, `${key}.yaml`)
  writeFileSync(
    file,
    stringify({
      server: { port, admin_port: admin },
      log: { level: 'warn' },
      backends: { pools: [{ name: 'p', models: ['*'], endpoints: [up.origin] }] },
      tenants: [{ id: 'bench', api_keys: [hashKey(KEY)], limits: key === 'none' ? {} : LIMITS }],
      limits: { store: key === 'redis' ? 'redis' : 'memory', redis: { url: redisUrl } },
    }),
  )
  const child = start(
    `gateway-${key}`,
    process.execPath,
    [join(ROOT, 'dist/cli.js'), 'serve', '--config', file],
    core,
  )
  const origin = `http://127.0.0.1:${port}`
  await waitReady(child, async () => {
    const r = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: spec.headers ?? {},
      body: spec.body ?? '',
    })
    await r.arrayBuffer()
    return r.status === 200
  })
  return { key, origin, child } satisfies Gw
}

const spec: RequestSpec = {
  method: 'POST',
  path: '/v1/chat/completions',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
  body: JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
}

async function slice(origin: string, rate: number, ms: number): Promise<Slice> {
  const client = connect(origin, 64)
  try {
    await openLoop({ client, request: spec, ratePerS: rate, durationMs: 300 })
    const run = await openLoop({ client, request: spec, ratePerS: rate, durationMs: ms })
    const ok = run.records.filter(succeeded)
    const lat = summarize(ok.map((r) => r.latencyMs))
    return {
      p50: lat.p50,
      p99: lat.p99,
      ok: ok.length,
      n: run.records.length,
      lagP99: summarize(run.lagMs ?? []).p99,
    }
  } finally {
    await client.close()
  }
}

/** check + settle of one request per tick, `rate` per second for `ms`: each call's time, ms. */
async function storeSlice(
  store: Limiter,
  rate: number,
  ms: number,
  tag: string,
): Promise<{ check: number[]; settle: number[] }> {
  const check: number[] = []
  const settle: number[] = []
  const every = 1000 / rate
  const t0 = performance.now()
  let i = 0
  const pending: Promise<void>[] = []
  while (performance.now() - t0 < ms) {
    const due = t0 + i * every
    const wait = due - performance.now()
    if (wait > 1) await sleep(wait)
    const id = `${tag}:${i++}`
    pending.push(
      (async () => {
        const a = performance.now()
        await store.check({ tenant: 'bench', requestId: id, limits: LIMITS, reserveTokens: 20 })
        const b = performance.now()
        await store.settle({ tenant: 'bench', requestId: id, limits: LIMITS, usedTokens: 12 })
        check.push(b - a)
        settle.push(performance.now() - b)
      })(),
    )
  }
  await Promise.all(pending)
  return { check, settle }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      rate: { type: 'string', default: '1000' },
      out: { type: 'string', default: join(ROOT, 'reports/limiter.md') },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const rounds = values.rounds === undefined ? (values.quick ? 3 : 5) : Number(values.rounds)
  const rate = Number(values.rate)
  if (!(Number.isInteger(rounds) && rounds >= 1))
    throw new RangeError(`--rounds: expected a positive integer, got '${values.rounds}'`)
  if (!(rate > 0 && rate <= 20_000)) throw new RangeError(`--rate: expected 1 to 20000, got '${values.rate}'`)
  const sliceMs = values.quick ? 1_000 : 3_000
  const { clientCore, otherCore: gwCore } = pinClient()
  const pinned = clientCore !== undefined
  if (!values['no-build']) buildForBench(ROOT, log)

  const started = performance.now()
  const dir = mkdtempSync(join(tmpdir(), 'bench-limiter-'))
  const stops: (() => Promise<void>)[] = []
  const stopAll = async () => {
    for (const s of stops.splice(0).reverse()) await s()
    rmSync(dir, { recursive: true, force: true })
  }
  stopOnSignals(stopAll)
  try {
    log('starting redis-server, the trivial upstream and three gateways (no limiter, memory, redis)')
    const redis = await startRedis(clientCore)
    stops.push(() => redis.stop())
    const up = await startUpstream(ROOT, clientCore, 1, 0)
    stops.push(() => up.child.stop())
    const gws: Gw[] = []
    for (const key of ['none', 'memory', 'redis'] as const) {
      const g = await startGw(key, up, redis.url, dir, gwCore)
      stops.push(() => g.child.stop())
      gws.push(g)
    }
    const loadBefore = loadAverage()
    const e2e = new Map<Key, Slice[]>(gws.map((g) => [g.key, []]))
    const added = new Map<Key, { p50: number[]; p99: number[] }>([
      ['memory', { p50: [], p99: [] }],
      ['redis', { p50: [], p99: [] }],
    ])
    // warm every gateway's JIT before measuring
    for (const g of gws) await slice(g.origin, rate, 1_000)
    for (let r = 0; r < rounds; r++) {
      const order = gws.map((_, i) => gws[(i + r) % gws.length]!)
      const got = new Map<Key, Slice>()
      for (const g of order) {
        const s = await slice(g.origin, rate, sliceMs)
        got.set(g.key, s)
        e2e.get(g.key)!.push(s)
      }
      const base = got.get('none')!
      for (const k of ['memory', 'redis'] as const) {
        const s = got.get(k)!
        added.get(k)!.p50.push(s.p50 - base.p50)
        added.get(k)!.p99.push(s.p99 - base.p99)
      }
      log(
        `round ${r + 1}/${rounds}: p99 ${order.map((g) => `${g.key} ${fmt(got.get(g.key)!.p99)} ms`).join(', ')}`,
      )
    }

    log('the stores alone, in this process')
    const memory = new MemoryStore()
    const shared = new RedisStore({ url: redis.url })
    await shared.ready(2_000)
    await storeSlice(shared, rate, 500, 'warm')
    const stores: [string, Limiter][] = [
      ['memory store', memory],
      ['Redis store (loopback)', shared],
    ]
    const storeRuns = new Map<string, { check: number[]; settle: number[] }>()
    for (let r = 0; r < rounds; r++) {
      for (const [name, store] of r % 2 === 0 ? stores : [...stores].reverse()) {
        const got = await storeSlice(store, rate, sliceMs, `r${r}`)
        const acc = storeRuns.get(name) ?? { check: [], settle: [] }
        acc.check.push(...got.check)
        acc.settle.push(...got.settle)
        storeRuns.set(name, acc)
      }
    }
    await shared.close()

    const report = new Report()
    report.heading('slo-gateway tenant limiter: the latency it adds', 1)
    const cpu = cpus()
    report.paragraph(
      [
        `Run ${new Date().toISOString()}${values.quick ? ' with `--quick`' : ''}. Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, Node ${process.version}.`,
        '',
        `**What.** Small chat completions with a tenant key, open loop at ${rate} req/s for ${sliceMs / 1000} s per slice, ${rounds} rounds, the targets' order rotated each round; latency from dispatch to the end of the answer, at the client.`,
        'Three gateways (`node dist/cli.js serve`, log level warn, telemetry and admission on as shipped) in front of the trivial upstream:',
        `the tenant without limits (the limits stage returns at once), with \`rpm\`, \`tpm\` and \`max_concurrent\` in the memory store, and the same in Redis (a local redis-server, loopback TCP). The limits (${JSON.stringify(LIMITS)}) are never reached: each request is checked (one Lua script: GCRA, token bucket, lease) and settled (a second one), never refused.`,
        'Added latency = a target p50 (p99) minus the no-limiter gateway p50 (p99) of the same round; the figure is the median over rounds.',
        pinned
          ? "**Pinning.** The gateways on core 1; the load client, the upstream and redis-server on core 0 (Redis on a core of its own would be the deployment to copy: on the gateway's core, each check waits for Redis to be scheduled, which added about 1 ms at p50 in a trial run)."
          : '**Pinning.** None: every process shares the cores.',
        'The machine has 2 cores shared with other work: read the differences, not the absolute times.',
      ].join('\n'),
    )
    report.heading('Through the gateway')
    report.table(
      ['target', 'p50 ms', 'p99 ms', 'answered 2xx', 'schedule lag p99 ms'],
      gws.map((g) => {
        const s = e2e.get(g.key)!
        return [
          LABEL[g.key],
          fmt(median(s.map((x) => x.p50)), 3),
          fmt(median(s.map((x) => x.p99)), 3),
          `${s.reduce((a, x) => a + x.ok, 0)} of ${s.reduce((a, x) => a + x.n, 0)}`,
          fmt(median(s.map((x) => x.lagP99)), 2),
        ]
      }),
    )
    const redisP99 = median(added.get('redis')!.p99)
    report.table(
      ['limiter', 'added p50 ms', 'added p99 ms', 'per round (p99)'],
      (['memory', 'redis'] as const).map((k) => [
        k,
        fmt(median(added.get(k)!.p50), 3),
        fmt(median(added.get(k)!.p99), 3),
        added
          .get(k)!
          .p99.map((v) => fmt(v, 2))
          .join(', '),
      ]),
    )
    report.paragraph(
      `Target: the Redis limiter adds under 1 ms at p99 on loopback: ${redisP99 < 1 ? '**met**' : '**missed**'} (${fmt(redisP99, 3)} ms).`,
    )
    report.heading('The stores alone (check, then settle, of one request)')
    report.table(
      ['store', 'check p50 ms', 'check p99 ms', 'settle p50 ms', 'settle p99 ms', 'calls'],
      [...storeRuns].map(([name, s]) => {
        const c = summarize(s.check)
        const st = summarize(s.settle)
        return [name, fmt(c.p50, 3), fmt(c.p99, 3), fmt(st.p50, 3), fmt(st.p99, 3), String(c.count)]
      }),
    )
    report.paragraph(
      [
        'Only `check` is on the request path: it runs before admission, and a refused request waits for nothing else.',
        '`settle` runs after the response has ended (the client has its answer), off the path.',
        `Wall time: ${((performance.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) before the rounds: ${loadBefore}; after: ${loadAverage()}.`,
      ].join('\n'),
    )
    report.write(values.out!)
    log(`report written to ${values.out}`)
  } finally {
    await stopAll()
  }
}

main().catch((err: unknown) => {
  const usage = (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS') || err instanceof RangeError
  log(usage ? `${(err as Error).message}\n\n${USAGE}` : `failed: ${(err as Error).stack ?? String(err)}`)
  process.exitCode = 1
})
