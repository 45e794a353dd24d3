/**
 * Overload of the gateway itself (issue 22): load processes of their own (bench/flood-client.ts)
 * write small chat completions open-loop, 10,000 per second each by default, pipelined over
 * 500 connections apiece, at a gateway in front of one simulator process. It reports what
 * was offered and answered, the answers by status and reason with their latency at the
 * client, each /healthz probe's time (probes one after another, 30 s timeout each) on the
 * probe listener (`server.probe_port`, the one a kubelet should use) and, beside it, on the
 * admin listener, whose probes share the event loop with the flood (information), the
 * gateway's RSS idle and at its peak, and whether it recovered: the event-loop lag back
 * under the shedding threshold, nothing held (/admin/state), 16 streams served. It writes
 * reports/flood.md and exits 1 when a target is missed: every probe answered within
 * `--probe-target-ms` (1 s: a Kubernetes liveness probe's default timeout) on the probe
 * listener, RSS under idle
 * + 300 MB, no connection cut, recovered.
 *
 *   npm run bench:flood
 *   npm run bench:flood -- --clients 2 --rate 10000 --seconds 15
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { loadAverage } from './processes.js'
import { metric, ROOT, round, rssMb, startGateway, startSim } from './reliability-stack.js'

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '2' },
    rate: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '15' },
    'probe-target-ms': { type: 'string', default: '1000' },
    'log-level': { type: 'string', default: 'info' },
    out: { type: 'string', default: join(ROOT, 'reports', 'flood.md') },
  },
})
const CLIENTS = Number(values.clients)
const RATE = Number(values.rate)
const SHED_MS = 200
const log = (s: string) => process.stderr.write(`flood: ${s}\n`)

/** One /healthz probe: its status (0: no answer, and why), its time. */
interface Probe {
  status: number
  ms: number
  error?: string
}

interface FloodReport {
  floodMs: number
  offered: number
  written: number
  deferred: number
  answered: number
  counts: Record<string, number>
  latency: Record<string, { p50: number; p99: number }>
  closedByServer: number
  silent: number
}

function floodClient(url: string): Promise<FloodReport> {
  const args = [values.seconds, values.connections, values.rate].map(String)
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'bench', 'flood-client.ts'),
      url,
      `${Number(args[0]) * 1000}`,
      args[1]!,
      args[2]!,
      '5000',
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString()
  })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as FloodReport)
      else reject(new Error(`flood client exited ${code}: ${out}`))
    })
  })
}

async function main(): Promise<number> {
  const sim = await startSim()
  const gw = await startGateway(
    {
      log: { level: values['log-level'] },
      backends: { pools: [{ name: 'sim', models: ['*'], endpoints: [sim.url] }] },
      auth: { anonymous: 'bench' },
      server: { shed_event_loop_delay_ms: SHED_MS },
    },
    { probes: true },
  )
  try {
    const pid = gw.child.pid
    const idleRss = rssMb(pid)
    let flooding = true
    const rss: number[] = []
    // a kubelet's probe: one at a time, a fresh connection each
    const watch = (url: string, out: Probe[], sample: boolean) =>
      (async () => {
        while (flooding) {
          const t = performance.now()
          let error: string | undefined
          const r = await fetch(`${url}/healthz`, {
            signal: AbortSignal.timeout(30_000),
            headers: { connection: 'close' },
          }).catch((err: Error & { cause?: { code?: string; message?: string } }) => {
            error = err.cause?.code ?? err.cause?.message ?? err.message
            return undefined
          })
          await r?.text()
          out.push({ status: r?.status ?? 0, ms: performance.now() - t, ...(error ? { error } : {}) })
          if (sample) rss.push(rssMb(pid))
          await sleep(250)
        }
      })()
    const probes: Probe[] = []
    const adminProbes: Probe[] = []
    const watchers = [watch(gw.probeUrl!, probes, true), watch(gw.adminUrl, adminProbes, false)]
    log(`${CLIENTS} clients x ${RATE}/s for ${values.seconds} s`)
    const reports = await Promise.all(Array.from({ length: CLIENTS }, () => floodClient(gw.url)))
    flooding = false
    await Promise.all(watchers)
    const sum = (f: (r: FloodReport) => number) => reports.reduce((n, r) => n + f(r), 0)
    const counts: Record<string, number> = {}
    for (const r of reports) for (const [k, n] of Object.entries(r.counts)) counts[k] = (counts[k] ?? 0) + n
    const seconds = Math.max(...reports.map((r) => r.floodMs)) / 1000
    const m = await (await fetch(`${gw.adminUrl}/metrics`)).text()
    const shed = metric(m, 'slo_gateway_rejected_total', { reason: 'overloaded' })
    // recovery
    let lag = Number.POSITIVE_INFINITY
    for (let i = 0; i < 100 && lag > SHED_MS; i++) {
      lag = ((await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as { eventLoopLagMs: number })
        .eventLoopLagMs
      if (lag > SHED_MS) await sleep(100)
    }
    let inflight = -1
    for (let i = 0; i < 300 && inflight !== 0; i++) {
      inflight = ((await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as { inflight: number }).inflight
      if (inflight !== 0) await sleep(100)
    }
    const after = await Promise.all(
      Array.from({ length: 16 }, async () => {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'meta-llama/Llama-3.1-8B-Instruct',
            max_tokens: 4,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        })
        await res.text()
        const reason = res.headers.get('x-gateway-reject-reason')
        return reason === null ? String(res.status) : `${res.status} ${reason}`
      }),
    )
    const peak = Math.max(...rss)
    const slowest = (ps: { ms: number }[]) => round(Math.max(...ps.map((p) => p.ms)), 0)
    const byStatus = (ps: Probe[]) => {
      const out: Record<string, number> = {}
      for (const p of ps) {
        const k = p.error === undefined ? String(p.status) : `0 ${p.error}`
        out[k] = (out[k] ?? 0) + 1
      }
      return out
    }
    const target = Number(values['probe-target-ms'])
    const checks: [string, boolean][] = [
      [
        `every /healthz probe on the probe listener answered within ${target} ms`,
        probes.every((p) => p.status === 200 && p.ms <= target),
      ],
      ['RSS under idle + 300 MB', peak < idleRss + 300],
      ['no connection cut by the gateway', sum((r) => r.closedByServer) === 0],
      [
        'recovered: lag under the threshold, nothing in flight, 16 of 16 served',
        lag <= SHED_MS && inflight === 0 && after.every((s) => s === '200'),
      ],
    ]
    const q = (xs: number[], p: number) =>
      round([...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))] ?? Number.NaN, 0)
    const text = [
      '# A flood of the gateway itself',
      '',
      `${CLIENTS} load processes x ${RATE} requests/s (open loop, pipelined, ${values.connections} connections each) for ${values.seconds} s,`,
      `at one gateway process (log level ${values['log-level']}, \`shed_event_loop_delay_ms\` ${SHED_MS}) in front of one simulator process.`,
      `Load average at the end: ${loadAverage()}. Written ${new Date().toISOString()}.`,
      '',
      `- offered ${sum((r) => r.offered)} (${Math.round(sum((r) => r.offered) / seconds)}/s), written ${sum((r) => r.written)}, held back by TCP ${sum((r) => r.deferred)}`,
      `- answered ${sum((r) => r.answered)} (${Math.round(sum((r) => r.answered) / seconds)}/s): ${JSON.stringify(counts)}; /metrics counted ${shed} shed as overloaded`,
      `- latency at the clients (write to answer, ms): ${JSON.stringify(reports.map((r) => r.latency))}`,
      `- connections never answered: ${sum((r) => r.silent)} of ${CLIENTS * Number(values.connections)}; cut by the gateway: ${sum((r) => r.closedByServer)}`,
      `- /healthz on the probe listener (its own thread): ${probes.length} probes, answered ${JSON.stringify(byStatus(probes))} (0: no answer; 503: the event loop stalled past probe_stall_ms); p50 ${q(
        probes.map((p) => p.ms),
        0.5,
      )} ms, slowest ${slowest(probes)} ms`,
      `- /healthz on the admin listener (the event loop the flood keeps busy; information): ${adminProbes.length} probes, answered ${JSON.stringify(byStatus(adminProbes))}; p50 ${q(
        adminProbes.map((p) => p.ms),
        0.5,
      )} ms, slowest ${slowest(adminProbes)} ms`,
      `- gateway RSS: idle ${round(idleRss)} MB, peak ${round(peak)} MB`,
      `- after: lag ${lag} ms, in flight ${inflight}, 16 requests: ${JSON.stringify(after)}`,
      '',
      '| target | met |',
      '|---|---|',
      ...checks.map(([what, ok]) => `| ${what} | ${ok ? 'yes' : '**no**'} |`),
      '',
    ].join('\n')
    writeFileSync(values.out, text)
    process.stdout.write(text)
    return checks.every(([, ok]) => ok) ? 0 : 1
  } finally {
    await gw.child.stop()
    await sim.child.stop()
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`)
    process.exit(1)
  },
)
