/**
 * The prefix-routing bench's child processes, so the load generator never shares an event
 * loop with what it measures:
 *
 *   node --import tsx bench/prefix-routing-child.ts sim --replicas N --profile P --scale S --seed K
 *   node --import tsx bench/prefix-routing-child.ts gateway --sims URL,URL.. --model M --scale S --scorer NAME [--routing JSON]
 *
 * `sim`: N simulated replicas (startSim, prefix caching as the profile sets it: on for the
 * vLLM profiles). `gateway`: createRuntime (the product as shipped) with one pool over the
 * replicas, every time constant × scale (SLOs, queue waits, windows, the estimator's
 * priors, staleness), and `routing.scorer` as asked (more routing keys as JSON with --routing).
 * Each prints one line `PREFIX-CHILD {json}` when it listens, and stops on SIGTERM.
 */
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { configSchema } from '../src/config/schema.js'
import { createLogger } from '../src/logger.js'
import { createRuntime } from '../src/runtime.js'
import { startSim } from '../src/sim/index.js'
import { type Child, start } from './processes.js'

export const READY = 'PREFIX-CHILD '

export interface GatewayOptions {
  readonly sims: readonly string[]
  readonly model: string
  readonly scale: number
  readonly scorer: 'least-wait' | 'prefix-affinity'
  /** More routing keys (backends.pools[].routing), e.g. { max_load_ratio: 1.5 }. */
  readonly routing?: Record<string, unknown> | undefined
}

/** The gateway's config for the simulated replicas at `scale`: every time constant × scale. */
export function gatewayConfig(o: GatewayOptions) {
  const base = configSchema.parse({})
  const i = base.classes.interactive
  const b = base.classes.batch
  if (i === undefined || b === undefined) throw new Error('built-in classes missing')
  const times = (v: number | undefined) => (v === undefined ? undefined : Math.round(v * o.scale))
  return configSchema.parse({
    auth: { anonymous: 'default' },
    server: { host: '127.0.0.1', admin_host: '127.0.0.1', port: 0, admin_port: 0 },
    log: { level: 'warn' },
    backends: {
      pools: [
        {
          name: 'sim',
          models: [o.model, '*'],
          endpoints: o.sims,
          engine: 'vllm',
          stale_after_ms: 1000 * o.scale,
          routing: {
            scorer: o.scorer,
            ...(o.routing ?? {}),
          },
        },
      ],
    },
    classes: {
      interactive: {
        slo: { ttft_ms: times(i.slo.ttft_ms), tpot_ms: times(i.slo.tpot_ms) },
        max_queue_wait_ms: times(i.max_queue_wait_ms),
      },
      batch: { slo: { e2e_ms: times(b.slo.e2e_ms) }, max_queue_wait_ms: times(b.max_queue_wait_ms) },
    },
    admission: {
      min_share_window_ms: times(base.admission.min_share_window_ms),
      itl_window_ms: times(base.admission.itl_window_ms),
      probe_interval_ms: times(base.admission.probe_interval_ms),
      estimator: {
        step_ms: base.admission.estimator.step_ms * o.scale,
        prefill_tokens_per_s: base.admission.estimator.prefill_tokens_per_s / o.scale,
      },
    },
  })
}

const SELF = fileURLToPath(import.meta.url)
const TSX = import.meta.resolve('tsx')

/** Starts a child (this file, under tsx) and waits for its ready line. */
export async function spawnPrefixChild(
  name: string,
  args: readonly string[],
): Promise<{ child: Child; info: Record<string, unknown> }> {
  const child = start(name, process.execPath, ['--import', TSX, SELF, ...args])
  const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`${name} not ready in 60 s:\n${child.output()}`)), 60_000)
    child.proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString()
      const line = buf.split('\n').find((l) => l.startsWith(READY))
      if (line === undefined) return
      clearTimeout(timer)
      resolve(JSON.parse(line.slice(READY.length)) as Record<string, unknown>)
    })
    child.proc.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (${code ?? signal}):\n${child.output()}`))
    })
  })
  return { child, info }
}

async function runSim(replicas: number, profile: string, scale: number, seed: number): Promise<void> {
  const sim = await startSim({ profile, replicas, port: 0, timeScale: scale, seed })
  process.stdout.write(
    `${READY}${JSON.stringify({ urls: sim.replicas.map((r) => r.url), model: sim.modelName })}\n`,
  )
  const stop = () => void sim.close().then(() => process.exit(0))
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

async function runGateway(o: GatewayOptions): Promise<void> {
  const runtime = await createRuntime(gatewayConfig(o), createLogger('warn'))
  const { app, admin } = runtime.apps
  await app.listen({ port: 0, host: '127.0.0.1' })
  await admin.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const adminUrl = `http://127.0.0.1:${(admin.server.address() as AddressInfo).port}`
  process.stdout.write(`${READY}${JSON.stringify({ url, adminUrl })}\n`)
  const stop = () =>
    void (async () => {
      app.server.closeAllConnections()
      await app.close()
      await admin.close()
      await runtime.close()
      process.exit(0)
    })()
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      replicas: { type: 'string', default: '4' },
      profile: { type: 'string', default: 'llama-3.1-8b-h100' },
      scale: { type: 'string', default: '1' },
      seed: { type: 'string', default: '1' },
      sims: { type: 'string' },
      model: { type: 'string' },
      scorer: { type: 'string', default: 'least-wait' },
      routing: { type: 'string' },
    },
  })
  const scale = Number(values.scale)
  if (!(scale > 0)) throw new Error(`--scale: expected a positive number, got ${values.scale}`)
  if (positionals[0] === 'sim')
    return runSim(Number(values.replicas), values.profile, scale, Number(values.seed))
  if (positionals[0] === 'gateway') {
    if (values.sims === undefined || values.model === undefined)
      throw new Error('gateway: --sims and --model')
    if (values.scorer !== 'least-wait' && values.scorer !== 'prefix-affinity')
      throw new Error(`--scorer: least-wait or prefix-affinity, got ${values.scorer}`)
    const routing =
      values.routing === undefined ? undefined : (JSON.parse(values.routing) as Record<string, unknown>)
    return runGateway({
      sims: values.sims.split(','),
      model: values.model,
      scale,
      scorer: values.scorer,
      routing,
    })
  }
  throw new Error('usage: prefix-routing-child.ts sim|gateway [options]')
}

if (process.argv[1] === SELF || process.argv[1] === join(dirname(SELF), 'prefix-routing-child.js')) {
  main().catch((err: unknown) => {
    process.stderr.write(`prefix-routing-child: ${(err as Error).stack ?? String(err)}\n`)
    process.exit(1)
  })
}
