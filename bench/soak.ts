/**
 * Soak: a moderate mixed load through the gateway and two simulators (each its own
 * process) for a long time, sampling the gateway's RSS, heap, event-loop lag and open
 * handles (and file descriptors) as it goes. The target is no growth after warm-up: the
 * report compares the samples of the last fifth of the run with those just after the
 * first fifth (warm-up), and writes reports/soak.md.
 *
 * Load: an open loop (Poisson arrivals, seeded) of interactive streams, batch requests and
 * clients that leave mid-stream, with prompt lengths that vary.
 *
 *   npm run bench:soak                       # 10 minutes
 *   npm run bench:soak -- --minutes 60 --rate 12
 *   npm run bench:soak -- --quick            # 75 s, a smoke run
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { loadAverage } from './processes.js'
import { metric, openFds, ROOT, round, rssMb, startGateway, startSim } from './reliability-stack.js'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '8' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: join(ROOT, 'reports', 'soak.md') },
    seed: { type: 'string', default: '22' },
  },
})
const minutes = values.quick ? 1.25 : Number(values.minutes)
const rate = Number(values.rate)
const durationMs = minutes * 60_000
const sampleMs = values.quick ? 5_000 : Math.max(5_000, Math.round(durationMs / 60))
const log = (s: string) => process.stderr.write(`soak: ${s}\n`)

interface Sample {
  atS: number
  rssMb: number
  heapMb: number
  lagP99Ms: number
  handles: number
  fds: number
  requests: number
}

let seed = Number(values.seed)
const rand = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
  return seed / 2 ** 31
}

async function main(): Promise<void> {
  log(`${minutes} min at ${rate} req/s, sampling every ${sampleMs / 1000} s`)
  const sims = await Promise.all([startSim(), startSim()])
  const gw = await startGateway({
    auth: { anonymous: 'soak' },
    backends: { pools: [{ name: 'sim', models: ['*'], endpoints: sims.map((s) => s.url) }] },
  })
  const agent = new Agent({ connections: 512 })
  const outcomes: Record<string, number> = {}
  const note = (k: string) => {
    outcomes[k] = (outcomes[k] ?? 0) + 1
  }
  const one = async () => {
    const r = rand()
    const batch = r < 0.3
    const leaves = r > 0.9
    const ctl = new AbortController()
    const timer = leaves ? setTimeout(() => ctl.abort(), 200 + rand() * 1_500) : undefined
    try {
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        dispatcher: agent,
        signal: ctl.signal,
        headers: { 'content-type': 'application/json', 'x-priority': batch ? 'batch' : 'interactive' },
        body: JSON.stringify({
          model: 'meta-llama/Llama-3.1-8B-Instruct',
          stream: !batch,
          max_tokens: 16 + Math.floor(rand() * 112),
          messages: [
            { role: 'user', content: `${rand()} ${'lorem '.repeat(20 + Math.floor(rand() * 600))}` },
          ],
        }),
      })
      await res.body.text()
      note(String(res.statusCode))
    } catch {
      note(ctl.signal.aborted ? 'left' : 'error')
    } finally {
      clearTimeout(timer)
    }
  }
  const samples: Sample[] = []
  const t0 = performance.now()
  const sample = async () => {
    const m = await (await fetch(`${gw.adminUrl}/metrics`)).text()
    samples.push({
      atS: round((performance.now() - t0) / 1000, 0),
      rssMb: round(rssMb(gw.child.pid)),
      heapMb: round(metric(m, 'nodejs_heap_size_used_bytes') / 2 ** 20),
      lagP99Ms: round(metric(m, 'nodejs_eventloop_lag_p99_seconds') * 1000),
      handles: metric(m, 'nodejs_active_handles_total'),
      fds: openFds(gw.child.pid),
      requests: metric(m, 'slo_gateway_requests_total'),
    })
    const s = samples.at(-1) as Sample
    log(
      `${s.atS} s: rss ${s.rssMb} MB, heap ${s.heapMb} MB, lag p99 ${s.lagP99Ms} ms, handles ${s.handles}, requests ${s.requests}`,
    )
  }
  const sampler = setInterval(() => void sample(), sampleMs)
  const inflight = new Set<Promise<void>>()
  let next = performance.now()
  while (performance.now() - t0 < durationMs) {
    next += -Math.log(1 - rand()) * (1000 / rate)
    const wait = next - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    const p = one().finally(() => inflight.delete(p))
    inflight.add(p)
  }
  await Promise.all(inflight)
  clearInterval(sampler)
  await sample()
  const state = (await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as { inflight: number }
  await agent.close()
  await gw.child.stop()
  await Promise.all(sims.map((s) => s.child.stop()))
  writeFileSync(values.out, report(samples, outcomes, state.inflight))
  log(`wrote ${values.out}`)
}

function mean(xs: number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length
}

function report(samples: Sample[], outcomes: Record<string, number>, inflightAfter: number): string {
  const n = samples.length
  const warm = samples.slice(Math.floor(n / 5), Math.floor((2 * n) / 5))
  const last = samples.slice(Math.floor((4 * n) / 5))
  const growth = (k: keyof Sample) => round(mean(last.map((s) => s[k])) - mean(warm.map((s) => s[k])))
  const lines = [
    '# Soak',
    '',
    `${minutes} min at ${rate} req/s (Poisson, seed ${values.seed}): 30% batch, 70% interactive streams, 10% of clients`,
    'leave mid-request; prompts of 20 to 620 words; gateway and two simulators each in their own process.',
    `Load average at the end: ${loadAverage()}. Written ${new Date().toISOString()}.`,
    '',
    '## After warm-up (mean of the last fifth minus the mean of the second fifth)',
    '',
    '| figure | growth |',
    '|---|---|',
    `| RSS | ${growth('rssMb')} MB |`,
    `| heap used | ${growth('heapMb')} MB |`,
    `| event-loop lag p99 | ${growth('lagP99Ms')} ms |`,
    `| active handles | ${growth('handles')} |`,
    `| open file descriptors | ${growth('fds')} |`,
    '',
    `Requests by outcome at the client: ${JSON.stringify(outcomes)}. In flight at the gateway after the load: ${inflightAfter}.`,
    '',
    '## Samples',
    '',
    '| t (s) | RSS (MB) | heap (MB) | lag p99 (ms) | handles | fds | requests counted |',
    '|---|---|---|---|---|---|---|',
    ...samples.map(
      (s) =>
        `| ${s.atS} | ${s.rssMb} | ${s.heapMb} | ${s.lagP99Ms} | ${s.handles} | ${s.fds} | ${s.requests} |`,
    ),
    '',
  ]
  return lines.join('\n')
}

main().catch((err: unknown) => {
  process.stderr.write(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
