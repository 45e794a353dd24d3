/**
 * The admission report's first part: how the bench was run, the workload, the simulator's
 * capacity and how it was measured. Everything a reader needs to redo or question the numbers.
 */

import { fmt, type Report } from '../src/loadgen/report.js'
import { type CapacityFacts, engineWorkMsPerS, heldCapacity, type SloCapacity } from './admission-capacity.js'
import { gatewayConfig } from './admission-child.js'
import type { BenchFile } from './admission-config.js'
import { pct } from './admission-report.js'
import { CONTROL_EVERY_MS, RETRY_SPACING_MS } from './admission-run.js'
import { type LengthMix, lognormalParams, sampleMean } from './admission-workload.js'

export interface SetupFacts {
  readonly title?: string
  readonly quick: boolean
  readonly scale: number
  readonly file: BenchFile
  readonly configPath: string
  readonly windows: BenchFile['run']['full']
  readonly cap: CapacityFacts
  readonly capRun: SloCapacity
  readonly batchRate: number
  readonly slo: { ttftMs: number; tpotMs: number }
  readonly cores: number
  readonly cpuModel: string
  readonly loadBefore: readonly number[]
  /** --gateway-set values. */
  readonly gatewaySets: readonly string[]
}

function mixText(mix: LengthMix): string {
  return mix
    .map((c) => {
      const p = lognormalParams(c)
      return `${fmt(c.weight, 2)} × LN(median ${c.median}, σ ${c.sigma}; μ ${fmt(p.mu, 2)}, mean ${fmt(p.mean, 0)}) in [${c.min}, ${c.max}]`
    })
    .join(' + ')
}

export function setupSection(report: Report, f: SetupFacts): void {
  const { file, scale, windows: w, cap } = f
  const g = gatewayConfig('http://sim', 'model', scale, undefined, undefined, f.gatewaySets)
  const gi = g.classes.interactive
  const gb = g.classes.batch
  report.heading(f.title ?? 'slo-gateway admission control under load', 1)
  report.paragraph(
    [
      `Run ${new Date().toISOString()}${f.quick ? ' with `--quick`' : ''}. Machine: ${f.cores} × ${f.cpuModel}, ` +
        `Node ${process.version}, shared with other work (load average before: ${f.loadBefore.map((v) => v.toFixed(2)).join(' ')}).`,
      `Workload file: \`${f.configPath}\` (seed ${file.seed}); simulator profile \`${file.profile}\`, one replica.`,
    ].join('\n'),
  )
  report.heading('How it was run')
  report.paragraph(
    [
      `**Time scale ${scale}.** The simulator runs every engine step ${scale}× slower than the modelled`,
      'GPU, and every time constant of the gateway is multiplied by the same factor: the interactive',
      `SLOs (TTFT ${gi?.slo.ttft_ms} ms, TPOT ${gi?.slo.tpot_ms} ms wall = ${f.slo.ttftMs} / ${f.slo.tpotMs} ms model), the`,
      `queue waits (interactive ${gi?.max_queue_wait_ms} ms), batch's E2E (${gb?.slo.e2e_ms} ms), the floor's window (${g.admission.min_share_window_ms} ms), the decode`,
      `guard's ITL time constant (${g.admission.itl_window_ms} ms), the probe interval (${g.admission.probe_interval_ms} ms),`,
      `and the pool's staleness limit (${g.backends.pools[0]?.stale_after_ms} ms). Everything else is the shipped default (margin`,
      `${g.admission.margin * 100}%, KV limits 0.80/0.70, the interactive degrade ladder \`cap_max_tokens: 512\`). So the run is the`,
      "real-time workload, slowed down. The estimator's priors and the prefill budget are not configured: the gateway",
      'learns them from the engine (engine facts), and what it learns from the time-scaled engine comes out scaled',
      `by itself. Until then it runs on the shipped priors (step ${g.admission.estimator.step_ms} ms, ${fmt(g.admission.estimator.prefill_tokens_per_s, 0)} prefill tokens/s) in wall`,
      scale === 1
        ? 'time, which is model time at scale 1. What it learned is'
        : `time, ${scale}× too fast in model time: the cold start is harder than on a real server. What it learned is`,
      "under each workload's *Engine facts learned*, from /admin/state.",
      ...(f.gatewaySets.length === 0
        ? []
        : [
            `Set with \`--gateway-set\` for every gateway run (not time-scaled): ${f.gatewaySets.map((s) => `\`${s}\``).join(', ')}.`,
          ]),
      '',
      '**All latencies and rates in this report are in model time** (wall ÷ scale): they read as a real',
      'server would show them and compare directly with the 500 ms / 50 ms SLOs.',
      '',
      '**Processes.** The load generator (this process), the simulator and the gateway each run in their',
      'own Node process (bench/admission-child.ts, under tsx), unpinned on the 2 cores. The load',
      'generator parses every streamed token of hundreds of concurrent streams; in the same event loop as the',
      'simulator it would delay engine steps and token timestamps, and in the same loop as the gateway it',
      'would delay admission decisions: separate processes keep each one on its own event loop.',
      "The load generator reads each response through undici's dispatch handler (callbacks on the",
      "socket's reads, no body stream), the cheapest client undici offers, and sends batch from a worker",
      'thread of its own (two event loops, as two client machines would be), so the tokens of the flood do',
      "not delay the reading, and the timing, of an interactive response (a refusal's among them). The",
      "simulator's step lag (how late each step ended against its schedule) and the load generator's send",
      'lag and event-loop delay are reported per run as the check that the CPU did not distort the results; all wall ms, to',
      `compare with steps of ~${fmt(6.5 * scale, 0)}–${fmt(40 * scale, 0)} ms wall.`,
      '',
      `**Runs.** Each level (segment): ${w.settle_s} s settling (not judged), ${w.measure_s} s measured window${w.min_requests === undefined ? '' : ` (longer where ${w.min_requests} interactive requests take longer to arrive)`} (requests`,
      `arriving in it are judged; tokens reaching the client in it are throughput), ${w.tail_s} s tail (the load goes`,
      'on; measured requests are judged on what they streamed until its end, the *horizon*). Directly, each',
      'level is a run of its own from an idle simulator, cut off after its tail: the flood grows the',
      "simulator's queue without bound at every level, so there is no steady state, and a fresh start is the",
      `direct path's best case. Through the gateway, one ${w.warmup_s} s warm-up at 1× (JIT, connections, the`,
      "estimator's calibration from its priors, the flood filling the server) and then the levels back to",
      'back in one run: the gateway is stable, so this measures its steady state, and its estimator keeps',
      'learning across levels as in production. Both paths use one simulator process (direct first); every',
      'request has a unique prompt prefix (no prefix-cache hits). To separate the effects, `--batch-load 0`',
      'runs the same levels without the flood and `--only direct|gateway` one path.',
      '',
      '**Requests.** `POST /v1/chat/completions`, `stream: true`, `stream_options.include_usage`,',
      '`ignore_eos: true` (output = `max_tokens`), one user message; batch requests carry `x-priority: batch`.',
      'TTFT = dispatch to the first SSE event with a choice, TPOT = (last − first token) / (tokens − 1),',
      'both measured by the load generator. Estimator error = |`x-gateway-predicted-ttft-ms` − measured TTFT|',
      '/ measured TTFT per admitted streamed request (both wall ms, so the ratio needs no scaling).',
      'A refusal on arrival is timed from the send to its response headers (wall ms: p99, the target, and p50 and',
      'p90, since with a few dozen refusals in a window the p99 is about the slowest one); its row also says how',
      "long the gateway held it (its `server-timing`), the wait from the request's write on an already open",
      "connection (the load generator's dispatch and connect left out), how many opened a connection first",
      'and their p99 (the gateway accepts a connection in one turn of its event loop and reads it in the next),',
      "and both processes' event-loop delay p99 in the window: what a response waits behind at each end;",
      `and a control: in the same window the interactive thread also sends a ~1 KB POST every ${CONTROL_EVERY_MS} ms to a`,
      'Node server (a process of its own, bench/admission-child.ts `control`) that reads the body and answers',
      '503 at once, so its p99 is what a refusal takes on this machine under this load with no gateway work.',
      "Retry-After, measured at the client: an interactive refusal in a level's window that carries a",
      `\`retry-after-ms\` (the gateway's) is sent again, the same request, after that wait (as the \`openai\``,
      'client does) or, every other one, after half of it, at most one every ' +
        `${RETRY_SPACING_MS} ms wall (a few per window, not every refused client's return: the generic`,
      "proxies' runs have none) and only where its whole wait ends within its level (before the tail's end;",
      'both kinds drawn from the same refusals, so the half waits are not the shorter ones). A retry',
      'is judged on everything it streamed until the run is cut off; retries count in no other figure. If the',
      "gateway's wait is honest, most retries after it are admitted and meet their objectives; if it is too long,",
      'the retries after half of it fare as well.',
    ].join('\n'),
  )
  report.heading('Workload')
  const imPrompt = sampleMean(file.interactive.prompt_tokens, 11)
  const imOut = sampleMean(file.interactive.output_tokens, 12)
  const bmPrompt = sampleMean(file.batch.prompt_tokens, 13)
  const bmOut = sampleMean(file.batch.output_tokens, 14)
  report.table(
    ['class', 'arrivals', 'prompt tokens (mix of lognormals)', 'mean', 'output tokens', 'mean'],
    [
      [
        'interactive',
        `Poisson, level × ${fmt(cap.interactiveRps)} req/s`,
        mixText(file.interactive.prompt_tokens),
        fmt(imPrompt, 0),
        mixText(file.interactive.output_tokens),
        fmt(imOut, 0),
      ],
      [
        'batch (flood)',
        `Poisson, ${fmt(f.batchRate)} req/s at every level (${fmt(f.batchRate / cap.batchSat.requestsPerS)} × batch saturation)`,
        mixText(file.batch.prompt_tokens),
        fmt(bmPrompt, 0),
        mixText(file.batch.output_tokens),
        fmt(bmOut, 0),
      ],
    ],
  )
  report.paragraph(
    'Each class is one seeded sequence of requests (lengths and unit-rate gaps); a level divides the gaps by ' +
      'its rate. So request k of a class has the same lengths at every level and on both paths.',
  )
  report.heading('Capacity (how "1×" was found)')
  const probes = f.capRun.probes
    .map((p) => `${fmt(p.rate, 2)} → ${(p.attainment * 100).toFixed(1)}%`)
    .join('; ')
  report.paragraph(
    [
      "Measured on the simulator's own engine (`SimEngine`: the scheduler, KV manager and step-time model the",
      'served simulator runs) on virtual time, with the same seeded interactive stream, served FCFS as the',
      'simulator serves it without a gateway. No HTTP, no timers, no CPU noise; deterministic.',
      '',
      `- **Interactive capacity (1×) = ${fmt(cap.interactiveRps, 2)} req/s**: the highest Poisson rate of the interactive`,
      `  stream alone at which ≥ ${file.capacity.attainment * 100}% of requests meet TTFT ≤ ${f.slo.ttftMs} ms and TPOT ≤ ${f.slo.tpotMs} ms`,
      `  (${file.capacity.probe_s} s of arrivals per probe, first 10% not counted; bisection to 2%). Probes (req/s → attainment): ${probes}.`,
      `  ${file.capacity.attainment * 100}% is DistServe's goodput definition, the one \`plan\` and \`bench --find-max-goodput\` use. (Until`,
      '  2026-12-03 this bench used 99%, which on a slow profile measured the queueing tail of its long prompts, not its load:',
      '  on the 70b profile 1× was 1.09 req/s, where the server alone still met both SLOs for 96.6% of requests at 2 req/s and',
      '  served the most good requests/s near 6 req/s; its "4×" was not an overload.)',
      `- Saturation of each class alone (a standing backlog of ${file.capacity.backlog} requests, FCFS, throughput between the`,
      `  20th and 80th percentile of completions): interactive ${fmt(cap.interactiveSat.requestsPerS, 1)} req/s =`,
      `  ${fmt(cap.interactiveSat.promptTokS, 0)} prompt tok/s, ${fmt(cap.interactiveSat.outputTokensPerS, 0)} output tok/s, ${fmt(engineWorkMsPerS(cap.stepTime, cap.interactiveSat), 0)} ms of engine work per s;`,
      `  batch ${fmt(cap.batchSat.requestsPerS, 1)} req/s = ${fmt(cap.batchSat.promptTokS, 0)} prompt tok/s, ${fmt(cap.batchSat.outputTokensPerS, 0)} output tok/s, ${fmt(engineWorkMsPerS(cap.stepTime, cap.batchSat), 0)} ms of work per s.`,
      `- **Capacity interactive leaves to batch** at a level = batch saturation × (h − u). u = the engine work of the`,
      '  interactive tokens the server produced in the window ÷ the engine work of interactive saturation, both by',
      "  the profile's step-time model without the per-step base: prompt tokens at the prefill and context cost,",
      '  every later output token at the per-sequence cost and its context read (prompt tokens alone would miss',
      '  decode work: admission favours short prompts, so admitted interactive carries more output per prompt',
      `  token than its stream). h = ${pct(heldCapacity(cap))}: a server that serves interactive within its TPOT objective`,
      `  runs steps of at most ${f.slo.tpotMs} ms, each paying the ${fmt(cap.stepTime.baseMs, 1)} ms base (${pct(cap.stepTime.baseMs / f.slo.tpotMs)} of its time),`,
      `  where batch saturation's ${fmt(cap.batchSat.stepMs, 0)} ms steps pay ${pct(cap.stepTime.baseMs / cap.batchSat.stepMs)}; h is the capacity such a server keeps,`,
      '  (1 − base / objective) ÷ (1 − base / saturation step). The report also gives the ratio against FCFS',
      '  saturation (h = 1), the throughput of a server that serves interactive at no TPOT objective at all.',
    ].join('\n'),
  )
}
