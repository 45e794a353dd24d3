/**
 * `npm run bench:overhead [-- --quick] [-- --rounds N] [-- --out FILE] [-- --no-build]`
 *
 * What the gateway costs on the request path, side by side with the trivial upstream
 * itself and with nginx and haproxy as plain reverse proxies, all in one run: closed-loop
 * and open-loop (1,000 req/s) small requests, SSE streams with per-chunk delays, CPU per
 * request, telemetry on versus off. Rounds rotate the targets; each figure is the median
 * over rounds, each ratio is computed within a round. Writes reports/overhead.md.
 */
import { spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Report } from '../src/loadgen/report.js'
import { measureAll, type Profile } from './measure.js'
import { writeResults } from './overhead-report.js'
import { buildForBench, loadAverage, pinClient, stopOnSignals, which } from './processes.js'
import {
  admissionWired,
  directTarget,
  startGateway,
  startHaproxy,
  startNginx,
  startUpstream,
  type Target,
  type Upstream,
} from './targets.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

const FULL: Profile = {
  rounds: 7,
  warmupMs: 200,
  initialWarmupRequests: 20_000,
  initialWarmupCapMs: 10_000,
  closedMs: 1_200,
  concurrency: 32,
  ratePerS: 1000,
  openMs: 2_000,
  streamConcurrency: 32,
  streamMs: 1_500,
  chunks: 20,
  intervalMs: 10,
}

const QUICK: Profile = {
  ...FULL,
  rounds: 5,
  warmupMs: 100,
  initialWarmupRequests: 10_000,
  initialWarmupCapMs: 5_000,
  closedMs: 500,
  openMs: 1_000,
  streamMs: 800,
}

const USAGE = `Usage: npm run bench:overhead -- [options]

  --quick        shorter slices and fewer rounds (about 1.5 min instead of about 4)
  --rounds N     rounds per phase (default 7; 5 with --quick)
  --out FILE     report file (default reports/overhead.md)
  --no-build     use dist/ and bench/dist/ as they are instead of running tsc first
  -h, --help     this help
`

const log = (s: string) => process.stderr.write(`[bench:overhead] ${s}\n`)

function version(cmd: string, args: string[]): string {
  // nginx -v prints to stderr, haproxy -v to stdout
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0]?.trim() ?? ''
}

interface Context {
  readonly pinned: boolean
  readonly skipped: readonly string[]
  readonly quick: boolean
  /** From the gateway's /admin/state; undefined when unknown. */
  readonly admission: boolean | undefined
  readonly admissionOff: boolean | undefined
}

function header(report: Report, p: Profile, c: Context): void {
  const { pinned, skipped, quick } = c
  const onOff = (a: boolean | undefined) => (a === undefined ? 'unknown' : a ? 'on' : 'off (a plain proxy)')
  const admission = `${onOff(c.admission)}; in the telemetry-off gateway: ${onOff(c.admissionOff)}`
  const cpu = cpus()
  const nginx = which('nginx')
  const haproxy = which('haproxy')
  report.heading('slo-gateway proxy overhead', 1)
  report.paragraph(
    [
      `Run ${new Date().toISOString()}${quick ? ' with `--quick`' : ''}. Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, Node ${process.version}` +
        `${nginx ? `, ${version(nginx, ['-v'])}` : ''}${haproxy ? `, ${version(haproxy, ['-v'])}` : ''}.`,
      '',
      '**How to read this.** The machine has 2 cores shared with other work, so absolute numbers',
      'move from run to run; what this report claims are differences and ratios measured side by side',
      `in this one run. Each phase (closed loop, open loop, streams) runs ${p.rounds} rounds; in each round every`,
      'target gets one slice, in an order rotated from round to round, so the slices compared with each',
      'other are seconds apart and share whatever else the machine was doing. Each figure below is the',
      'median over rounds of the per-slice value; each difference or ratio is computed within a round',
      '(e.g. gateway p99 minus direct p99 of the same round) and then the median over rounds taken.',
      '',
      pinned
        ? '**Pinning.** With `taskset`: every proxy on core 1; the trivial upstream and the load client on core 0.'
        : '**Pinning.** None (`taskset` missing or fewer than 2 cores): all processes share the cores.',
      'So in the closed loop, "direct" is bound by core 0 doing both the client and the upstream, and a',
      'proxy is bound by its own core 1 (see "proxy CPU busy"): the req/s ratio is not a pure cost ratio.',
      '',
      '**Targets.** direct = the trivial upstream (bench/trivial-upstream.ts, Node http); slo-gateway =',
      '`node dist/cli.js serve --upstream URL --set log.level=warn` (telemetry on, as shipped; admission',
      `control ${admission}, per its /admin/state); telemetry off = the same with`,
      '`--set telemetry.enabled=false` (no SLO metrics or windows; admission still on); nginx and haproxy =',
      'bench/peers/ configs (one worker / one thread, keep-alive both ways, no response buffering).',
      '',
      '**Workload.** Small chat completions (87-byte JSON body in, 260-byte JSON out).',
      `Closed loop: ${p.concurrency} workers for ${p.closedMs / 1000} s per slice.`,
      `Open loop: ${p.ratePerS} req/s for ${p.openMs / 1000} s per slice (${(p.ratePerS * p.openMs) / 1000} requests), latency from dispatch.`,
      `SSE: streams of ${p.chunks} chunks ${p.intervalMs} ms apart, ${p.streamConcurrency} at a time for ${p.streamMs / 1000} s per slice.`,
      `Each slice after a ${p.warmupMs} ms warm-up of its own; before the first round, every target gets`,
      `${p.initialWarmupRequests} small requests (at most ${p.initialWarmupCapMs / 1000} s) and 0.5 s of streams, discarded: the`,
      'gateway needs some thousands of requests before its CPU per request settles (JIT).',
      "CPU = the proxy process tree's on-CPU time (/proc/<pid>/task/*/schedstat) over the phase, divided by the",
      'requests (or chunks) served in it.',
      '',
      '**Noise.** "Others on core 0 / 1" = the share of each core that processes other than ours (other work',
      "on this shared machine) took during the slice, from /proc/stat minus our processes' schedstat: core 0",
      'minus the load client and the upstream, core 1 minus the proxy measured. Other work drifts to whichever',
      'core we leave idle (core 1 while "direct" runs, core 0 while a proxy saturates core 1), so compare a',
      "proxy's figures with its own noise columns, and read the medians, not single slices.",
      ...(skipped.length > 0 ? ['', `**Skipped:** ${skipped.join('; ')}.`] : []),
    ].join('\n'),
  )
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      out: { type: 'string', default: join(ROOT, 'reports/overhead.md') },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const rounds = values.rounds === undefined ? undefined : Number(values.rounds)
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 1))
    throw new RangeError(`--rounds: expected a positive integer, got '${values.rounds}'`)
  const profile: Profile = {
    ...(values.quick ? QUICK : FULL),
    ...(rounds !== undefined ? { rounds } : {}),
  }
  const { clientCore, otherCore: proxyCore } = pinClient()
  const pinned = clientCore !== undefined
  if (!values['no-build']) buildForBench(ROOT, log)

  const started = performance.now()
  const targets: Target[] = []
  const skipped: string[] = []
  let upstream: Upstream | undefined
  const stopAll = async () => {
    for (const t of targets.splice(0)) await t.stop()
    await upstream?.child.stop()
  }
  stopOnSignals(stopAll, log)
  try {
    log('starting the trivial upstream, the gateway (telemetry on and off), nginx, haproxy')
    upstream = await startUpstream(ROOT, clientCore, profile.chunks, profile.intervalMs)
    targets.push(directTarget(upstream))
    targets.push(await startGateway(ROOT, upstream, true, proxyCore))
    targets.push(await startGateway(ROOT, upstream, false, proxyCore))
    for (const [name, startPeer] of [
      ['nginx', startNginx],
      ['haproxy', startHaproxy],
    ] as const) {
      const t = await startPeer(ROOT, upstream, proxyCore)
      if (t === undefined) skipped.push(`${name}: binary not found`)
      else targets.push(t)
    }

    const loadBefore = loadAverage()
    const pinning =
      pinned && proxyCore !== undefined && clientCore !== undefined
        ? { proxyCore, clientCore, clientPids: [process.pid, upstream.child.pid] }
        : undefined
    const results = await measureAll(targets, profile, pinning, log)

    const report = new Report()
    const admissionOf = async (key: Target['key']) => {
      const t = targets.find((x) => x.key === key)
      return t === undefined ? undefined : admissionWired(t)
    }
    const [admission, admissionOff] = [await admissionOf('gateway'), await admissionOf('gateway-off')]
    header(report, profile, { pinned, skipped, quick: values.quick, admission, admissionOff })
    writeResults(report, results, profile)
    report.paragraph(
      `Wall time: ${((performance.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) before the rounds: ${loadBefore}; after: ${loadAverage()}.`,
    )
    report.write(values.out)
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
