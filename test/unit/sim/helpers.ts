import { SimEngine } from '../../../src/sim/engine.js'
import type { BucketSpec } from '../../../src/sim/engine-stats.js'
import { parseProfileText } from '../../../src/sim/profile-loader.js'
import type { SimProfile } from '../../../src/sim/profile-schema.js'
import { type FinishReason, SimRequest, type TokenSink } from '../../../src/sim/sim-request.js'

/** A profile for engine tests, with easy numbers; override any engine or step-time field. */
export function testProfile(
  engine: Partial<Record<string, number | boolean>> = {},
  step: Partial<Record<string, number>> = {},
): SimProfile {
  const e = {
    block_size: 16,
    num_gpu_blocks: 1024,
    max_num_seqs: 64,
    max_num_batched_tokens: 2048,
    max_model_len: 4096,
    enable_prefix_caching: false,
    ...engine,
  }
  const s = {
    base_ms: 5,
    per_prefill_token_ms: 0.02,
    per_decode_seq_ms: 0.1,
    per_context_token_ms: 0.001,
    ...step,
  }
  const yaml = [
    'name: test',
    'model: test/model',
    'engine:',
    ...Object.entries(e).map(([k, v]) => `  ${k}: ${v}`),
    'step_time:',
    ...Object.entries(s).map(([k, v]) => `  ${k}: ${v}`),
    'output_tokens: { distribution: fixed, tokens: 10 }',
  ].join('\n')
  return parseProfileText(yaml, 'test-profile')
}

/** Records every token's time and the finish reason. */
export class RecordingSink implements TokenSink {
  readonly times: number[] = []
  finish: FinishReason | null = null
  constructor(private readonly clockNow: () => number) {}
  onToken(_req: SimRequest, finish: FinishReason | null): void {
    this.times.push(this.clockNow())
    if (finish !== null) this.finish = finish
  }
}

export interface Driven {
  readonly engine: SimEngine
  now: number
  /** Runs steps back to back in virtual time until idle (or maxSteps); returns the end time. */
  run(maxSteps?: number): number
  /** Runs exactly one step (if there is work). */
  step(): boolean
  add(
    prompt: number,
    output: number,
    opts?: { hashes?: string[]; arrival?: number },
  ): { req: SimRequest; sink: RecordingSink }
}

/** An engine driven step by step on virtual time (no timers). */
export function drive(profile: SimProfile, buckets: BucketSpec = {}, timeScale = 1): Driven {
  const engine = new SimEngine({ profile, buckets, timeScale })
  let n = 0
  const d: Driven = {
    engine,
    now: 0,
    step() {
      const dur = engine.beginStep(d.now)
      if (dur === null) return false
      d.now += dur
      engine.finishStep(d.now)
      return true
    },
    run(maxSteps = 1_000_000) {
      for (let i = 0; i < maxSteps && d.step(); i++);
      return d.now
    },
    add(prompt, output, opts = {}) {
      const sink = new RecordingSink(() => d.now)
      const req = new SimRequest({
        id: `r${n++}`,
        promptTokens: prompt,
        targetOutput: output,
        finishReason: 'length',
        blockHashes: opts.hashes ?? [],
        sink,
        arrival: opts.arrival ?? d.now,
      })
      engine.submit(req)
      return { req, sink }
    },
  }
  return d
}

export function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length
}

/** Gaps between consecutive values. */
export function gaps(xs: readonly number[]): number[] {
  return xs.slice(1).map((x, i) => x - xs[i]!)
}

/** The value of the first sample of `name` in Prometheus text. */
export function promValue(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
  if (line === undefined) throw new Error(`no sample ${name}`)
  return Number(line.slice(line.lastIndexOf(' ') + 1))
}
