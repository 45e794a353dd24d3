/**
 * The stack of admission-scenario.test.ts, wired as src/gateway.ts wires it (backends,
 * telemetry, admission pumped by scrapes, queue gauges from admission) but with the
 * simulators started here, one per pool, so each pool's replica can be slowed or broken on
 * its own. Plus what the scenario reads: the Prometheus text, sums by label, promtool.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { Registry } from 'prom-client'
import { Agent, type Dispatcher, request } from 'undici'
import { Admission } from '../../../src/admission/admission.js'
import { type BackendsHandle, createBackends } from '../../../src/backends/index.js'
import { systemClock } from '../../../src/clock.js'
import { configSchema } from '../../../src/config/schema.js'
import { buildHttpApps, type HttpApps } from '../../../src/http-apps.js'
import { createLogger } from '../../../src/logger.js'
import { type SimHandle, startSim } from '../../../src/sim/index.js'
import { createTelemetry, type Telemetry } from '../../../src/telemetry/index.js'

export interface Stack {
  /** One simulator per pool, in the order of `pools`. */
  readonly sims: readonly SimHandle[]
  readonly backends: BackendsHandle
  readonly telemetry: Telemetry
  readonly admission: Admission
  readonly gateway: HttpApps
  readonly url: string
  readonly adminUrl: string
  /** One JSON log line per request, for a failure's report. */
  readonly requestLog: string[]
  /** The test's HTTP client. */
  readonly client: Agent
  /** POST /v1/chat/completions, the class in x-priority; with a signal, on a socket of its own. */
  send(cls: string | undefined, body: object, signal?: AbortSignal): Promise<Dispatcher.ResponseData>
  /** As send, read whole. */
  chat(cls: string | undefined, body: object): Promise<Reply>
  /** Replaces the faults of pool i's simulator ({} clears them). */
  faults(pool: number, spec: Record<string, unknown>): Promise<void>
  close(): Promise<void>
}

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}

/**
 * Starts one `tiny` simulator per pool (pool i serves models[i]), then the gateway with
 * admission in front of them; resolves once every pool has fresh load data.
 */
export async function startStack(opts: {
  pools: readonly { name: string; model: string }[]
  raw: Record<string, unknown>
}): Promise<Stack> {
  const sims: SimHandle[] = []
  for (const p of opts.pools) {
    sims.push(
      await startSim({ replicas: 1, port: 0, profile: 'tiny', host: '127.0.0.1', modelName: p.model }),
    )
  }
  const config = configSchema.parse({
    auth: { anonymous: 'default' },
    ...opts.raw,
    server: { port: 0, admin_port: 0, host: '127.0.0.1', admin_host: '127.0.0.1' },
    backends: {
      pools: opts.pools.map((p, i) => ({
        name: p.name,
        models: [p.model],
        endpoints: sims[i]?.replicas.map((r) => r.url),
        cost_per_hour: 36,
      })),
    },
    telemetry: { summary_interval_ms: 0 },
  })
  const registry = new Registry()
  const backends = createBackends(config, { clock: systemClock, registry })
  const telemetry = createTelemetry(config, { registry, clock: systemClock, backends })
  const admission = new Admission(config, backends, systemClock)
  backends.onChange(() => admission.pumpAll())
  telemetry.setQueueSource(() => admission.queueDepths())
  const requestLog: string[] = []
  const sink = new Writable({
    write: (chunk, _e, cb) => {
      const line = String(chunk)
      if (line.includes('"msg":"request"')) requestLog.push(line.trim())
      cb()
    },
  })
  const gateway = buildHttpApps(config, {
    clock: systemClock,
    logger: createLogger('info', sink),
    registry,
    backends,
    admission,
    recorder: telemetry,
  })
  backends.start()
  await gateway.app.listen({ port: 0, host: '127.0.0.1' })
  await gateway.admin.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}`
  const client = new Agent()
  const aborting = new Agent()
  const send = (cls: string | undefined, body: object, signal?: AbortSignal) =>
    request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(cls === undefined ? {} : { 'x-priority': cls }) },
      body: JSON.stringify(body),
      dispatcher: signal === undefined ? client : aborting,
      ...(signal === undefined ? {} : { signal }),
    })
  const stack: Stack = {
    sims,
    backends,
    telemetry,
    admission,
    gateway,
    url,
    adminUrl: `http://127.0.0.1:${(gateway.admin.server.address() as AddressInfo).port}`,
    requestLog,
    client,
    send,
    chat: async (cls, body) => {
      const res = await send(cls, body)
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() }
    },
    faults: async (pool, spec) => {
      const res = await request(`${sims[pool]?.replicas[0]?.url}/admin/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(spec),
        dispatcher: client,
      })
      await res.body.text()
      if (res.statusCode !== 200) throw new Error(`faults ${JSON.stringify(spec)}: ${res.statusCode}`)
    },
    close: async () => {
      admission.close()
      telemetry.close()
      await client.destroy()
      await aborting.destroy()
      await gateway.app.close()
      await gateway.admin.close()
      await backends.close()
      for (const s of sims) await s.close()
    },
  }
  await until(() => backends.pools().every((p) => p.ready()), 5_000, 'fresh load data from every pool')
  return stack
}

export async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const start = performance.now()
  while (!check()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/**
 * Waits until every simulator is idle (nothing running, waiting or mid-step) and every
 * endpoint has been scraped since, so the next decision sees an idle pool.
 */
export async function settle(stack: Stack): Promise<void> {
  const idle = () => stack.sims.every((s) => s.replicas.every((r) => !r.engine.hasWork && !r.engine.stepping))
  await until(idle, 10_000, 'idle simulators')
  const since = systemClock.now()
  await until(
    () =>
      stack.backends
        .pools()
        .every((p) => p.endpoints().every((e) => e.loadAt !== undefined && e.loadAt > since)) &&
      stack.backends.ready(),
    10_000,
    'a scrape of every idle endpoint',
  )
}

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Minimal reader of the Prometheus text format (enough for our own output). */
export function parseText(text: string): Sample[] {
  const out: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line)
    if (m === null) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ''] = l[2] ?? ''
    out.push({ name: m[1] ?? '', labels, value: Number(m[3]) })
  }
  return out
}

export function sum(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0)
}

/** Sums of a metric grouped by some labels (`a/b` keys), zero groups left out. */
export function sumBy(
  samples: readonly Sample[],
  name: string,
  keys: readonly string[],
): Record<string, number> {
  const out: Record<string, number> = {}
  for (const s of samples) {
    if (s.name !== name) continue
    const k = keys.map((key) => s.labels[key] ?? '').join('/')
    out[k] = (out[k] ?? 0) + s.value
  }
  for (const [k, v] of Object.entries(out)) if (v === 0) delete out[k]
  return out
}

/**
 * `promtool check metrics` on the text: its output ('' when clean), or undefined when
 * promtool is not installed (allowed locally; CI installs Debian's `prometheus`).
 */
export function promtoolCheck(text: string): { output: string; status: number | null } | undefined {
  const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => existsSync(p))
  if (promtool === undefined) {
    if (process.env.CI) throw new Error('promtool is required in CI (Debian package `prometheus`)')
    return undefined
  }
  const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' })
  return { output: `${check.stdout}${check.stderr}`.trim(), status: check.status }
}
