/**
 * Microbenchmark of the telemetry request path: `record(ticket)` + `observeHttp(...)` per
 * request, as src/proxy/handlers.ts calls them, on a realistic config (one pool).
 * Run: npx tsx bench/telemetry-micro.ts [requests=200000] [runs=5]
 * Prints µs per request (median of the runs) and GC events during the timed runs.
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { Registry } from 'prom-client'
import { systemClock } from '../src/clock.js'
import { configSchema } from '../src/config/schema.js'
import { createTelemetry } from '../src/telemetry/index.js'
import { Ticket } from '../src/ticket.js'

const N = Number(process.argv[2] ?? 200_000)
const RUNS = Number(process.argv[3] ?? 5)
const MODEL = 'llama-3.1-8b'

const config = configSchema.parse({
  auth: { anonymous: 'default' },
  backends: {
    pools: [
      {
        name: 'main',
        models: [MODEL],
        endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
        cost_per_hour: 3.6,
      },
    ],
  },
  telemetry: { summary_interval_ms: 0 },
})

// Deterministic PRNG so every run records the same tickets.
let seed = 42
function rnd(): number {
  seed = (seed * 1664525 + 1013904223) >>> 0
  return seed / 2 ** 32
}

/** A finished, streamed, successful interactive request with ~20 inter-token gaps. */
function makeTicket(i: number): Ticket {
  const arrived = 1_000 + i
  const t = new Ticket(`r${i}`, 'POST', '/v1/chat/completions', arrived)
  t.route = '/v1/chat/completions'
  t.tenant = `tenant-${Math.floor(rnd() * 10)}`
  t.class = 'interactive'
  t.model = MODEL
  t.stream = true
  t.promptTokens = 50 + Math.floor(rnd() * 900)
  t.poolName = 'main'
  t.backend = 'http://127.0.0.1:1'
  t.predictedTtftMs = 40 + rnd() * 60
  t.dispatchedAt = arrived + rnd() * 2
  t.responseStartedAt = t.dispatchedAt + 20
  t.firstTokenAt = t.dispatchedAt + 30 + rnd() * 80
  const chunks = 18 + Math.floor(rnd() * 5)
  let at = t.firstTokenAt
  for (let k = 1; k < chunks; k++) {
    const gap = 5 + rnd() * 30
    t.itlMs.push(gap)
    at += gap
  }
  t.lastTokenAt = at
  t.finishedAt = at + 1
  t.contentChunks = chunks
  t.usage = { promptTokens: t.promptTokens, completionTokens: chunks }
  t.status = 200
  t.outcome = 'ok'
  return t
}

const DISTINCT = 4096
const tickets = Array.from({ length: DISTINCT }, (_, i) => makeTicket(i))

let gcs = 0
const obs = new PerformanceObserver((list) => {
  gcs += list.getEntries().length
})
obs.observe({ entryTypes: ['gc'] })

function run(): number {
  const registry = new Registry()
  const tel = createTelemetry(config, { registry, clock: systemClock })
  const start = process.hrtime.bigint()
  for (let i = 0; i < N; i++) {
    const t = tickets[i & (DISTINCT - 1)]!
    tel.record(t)
    tel.observeHttp(t.route, t.method, t.status, ((t.finishedAt ?? 0) - t.arrivedAt) / 1000)
  }
  const ns = Number(process.hrtime.bigint() - start)
  tel.close()
  return ns / 1000 / N
}

async function main(): Promise<void> {
  run() // warm-up
  await new Promise((r) => setImmediate(r))
  const results: number[] = []
  const gcCounts: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const before = gcs
    results.push(run())
    await new Promise((res) => setTimeout(res, 10)) // let the gc observer report
    gcCounts.push(gcs - before)
  }
  obs.disconnect()
  const sorted = [...results].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]!
  console.log(
    `telemetry record+observeHttp: ${median.toFixed(3)} µs/request (median of ${RUNS} x ${N}); ` +
      `runs: ${results.map((x) => x.toFixed(3)).join(' ')}; GCs per run: ${gcCounts.join(' ')}`,
  )
}

void main()
