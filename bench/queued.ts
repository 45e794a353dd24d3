/**
 * 10,000 requests queued: the gateway holds a full batch queue (classes.batch.queue_limit,
 * 10,000 by default) in front of a server that takes one request and never answers (the
 * simulator's hang fault), while the clients (spread over processes, 5,000 connections each)
 * wait. It reports the gateway's RSS, heap and open file descriptors idle and with the
 * queue full (target: RSS under 300 MB), then sends more requests and reports that each is
 * refused with 503 queue_full at once (their latency), and writes reports/queued.md.
 *
 *   npm run bench:queued                   # 10,000 queued
 *   npm run bench:queued -- --queued 20000
 *   npm run bench:queued -- --quick        # 2,000 queued, a smoke run
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { loadAverage } from './processes.js'
import { metric, openFds, ROOT, round, rssMb, startGateway, startSim } from './reliability-stack.js'

const { values } = parseArgs({
  options: {
    queued: { type: 'string', default: '10000' },
    extra: { type: 'string', default: '500' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: join(ROOT, 'reports', 'queued.md') },
  },
})
const target = values.quick ? 2_000 : Number(values.queued)
const extra = values.quick ? 200 : Number(values.extra)
const PER_PROCESS = 5_000
const log = (s: string) => process.stderr.write(`queued: ${s}\n`)

interface Figures {
  rssMb: number
  heapMb: number
  fds: number
}

async function main(): Promise<void> {
  const sim = await startSim({ hang: true })
  const gw = await startGateway({
    auth: { anonymous: 'bench' },
    admission: { max_inflight_per_endpoint: 1 },
    classes: { batch: { queue_limit: target } },
    server: { max_connections: target + extra + 1_000 },
    // the clients' connections arrive in a burst that delays the scrapes: a longer staleness
    // keeps the one endpoint usable meanwhile (it is the gateway that is busy, not the server)
    backends: { pools: [{ name: 'sim', models: ['*'], endpoints: [sim.url], stale_after_ms: 15_000 }] },
  })
  const figures = async (): Promise<Figures> => {
    const m = await (await fetch(`${gw.adminUrl}/metrics`)).text()
    return {
      rssMb: round(rssMb(gw.child.pid)),
      heapMb: round(metric(m, 'nodejs_heap_size_used_bytes') / 2 ** 20),
      fds: openFds(gw.child.pid),
    }
  }
  const queued = async () => {
    const s = (await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as {
      admission: { pools: { classes: { batch: { queued: number; inflight: number } } }[] }
    }
    const b = s.admission.pools[0]?.classes.batch
    return (b?.queued ?? 0) + (b?.inflight ?? 0)
  }
  const idle = await figures()
  log(`idle: ${JSON.stringify(idle)}; queuing ${target} (+1 at the server)`)
  // the first one goes to the server (and hangs there); then the queue fills
  const total = target + 1
  const clients = Array.from({ length: Math.ceil(total / PER_PROCESS) }, (_, i) => {
    const n = Math.min(PER_PROCESS, total - i * PER_PROCESS)
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench', 'queued-client.ts'), gw.url, String(n)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let last = ''
    child.stdout.on('data', (c: Buffer) => {
      const lines = c.toString().trim().split('\n')
      last = lines.at(-1) ?? last
    })
    return { child, last: () => last }
  })
  const t0 = performance.now()
  let held = 0
  for (let i = 0; i < 600 && held < total; i++) {
    await sleep(500)
    held = await queued()
    if (i % 10 === 0)
      log(
        `${held} held after ${round((performance.now() - t0) / 1000)} s; clients ${clients.map((c) => c.last()).join(' ')}`,
      )
  }
  const fillS = round((performance.now() - t0) / 1000)
  await sleep(2_000) // let the heap settle
  const full = await figures()
  log(`full (${held} held, filled in ${fillS} s): ${JSON.stringify(full)}`)
  // arrivals beyond the limit: refused at once
  const agent = new Agent({ connections: 50 })
  const latencies: number[] = []
  const statuses: Record<string, number> = {}
  let sent = 0
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (sent < extra) {
        sent++
        const t = performance.now()
        const res = await request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'x-priority': 'batch' },
          body: JSON.stringify({
            model: 'm',
            max_tokens: 4,
            messages: [{ role: 'user', content: 'one more' }],
          }),
        })
        await res.body.text()
        latencies.push(performance.now() - t)
        const k = `${res.statusCode} ${String(res.headers['x-gateway-reject-reason'] ?? '')}`.trim()
        statuses[k] = (statuses[k] ?? 0) + 1
      }
    }),
  )
  await agent.close()
  latencies.sort((a, b) => a - b)
  const q = (p: number) =>
    round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? Number.NaN)
  const after = await figures()
  for (const c of clients) c.child.kill('SIGTERM')
  await gw.child.stop()
  await sim.child.stop()
  const text = [
    `# ${target.toLocaleString('en')} queued`,
    '',
    `${held} requests held by the gateway (${target} queued in the batch class, one at a server that never answers),`,
    `from ${clients.length} client process(es) of at most ${PER_PROCESS} connections; filled in ${fillS} s.`,
    `Load average at the end: ${loadAverage()}. Written ${new Date().toISOString()}.`,
    '',
    '| gateway | RSS (MB) | heap used (MB) | open fds |',
    '|---|---|---|---|',
    `| idle | ${idle.rssMb} | ${idle.heapMb} | ${idle.fds} |`,
    `| ${held} held | ${full.rssMb} | ${full.heapMb} | ${full.fds} |`,
    `| after ${extra} more arrivals | ${after.rssMb} | ${after.heapMb} | ${after.fds} |`,
    '',
    `RSS per held request: ${round(((full.rssMb - idle.rssMb) * 1024) / Math.max(1, held))} KB.` +
      (target >= 10_000
        ? ` Target (RSS under 300 MB with 10,000 queued): ${full.rssMb < 300 ? 'met' : 'NOT met'}.`
        : ''),
    '',
    `${extra} arrivals beyond the limit (50 at a time): ${JSON.stringify(statuses)}; latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms.`,
    '',
  ].join('\n')
  writeFileSync(values.out, text)
  process.stdout.write(text)
  log(`wrote ${values.out}`)
}

main().catch((err: unknown) => {
  process.stderr.write(`queued: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
