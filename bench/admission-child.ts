/**
 * The admission bench's child processes, one per server, so the load generator (which parses
 * every streamed token) never shares an event loop with what it measures:
 *
 *   node --import tsx bench/admission-child.ts sim --profile P --scale S --seed N [--replicas R]
 *   node --import tsx bench/admission-child.ts gateway --sim URL[,URL] --model M --scale S [--min-share X] [--ttft-per-1k MS] [--set PATH=VALUE ...]
 *   node --import tsx bench/admission-child.ts control
 *
 * `sim`: one simulated replica (startSim), plus a small stats listener for the bench:
 * GET /stats = { busyMs (sum of the engine's step durations, wall ms), running, waiting,
 * lagP50Ms, lagP99Ms, lagCount (step lag since the last POST /reset) }.
 *
 * `gateway`: createRuntime (admission, telemetry, scrapers: the product as shipped) with one
 * pool on the simulator, SLOs, queue waits and the floor's window multiplied by the time scale (the
 * shipped defaults otherwise); `--min-share`: batch's floor (default: the shipped one); `--set`: any
 * config value, as the gateway's own --set (bench:admission --gateway-set). The estimator's
 * priors and the prefill budget are not set: the gateway learns them from the engine (engine facts),
 * as a new user's would, and what it learns from a time-scaled engine is scaled by itself.
 *
 * `control`: a Node HTTP server that does nothing but refuse: it reads each request's body and
 * answers 503 at once. The load generator probes it beside the gateway's run, so the report
 * says what a refusal takes on this machine, under the same load, with no gateway work in it.
 *
 * Each prints one line `ADMISSION-CHILD {json}` with its URLs when it listens, and stops on
 * SIGTERM.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { parseSet, setPath } from '../src/config/load.js'
import { configSchema } from '../src/config/schema.js'
import { createLogger } from '../src/logger.js'
import { createRuntime } from '../src/runtime.js'
import { startSim } from '../src/sim/index.js'

export const READY_PREFIX = 'ADMISSION-CHILD '

/** The gateway's config for a simulator at `scale`: every time constant × scale. */
export function gatewayConfig(
  simUrl: string,
  model: string,
  scale: number,
  batchMinShare?: number,
  ttftPer1k?: number,
  sets: readonly string[] = [],
) {
  const base = configSchema.parse({})
  const cls = base.classes
  const interactive = cls.interactive
  const batch = cls.batch
  if (interactive === undefined || batch === undefined) throw new Error('built-in classes missing')
  const times = (v: number | undefined) => (v === undefined ? undefined : Math.round(v * scale))
  const raw = {
    auth: { anonymous: 'default' },
    server: { host: '127.0.0.1', admin_host: '127.0.0.1', port: 0, admin_port: 0 },
    log: { level: 'warn' },
    backends: {
      pools: [
        {
          name: 'sim',
          models: [model, '*'],
          endpoints: simUrl.split(','),
          engine: 'vllm',
          // a time-scaled engine step can hold its metrics still that much longer (as createRuntime does)
          stale_after_ms: 1000 * scale,
        },
      ],
    },
    classes: {
      interactive: {
        slo: {
          ttft_ms: times(interactive.slo.ttft_ms),
          tpot_ms: times(interactive.slo.tpot_ms),
          ...(ttftPer1k === undefined ? {} : { ttft_ms_per_1k_prompt_tokens: ttftPer1k * scale }),
        },
        max_queue_wait_ms: times(interactive.max_queue_wait_ms),
      },
      batch: {
        slo: { e2e_ms: times(batch.slo.e2e_ms) },
        max_queue_wait_ms: times(batch.max_queue_wait_ms),
        min_share: batchMinShare ?? batch.min_share,
      },
    },
    admission: {
      min_share_window_ms: times(base.admission.min_share_window_ms),
      itl_window_ms: times(base.admission.itl_window_ms),
      probe_interval_ms: times(base.admission.probe_interval_ms),
    },
  }
  // --gateway-set PATH=VALUE: as the gateway's own --set, on top of the above (not time-scaled)
  for (const s of sets) {
    const set = parseSet(s)
    if (typeof set === 'string') throw new RangeError(set.replace(/^--set/, '--gateway-set'))
    setPath(raw as Record<string, unknown>, set.path, set.value)
  }
  return configSchema.parse(raw)
}

async function runSim(profile: string, scale: number, seed: number, replicas: number): Promise<void> {
  const sim = await startSim({ profile, replicas, port: 0, timeScale: scale, seed })
  const engines = sim.replicas.map((r) => r.engine)
  if (engines.length === 0) throw new Error('no replica')
  // Busy time = the sum of the steps the engines ran (each step's wall duration, time-scaled),
  // divided by the replicas: the pool's busy fraction.
  let busyMs = 0
  for (const engine of engines) {
    const begin = engine.beginStep.bind(engine)
    engine.beginStep = (now: number) => {
      const d = begin(now)
      if (d !== null) busyMs += d / engines.length
      return d
    }
  }
  // step lag: replica 0's (every replica runs the same loop in this one process)
  const lag = (engines[0] as (typeof engines)[number]).stats.recentStepLagMs
  const sum = (f: (e: (typeof engines)[number]) => number) => engines.reduce((a, e) => a + f(e), 0)
  const stats = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/reset') lag.clear()
    const body = JSON.stringify({
      busyMs,
      running: sum((e) => e.numRunning),
      waiting: sum((e) => e.numWaiting),
      preemptions: sum((e) => e.stats.preemptions),
      lagP50Ms: lag.quantile(0.5),
      lagP99Ms: lag.quantile(0.99),
      lagCount: lag.count,
    })
    res.writeHead(200, { 'content-type': 'application/json' }).end(body)
  })
  await new Promise<void>((resolve) => stats.listen(0, '127.0.0.1', resolve))
  const statsUrl = `http://127.0.0.1:${(stats.address() as AddressInfo).port}`
  process.stdout.write(
    `${READY_PREFIX}${JSON.stringify({ url: sim.replicas.map((r) => r.url).join(','), statsUrl, model: sim.modelName })}\n`,
  )
  const stop = () => {
    stats.close()
    void sim.close().then(() => process.exit(0))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

async function runGateway(
  simUrl: string,
  model: string,
  scale: number,
  minShare: number | undefined,
  ttftPer1k: number | undefined,
  sets: readonly string[],
): Promise<void> {
  const config = gatewayConfig(simUrl, model, scale, minShare, ttftPer1k, sets)
  const runtime = await createRuntime(config, createLogger('warn'))
  const { app, admin } = runtime.apps
  await app.listen({ port: 0, host: '127.0.0.1' })
  await admin.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const adminUrl = `http://127.0.0.1:${(admin.server.address() as AddressInfo).port}`
  process.stdout.write(`${READY_PREFIX}${JSON.stringify({ url, adminUrl })}\n`)
  const stop = () => {
    void (async () => {
      app.server.closeAllConnections()
      await app.close()
      await admin.close()
      await runtime.close()
      process.exit(0)
    })()
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

/** The control's answer: the shape of the gateway's refusal. */
const CONTROL_REFUSAL = JSON.stringify({
  error: { message: 'control: refused at once', type: 'overloaded', code: 'control' },
})

async function runControl(): Promise<void> {
  const server = createServer((req, res) => {
    req.resume()
    req.once('end', () => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(CONTROL_REFUSAL)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  process.stdout.write(`${READY_PREFIX}${JSON.stringify({ url })}\n`)
  const stop = () => {
    server.closeAllConnections()
    server.close(() => process.exit(0))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      profile: { type: 'string', default: 'llama-3.1-8b-h100' },
      scale: { type: 'string', default: '1' },
      seed: { type: 'string', default: '1' },
      sim: { type: 'string' },
      model: { type: 'string' },
      'min-share': { type: 'string' },
      replicas: { type: 'string', default: '1' },
      'ttft-per-1k': { type: 'string' },
      set: { type: 'string', multiple: true },
    },
  })
  const scale = Number(values.scale)
  if (!(scale > 0)) throw new Error(`--scale: expected a positive number, got ${values.scale}`)
  if (positionals[0] === 'sim')
    return runSim(values.profile, scale, Number(values.seed), Number(values.replicas))
  if (positionals[0] === 'gateway') {
    if (values.sim === undefined || values.model === undefined) throw new Error('gateway: --sim and --model')
    const share = values['min-share'] === undefined ? undefined : Number(values['min-share'])
    if (share !== undefined && !(share >= 0 && share <= 1))
      throw new Error(`--min-share: expected a number in [0, 1], got ${values['min-share']}`)
    const per1k = values['ttft-per-1k'] === undefined ? undefined : Number(values['ttft-per-1k'])
    if (per1k !== undefined && !(per1k >= 0))
      throw new Error(`--ttft-per-1k: expected a number >= 0, got ${values['ttft-per-1k']}`)
    return runGateway(values.sim, values.model, scale, share, per1k, values.set ?? [])
  }
  if (positionals[0] === 'control') return runControl()
  throw new Error('usage: admission-child.ts sim|gateway|control [options]')
}

// run only as a script, not when imported (the bench imports gatewayConfig to describe it)
if (process.argv[1]?.endsWith('admission-child.ts') || process.argv[1]?.endsWith('admission-child.js')) {
  main().catch((err: unknown) => {
    process.stderr.write(`admission-child: ${(err as Error).stack ?? String(err)}\n`)
    process.exit(1)
  })
}
