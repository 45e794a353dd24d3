/**
 * `npm run bench:peers:overhead [-- --quick] [-- --targets a,b] [-- --sizes 1024,16384] ...`
 *
 * What a proxy costs on the request path, side by side in one run: the trivial upstream
 * directly, nginx, HAProxy, Portkey's AI gateway (@portkey-ai/gateway, a bench
 * devDependency) and slo-gateway with every feature on (bench/peers/gateway-all.yaml), at
 * request bodies of 1 KB, 16 KB and 200 KB; non-streamed and streamed; req/s at
 * saturation, p50/p99 at fixed rates, CPU per request, added time to first chunk and per
 * chunk. Rounds rotate the targets; figures are medians over rounds, differences and ratios
 * are computed within a round. Writes bench/results/peers-overhead.md.
 */
import { spawnSync } from 'node:child_process'
import { cpus, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { connect } from '../src/loadgen/load-client.js'
import { Report } from '../src/loadgen/report.js'
import { writeAcceptance } from './peers-acceptance.js'
import { measureSize, type PeersProfile, warmTarget } from './peers-measure.js'
import { PEERS_ORDER, type PeersResults, writePeersResults } from './peers-overhead-report.js'
import { buildForBench, loadAverage, pinClient, stopOnSignals, which } from './processes.js'
import {
  directTarget,
  portkeyVersion,
  startGatewayAll,
  startHaproxy,
  startNginx,
  startNodeFloor,
  startPortkey,
  startUpstream,
  type Target,
  type TargetKey,
  type Upstream,
} from './targets.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

const FULL: PeersProfile = {
  rounds: 3,
  warmupMs: 300,
  initialWarmupMs: 4_000,
  sliceMs: 1_500,
  concurrency: 32,
  rates: [100, 400],
  streamConcurrency: 32,
  streamRate: 50,
  chunks: 10,
  intervalMs: 2,
}

const QUICK: PeersProfile = {
  ...FULL,
  rounds: 1,
  warmupMs: 200,
  initialWarmupMs: 2_000,
  sliceMs: 1_000,
  rates: [200],
}

const SIZES = [1024, 16 * 1024, 200 * 1024]

const USAGE = `Usage: npm run bench:peers:overhead -- [options]

  --quick          one round, shorter slices, one fixed rate (about 2.5 min instead of about 8)
  --targets LIST   some of ${PEERS_ORDER.join(',')} (default all; direct is always run)
  --sizes LIST     request bodies in bytes (default ${SIZES.join(',')})
  --rates LIST     fixed rates of the open-loop slices, req/s (default 100,400; 200 with --quick);
                   a rate x body size over 64 MiB/s is skipped
  --before DIR     also run the build in DIR (its dist/cli.js) as target gateway-before
  --rounds N       rounds (default 3; 1 with --quick)
  --out FILE       report file (default bench/results/peers-overhead.md)
  --no-build       use dist/ and bench/dist/ as they are instead of running tsc first
  -h, --help       this help
`

const log = (s: string) => process.stderr.write(`[bench:peers:overhead] ${s}\n`)

function version(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0]?.trim() ?? ''
}

function list(v: string | undefined, name: string): string[] | undefined {
  if (v === undefined) return undefined
  const items = v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '')
  if (items.length === 0) throw new RangeError(`--${name}: expected a comma-separated list, got '${v}'`)
  return items
}

function header(
  r: Report,
  p: PeersProfile,
  quick: boolean,
  pinned: boolean,
  skipped: readonly string[],
): void {
  const cpu = cpus()
  const nginx = which('nginx')
  const haproxy = which('haproxy')
  const pk = portkeyVersion(ROOT)
  r.heading('Proxy overhead against peers: nginx, HAProxy, Portkey, slo-gateway', 1)
  r.paragraph(
    [
      `Run ${new Date().toISOString()}${quick ? ' with `--quick`' : ''}. Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}.`,
      `Versions: ${[nginx ? version(nginx, ['-v']) : 'nginx missing', haproxy ? version(haproxy, ['-v']) : 'haproxy missing', pk ? `@portkey-ai/gateway ${pk} (hono 4.9.7, @hono/node-server 1.13.5 by overrides)` : 'Portkey missing'].join('; ')}.`,
      'Seeds: none needed; every request of a slice is the same (its body padded to the size with fixed text).',
      '',
      '**Targets.** direct = bench/trivial-upstream.ts (Node http; streams of ' +
        `${p.chunks} chunks ${p.intervalMs} ms apart, each stamped with its write time); nginx and haproxy = bench/peers/ configs`,
      '(one worker / one thread, keep-alive both ways, no buffering; nginx keeps bodies up to 256 KiB in memory);',
      'Portkey = `node build/start-server.js --headless`, NODE_ENV=production, routed by `x-portkey-provider: openai` and',
      '`x-portkey-custom-host`; slo-gateway = bench/peers/gateway-all.yaml: API-key auth, a tenant with RPM/TPM/concurrency/daily',
      'limits, admission (prediction, queues, decode guard, prefix-cache pricing) and telemetry on.',
      pinned
        ? '**Pinning.** `taskset`: every proxy on core 1; the load client and the upstream on core 0.'
        : '**Pinning.** None (`taskset` missing or fewer than 2 cores).',
      '',
      `**Phases, per body size, per round, each target in turn (order rotated by round).** Saturation: closed loop of ${p.concurrency}`,
      `workers for ${p.sliceMs / 1000} s (one-token answers). Fixed rates: open loop at ${p.rates.join(' and ')} req/s for ${p.sliceMs / 1000} s each,`,
      `latency from dispatch. Stream saturation: ${p.streamConcurrency} concurrent streams for ${p.sliceMs / 1000} s. Streams at a fixed rate: ${p.streamRate}/s,`,
      'time to first chunk from dispatch, per-chunk delay from the upstream write stamp to the client. Each slice after a',
      `${p.warmupMs} ms warm-up of its own; each target first gets ${p.initialWarmupMs / 1000} s of small requests and half that of streams (JIT), discarded.`,
      `CPU = the proxy's process tree's on-CPU time (/proc schedstat) over the slice / requests served. ${p.rounds} round(s); figures are`,
      'medians over rounds; "added" = target minus direct within a round, then the median. The machine is shared: read ratios.',
      ...(skipped.length > 0 ? ['', `**Skipped:** ${skipped.join('; ')}.`] : []),
    ].join('\n'),
  )
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      targets: { type: 'string' },
      sizes: { type: 'string' },
      rates: { type: 'string' },
      before: { type: 'string' },
      rounds: { type: 'string' },
      out: { type: 'string', default: join(ROOT, 'bench/results/peers-overhead.md') },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const wanted = list(values.targets, 'targets') ?? [...PEERS_ORDER]
  for (const t of wanted)
    if (!PEERS_ORDER.includes(t as TargetKey))
      throw new RangeError(`--targets: unknown target '${t}' (known: ${PEERS_ORDER.join(', ')})`)
  const sizes = (list(values.sizes, 'sizes') ?? SIZES.map(String)).map(Number)
  if (sizes.some((s) => !(Number.isInteger(s) && s >= 256 && s <= 4 * 2 ** 20)))
    throw new RangeError(`--sizes: expected byte counts from 256 to 4 MiB, got '${values.sizes}'`)
  const rounds = values.rounds === undefined ? undefined : Number(values.rounds)
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 1))
    throw new RangeError(`--rounds: expected a positive integer, got '${values.rounds}'`)
  const rates = list(values.rates, 'rates')?.map(Number)
  if (rates?.some((r) => !(Number.isInteger(r) && r >= 1)))
    throw new RangeError(`--rates: expected requests per second, got '${values.rates}'`)
  const p: PeersProfile = {
    ...(values.quick ? QUICK : FULL),
    ...(rounds === undefined ? {} : { rounds }),
    ...(rates === undefined ? {} : { rates }),
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
    upstream = await startUpstream(ROOT, clientCore, p.chunks, p.intervalMs)
    targets.push(directTarget(upstream))
    const starters = {
      nginx: startNginx,
      haproxy: startHaproxy,
      portkey: startPortkey,
      'node-floor': startNodeFloor,
      'gateway-all': startGatewayAll,
    }
    for (const [key, startPeer] of Object.entries(starters)) {
      if (!wanted.includes(key)) continue
      log(`starting ${key}`)
      const t = await startPeer(ROOT, upstream, proxyCore)
      if (t === undefined)
        skipped.push(
          key === 'portkey'
            ? 'portkey: @portkey-ai/gateway not installed (npm install)'
            : `${key}: binary not found (apt-get install ${key})`,
        )
      else targets.push(t)
    }
    if (values.before !== undefined) {
      log(`starting gateway-before from ${values.before}`)
      targets.push(await startGatewayAll(ROOT, upstream, proxyCore, values.before))
    }
    const clients = new Map(
      targets.map((t) => [t.key, connect(t.origin, Math.max(64, p.concurrency, p.streamConcurrency))]),
    )
    const results: PeersResults = new Map()
    const loadBefore = loadAverage()
    try {
      for (const t of targets) {
        log(`warm-up ${t.key}`)
        await warmTarget(clients.get(t.key)!, t, p)
      }
      for (const size of sizes) {
        const byTarget = new Map(
          targets.map((t) => [
            t.key,
            { label: t.label, rounds: [] as Awaited<ReturnType<typeof measureSize>>[] },
          ]),
        )
        results.set(size, byTarget)
        for (let round = 0; round < p.rounds; round++) {
          for (let i = 0; i < targets.length; i++) {
            const t = targets[(i + round) % targets.length]!
            const s = await measureSize(clients.get(t.key)!, t, size, p)
            byTarget.get(t.key)!.rounds[round] = s
            log(
              `${size} B round ${round + 1}/${p.rounds} ${t.key}: ${s.satRps.toFixed(0)} req/s, ${s.streamsPerS.toFixed(0)} streams/s, ` +
                `first chunk p50 ${s.ttfcP50.toFixed(2)} ms, chunk p50 ${s.chunkP50.toFixed(2)} ms${s.failed > 0 ? `, FAILED ${s.failed}` : ''}`,
            )
          }
        }
      }
    } finally {
      await Promise.all([...clients.values()].map((c) => c.close()))
    }
    const report = new Report()
    header(report, p, values.quick, pinned, skipped)
    writeAcceptance(report, results, p.rates)
    writePeersResults(report, results, p.rates, p.streamRate)
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
