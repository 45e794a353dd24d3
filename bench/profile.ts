/**
 * `npm run bench:profile [-- --size BYTES] [-- --stream] [-- --seconds S] [-- --rate R] [-- --gc] [-- --root DIR]`
 *
 * Where the gateway's CPU goes on the request path: the trivial upstream and slo-gateway
 * with every feature on (bench/peers/gateway-all.yaml) under `node --cpu-prof` (or
 * `--trace-gc`), an open loop of chat requests of one body size at a fixed rate, then a
 * table of the profile's self time by function and by source file, per request. The
 * numbers come from V8's sampling profiler (`--cpu-prof-interval`, 1 ms unless `--interval`
 * says otherwise); read them as shares, not as exact costs. `--root DIR` profiles another
 * build (DIR/dist/cli.js), for a before/after. Writes the .cpuprofile and the summary under
 * reports/profile/.
 *
 * The gateway is pinned to a core of its own, but not V8's sampling thread
 * (`v8:ProfEvntProc`): on the gateway's core it could take a sample only when the main
 * thread let go of the core, so a busy main thread was sampled as idle (pinned with it, the
 * profile saw 44 of the 282 µs a request the main thread spent on the CPU at 1,000 req/s).
 * It runs on the load client's core instead. The summary prints both figures: the
 * profile's busy samples and the main thread's time on the CPU (/proc schedstat), per
 * request; they should agree within the sampling error.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { closedLoop, connect, openLoop, succeeded } from '../src/loadgen/load-client.js'
import { chatBody } from './peers-measure.js'
import { buildForBench, freePort, pinClient, pinThreads, start, threadCpuUs, waitReady } from './processes.js'
import { GATEWAY_ALL_KEY, render, startUpstream } from './targets.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const log = (s: string) => process.stderr.write(`[bench:profile] ${s}\n`)

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  hitCount?: number
}
interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** The monotonic clock V8 stamps its samples with, in µs. */
const monoUs = () => Number(process.hrtime.bigint() / 1000n)

/**
 * Self time (µs) by key, from the samples and their time deltas, of the samples taken in
 * [fromUs, toUs] (the measured window; CLOCK_MONOTONIC, the same in every process). Idle
 * samples are left out.
 */
function selfTimes(
  p: CpuProfile,
  key: (f: CallFrame) => string,
  fromUs: number,
  toUs: number,
): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const out = new Map<string, number>()
  let at = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0
    const node = byId.get(p.samples[i] ?? -1)
    const dt = p.timeDeltas[i + 1] ?? 0
    if (node === undefined || at < fromUs || at > toUs || node.callFrame.functionName === '(idle)') continue
    const k = key(node.callFrame)
    out.set(k, (out.get(k) ?? 0) + dt)
  }
  return out
}

function place(url: string): string {
  if (url === '') return '(native / V8)'
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)
  if (m) return `npm:${m[1]}`
  if (url.startsWith('node:')) return url
  const d = url.indexOf('/dist/')
  return d >= 0 ? url.slice(d + 1) : basename(url)
}

/** Whether the profile saw the main thread's time on the CPU (within a third either way). */
function sampleCheck(sampledUs: number, cpuUs: number): string {
  const ratio = sampledUs / cpuUs
  if (ratio > 2 / 3 && ratio < 4 / 3) return `the profile saw ${(100 * ratio).toFixed(0)}% of it`
  return `the profile saw ${(100 * ratio).toFixed(0)}% of it: NOT TO BE TRUSTED, the sampler missed or doubled busy time`
}

function table(m: Map<string, number>, requests: number, top: number): string {
  const total = [...m.values()].reduce((a, b) => a + b, 0)
  const rows = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
  const lines = ['| where | µs/request | share |', '| --- | ---: | ---: |']
  for (const [k, us] of rows)
    lines.push(
      `| ${k.replaceAll('|', '\\|')} | ${(us / requests).toFixed(1)} | ${((100 * us) / total).toFixed(1)}% |`,
    )
  lines.push(`| (all samples) | ${(total / requests).toFixed(1)} | 100% |`)
  return lines.join('\n')
}

/** Pauses by kind from --trace-gc lines (`... ms: Scavenge 10.1 (12.3) -> 9.8 (13.3) MB, 0.85 / 0.00 ms ...`). */
function gcSummary(
  lines: readonly string[],
  served: number,
  size: number,
  stream: boolean,
  rate: number,
  s: number,
) {
  const kinds = new Map<string, { n: number; ms: number; max: number }>()
  for (const l of lines) {
    const m = l.match(/ ms: ([A-Za-z-]+)[^,]*, ([\d.]+) \/ /)
    if (m === null) continue
    const k = kinds.get(m[1]!) ?? { n: 0, ms: 0, max: 0 }
    const pause = Number(m[2])
    k.n++
    k.ms += pause
    k.max = Math.max(k.max, pause)
    kinds.set(m[1]!, k)
  }
  const rows = [...kinds.entries()].map(
    ([kind, k]) =>
      `| ${kind} | ${k.n} | ${(k.ms / k.n).toFixed(2)} | ${k.max.toFixed(2)} | ${((1000 * k.ms) / served).toFixed(1)} |`,
  )
  return [
    `# GC: ${size} B bodies${stream ? ', streamed' : ''}, ${rate} req/s for ${s} s (${served} requests)`,
    '',
    '| kind | pauses | mean ms | max ms | pause µs/request |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n')
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: 'string', default: '1024' },
      stream: { type: 'boolean', default: false },
      seconds: { type: 'string', default: '10' },
      rate: { type: 'string', default: '1000' },
      gc: { type: 'boolean', default: false },
      top: { type: 'string', default: '30' },
      interval: { type: 'string', default: '1000' },
      out: { type: 'string', default: join(ROOT, 'reports/profile') },
      root: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
    },
  })
  const size = Number(values.size)
  const seconds = Number(values.seconds)
  const rate = Number(values.rate)
  const { clientCore, otherCore } = pinClient()
  if (!values['no-build']) buildForBench(ROOT, log)
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'))
  const upstream = await startUpstream(ROOT, clientCore, 10, 2)
  const [port, admin] = [await freePort(), await freePort()]
  const conf = render(readFileSync(join(ROOT, 'bench/peers/gateway-all.yaml'), 'utf8'), {
    PORT: port,
    ADMIN_PORT: admin,
    UPSTREAM: upstream.origin,
  })
  writeFileSync(join(dir, 'gateway.yaml'), conf)
  const flags = values.gc
    ? ['--trace-gc']
    : ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', values.interval]
  const child = start(
    'gateway',
    process.execPath,
    [...flags, join(values.root ?? ROOT, 'dist/cli.js'), 'serve', '--config', join(dir, 'gateway.yaml')],
    otherCore,
  )
  // --trace-gc: every line of the measured window (the child keeps only its last lines)
  const gcLines: string[] = []
  let measuring = false
  child.proc.stdout?.on('data', (b: Buffer) => {
    if (measuring) for (const l of b.toString().split('\n')) if (l.includes(' ms: ')) gcLines.push(l)
  })
  const origin = `http://127.0.0.1:${port}`
  const client = connect(origin, 64)
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${GATEWAY_ALL_KEY}` }
  const request = {
    path: '/v1/chat/completions',
    body: chatBody(size, values.stream, 10),
    headers,
    ...(values.stream ? { stream: true } : {}),
  }
  let served = 0
  let fromUs = 0
  let toUs = 0
  let mainCpuUs = 0
  try {
    await waitReady(child, async () => {
      const r = await closedLoop({ client, request, concurrency: 1, durationMs: 50 })
      return r.records.some(succeeded)
    })
    // the sampler off the gateway's core (see the top of this file)
    // (one per thread that runs JavaScript: the main thread's and any worker's)
    if (!values.gc && clientCore !== undefined && pinThreads(child.pid, 'v8:ProfEvntProc', clientCore) === 0)
      log("V8's sampling thread not found: the profile may see a busy main thread as idle")
    log(`warm-up, then ${seconds} s at ${rate} req/s, ${size} B bodies${values.stream ? ', streamed' : ''}`)
    await closedLoop({ client, request, concurrency: 16, durationMs: 3_000 })
    const cpuBefore = threadCpuUs(child.pid, child.pid)
    fromUs = monoUs()
    measuring = true
    const r = await openLoop({ client, request, ratePerS: rate, durationMs: seconds * 1000 })
    measuring = false
    toUs = monoUs()
    mainCpuUs = threadCpuUs(child.pid, child.pid) - cpuBefore
    served = r.records.filter(succeeded).length
    log(`${served} of ${r.records.length} served`)
  } finally {
    await client.close()
    await child.stop()
    await upstream.child.stop()
  }
  mkdirSync(values.out, { recursive: true })
  const tag = `${size}${values.stream ? '-stream' : ''}`
  if (values.gc) {
    writeFileSync(join(values.out, `gc-${tag}.txt`), `${gcLines.join('\n')}\n`)
    const text = `${gcSummary(gcLines, served, size, values.stream, rate, seconds)}\n`
    writeFileSync(join(values.out, `gc-${tag}.md`), text)
    process.stdout.write(text)
  } else {
    // the main thread's (CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile, thread 0), not a worker's
    const file = readdirSync(dir).find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f))
    if (file === undefined) throw new Error(`no .cpuprofile in ${dir}: ${child.output()}`)
    const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile
    const top = Number(values.top)
    const fn = selfTimes(
      p,
      (f) => `${f.functionName || '(anonymous)'} ${place(f.url)}:${f.lineNumber + 1}`,
      fromUs,
      toUs,
    )
    const files = selfTimes(p, (f) => place(f.url), fromUs, toUs)
    const sampledUs = [...files.values()].reduce((a, b) => a + b, 0)
    const text = [
      `# Profile: ${size} B bodies${values.stream ? ', streamed' : ''}, ${rate} req/s for ${seconds} s`,
      '',
      `Samples of the open loop only (${((toUs - fromUs) / 1000).toFixed(0)} ms, idle left out); per request = self time / the ${served} requests served in it.`,
      '',
      `Check: the profile's busy samples come to ${(sampledUs / served).toFixed(1)} µs a request; the main thread was on the CPU ${(mainCpuUs / served).toFixed(1)} µs a request (/proc schedstat, same window): ${sampleCheck(sampledUs, mainCpuUs)}.`,
      '',
      '## By source file',
      '',
      table(files, served, top),
      '',
      '## By function',
      '',
      table(fn, served, top),
      '',
    ].join('\n')
    writeFileSync(join(values.out, `profile-${tag}.md`), text)
    writeFileSync(join(values.out, `profile-${tag}.cpuprofile`), JSON.stringify(p))
    process.stdout.write(text)
  }
  rmSync(dir, { recursive: true, force: true })
}

main().catch((err: unknown) => {
  log(`failed: ${(err as Error).stack ?? String(err)}`)
  process.exitCode = 1
})
