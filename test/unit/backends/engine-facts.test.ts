/**
 * EngineFacts (engine-facts.ts): what the gateway learns of an engine, each value with its
 * source, config first. The measured path on the gateway's own samples (fake times, no
 * sockets), and the engine-metric path on Prometheus text: a vLLM V1 exposition
 * (test/fixtures/metrics/vllm-v1-step-facts.txt) and the simulator's own vLLM /metrics
 * after it served requests, each through the vLLM adapter (adapters/step-facts.ts).
 */
import { describe, expect, it } from 'vitest'
import { vllmAdapter } from '../../../src/backends/adapters/vllm.js'
import { EngineFacts, type EngineFactsOptions, MIN_SAMPLES } from '../../../src/backends/engine-facts.js'
import type { BackendLoad } from '../../../src/backends/types.js'
import { SimEngine } from '../../../src/sim/engine.js'
import { vllmFormat } from '../../../src/sim/metric-formats/vllm.js'
import { loadProfile } from '../../../src/sim/profile-loader.js'
import { SimRequest } from '../../../src/sim/sim-request.js'
import { fixture } from './adapters/fixture.js'

const PRIORS = {
  stepMs: { value: 15, source: 'default_prior' },
  prefillTokensPerS: { value: 20_000, source: 'default_prior' },
} as const

function facts(opts: Partial<EngineFactsOptions> = {}): EngineFacts {
  return new EngineFacts({ engine: 'vllm', ...PRIORS, ...opts })
}

function parsed(text: string): BackendLoad {
  const load = vllmAdapter.parse(text)
  if (load === undefined) throw new Error('the vLLM adapter did not parse the text')
  return load
}

/** Prompts of 200..3,000 tokens, one at a time, on an engine of `msPerToken` and a 10 ms step, plus `delay(i)`. */
function serve(f: EngineFacts, msPerToken: number, delay: (i: number) => number, n = 15): void {
  for (let i = 0; i < n; i++) {
    const tokens = 200 + ((i * 7) % 15) * 200
    f.observePrefill(tokens, 15 + msPerToken * tokens + delay(i), true)
  }
}

describe('EngineFacts: sources', () => {
  it('starts from the priors, and says so', () => {
    const f = facts()
    expect(f.prefillTokensPerS()).toEqual(PRIORS.prefillTokensPerS)
    expect(f.stepMs()).toEqual(PRIORS.stepMs)
    expect(f.stepTokens()).toEqual({ value: 8192, source: 'default_prior' }) // vLLM V1's default
    expect(facts({ engine: 'tgi' }).stepTokens()).toEqual({ value: 4096, source: 'default_prior' })
    expect(f.kvCapacityTokens()).toBeUndefined()
    expect(f.maxNumSeqs()).toBeUndefined()
  })

  it('config overrides everything learned', () => {
    const f = facts({
      stepMs: { value: 12, source: 'config' },
      prefillTokensPerS: { value: 9_000, source: 'config' },
      stepTokens: 4_096,
      kvTokens: 100_000,
      maxNumSeqs: 64,
    })
    serve(f, 0.1, () => 0)
    for (let i = 0; i < 5; i++) f.observeStepWindow(30, 10)
    f.scraped(parsed(fixture('vllm-v1-step-facts.txt')))
    expect(f.prefillTokensPerS()).toEqual({ value: 9_000, source: 'config' })
    expect(f.stepMs()).toEqual({ value: 12, source: 'config' })
    expect(f.stepTokens()).toEqual({ value: 4_096, source: 'config' })
    expect(f.kvCapacityTokens()).toEqual({ value: 100_000, source: 'config' })
    expect(f.maxNumSeqs()).toEqual({ value: 64, source: 'config' })
  })

  it('its own samples win over the engine metrics once there are MIN_SAMPLES', () => {
    const f = facts()
    f.scraped(parsed(fixture('vllm-v1-step-facts.txt')))
    expect(f.prefillTokensPerS().source).toBe('engine_metric')
    serve(f, 0.1, () => 0, MIN_SAMPLES - 1)
    expect(f.prefillTokensPerS().source).toBe('engine_metric')
    serve(f, 0.1, () => 0, 1)
    expect(f.prefillTokensPerS()).toEqual({ value: expect.closeTo(10_000, -1), source: 'measured' })
  })
})

describe('EngineFacts: the measured prefill rate', () => {
  it('is the slope of the samples, their fixed cost aside', () => {
    const f = facts()
    serve(f, 0.13, () => 0)
    expect(f.prefillTokensPerS().value).toBeCloseTo(1000 / 0.13, 0)
  })

  it('holds when the first (shortest, cold) request and a few others were held up', () => {
    const f = facts()
    // the integration test's worst case: 350 ms on the first, tens of ms on a third of the rest
    serve(f, 0.13, (i) => (i === 0 ? 350 : i % 3 === 1 ? 40 + i * 5 : (i * 7) % 3))
    const v = f.prefillTokensPerS().value
    expect(Math.abs(v - 1000 / 0.13) / (1000 / 0.13)).toBeLessThan(0.03)
  })

  it('prefers the samples of requests that met no other prompt, when there are enough', () => {
    const f = facts()
    serve(f, 0.1, () => 0) // alone: 10,000 tokens/s
    // under load: counted tokens that did not share the step (twice the tokens, same time)
    for (let i = 0; i < 30; i++)
      f.observePrefill(2 * (200 + (i % 15) * 200), 15 + 0.1 * (200 + (i % 15) * 200))
    expect(f.prefillTokensPerS().value).toBeCloseTo(10_000, -1)
  })

  it('with prompts all of one length: time less 1.5 steps, per token', () => {
    const f = facts()
    for (let i = 0; i < 10; i++) f.observePrefill(1_000, 1.5 * 15 + 100 + (i % 2) * 20)
    expect(f.prefillTokensPerS()).toEqual({ value: expect.closeTo(10_000, -1), source: 'measured' })
  })

  it('ignores what is not a sample, and says nothing implausible', () => {
    const f = facts()
    f.observePrefill(0, 10)
    f.observePrefill(100, Number.NaN)
    f.observePrefill(-5, 10)
    expect(f.state()).toMatchObject({ prefillSamples: 0 })
    for (let i = 0; i < 10; i++) f.observePrefill(100 + i * 100, 10) // no slope: time does not grow
    expect(f.prefillTokensPerS().source).not.toBe('measured')
  })
})

describe('EngineFacts: the step time', () => {
  it('is the prior until MIN_WINDOWS windows, then the lower quartile of window pairs', () => {
    const f = facts()
    f.observeStepWindow(20, 10)
    f.observeStepWindow(20, 10)
    expect(f.stepMs().source).toBe('default_prior')
    // decode windows of 20 ms, and some with a prefill step in them (longer)
    for (const ms of [20, 20, 35, 20, 20, 40, 20, 20]) f.observeStepWindow(ms, 10)
    expect(f.stepMs()).toEqual({ value: 20, source: 'measured' })
  })

  it('a stall that bunches the chunks across a window boundary does not pull it low', () => {
    const f = facts()
    // each stall: one window ends on a long gap (mean 30 over 10 gaps), the next starts with
    // the bunched chunks (mean 10 over 10): the true step, 20 ms, is their pair's mean
    for (let i = 0; i < 8; i++) {
      f.observeStepWindow(30, 10)
      f.observeStepWindow(10, 10)
    }
    expect(f.stepMs().value).toBe(20)
  })

  it('the least step: only the windows of one or two streams, none until MIN_WINDOWS of them', () => {
    const f = facts()
    // a full batch's windows (30 ms steps, 20 streams) and windows of unknown streams never count
    for (let i = 0; i < 8; i++) f.observeStepWindow(30, 130, 20)
    for (let i = 0; i < 8; i++) f.observeStepWindow(30, 130)
    expect(f.leastStepMs()).toBeUndefined()
    f.observeStepWindow(12, 17, 1)
    f.observeStepWindow(12, 17, 1)
    expect(f.leastStepMs()).toBeUndefined()
    f.observeStepWindow(12, 34, 2)
    expect(f.leastStepMs()).toEqual({ value: 12, source: 'measured' })
    expect(f.stepMs().value).toBe(30) // every window's: the full batch's
    // 2.5 streams is not a small batch
    for (let i = 0; i < 8; i++) f.observeStepWindow(40, 50, 2.5)
    expect(f.leastStepMs()?.value).toBe(12)
    expect(f.state()).toMatchObject({ leastStepMs: { value: 12, source: 'measured' } })
  })
})

describe('EngineFacts: the engine-metric path (vLLM V1 histograms)', () => {
  it('reads the prefill rate, the step budget and the KV facts of a vLLM exposition', () => {
    const load = parsed(fixture('vllm-v1-step-facts.txt'))
    // summed over the two engine cores
    expect(load).toMatchObject({
      prefillSecondsSum: expect.closeTo(10, 9),
      prefillCount: 200,
      promptTokensSum: 360_000,
      prefixCacheHitsTotal: 40_000,
      largestStepTokens: 16_384,
      stepCeilingTokens: 16_384,
      blockSize: 16,
    })
    const f = facts({ stepMs: { value: 10, source: 'config' } })
    f.scraped(load)
    // 320,000 computed tokens in 10 s less one 10 ms step for each of 200 requests
    expect(f.prefillTokensPerS()).toEqual({ value: expect.closeTo(40_000, 6), source: 'engine_metric' })
    // three steps of more than 8,192 tokens: the budget is at least 16,384
    expect(f.stepTokens()).toEqual({ value: 16_384, source: 'engine_metric' })
    expect(f.kvCapacityTokens()).toEqual({ value: 2 * 27_500 * 16, source: 'engine_metric' })
    expect(f.blockSize()).toEqual({ value: 16, source: 'engine_metric' })
  })

  it('does not take a rate from short prompts, whose prefill time is mostly the fixed step', () => {
    const load = parsed(fixture('vllm-v1-step-facts.txt'))
    const f = facts({ stepMs: { value: 15, source: 'config' } })
    // a flood of 5-token prompts: 648 requests, 10.5 s of prefill (a 15 ms step and ~1 ms more each)
    f.scraped({
      ...load,
      prefillCount: 648,
      promptTokensSum: 3_240,
      prefillSecondsSum: 10.5,
      prefixCacheHitsTotal: 0,
    })
    expect(f.prefillTokensPerS()).toEqual(PRIORS.prefillTokensPerS)
    // the same requests with 2,000-token prompts: the tokens dominate, the rate is read
    f.scraped({
      ...load,
      prefillCount: 648,
      promptTokensSum: 1_296_000,
      prefillSecondsSum: 74.5,
      prefixCacheHitsTotal: 0,
    })
    expect(f.prefillTokensPerS()).toEqual({ value: expect.closeTo(20_000, -2), source: 'engine_metric' })
  })

  it('does not read the histograms while they hold too few requests, or disagree', () => {
    const text = fixture('vllm-v1-step-facts.txt')
    const few = text.replace(
      /(vllm:request_(prefill_time_seconds|prompt_tokens)_count\{engine="\d+"[^}]*\}) [\d.]+/g,
      '$1 2.0',
    )
    const f = facts()
    f.scraped(parsed(few))
    expect(f.prefillTokensPerS().source).toBe('default_prior')
    // prompt-token and prefill-time counts of different requests: not read
    const skew = text.replace(/(vllm:request_prompt_tokens_count\{engine="0"[^}]*\}) [\d.]+/, '$1 119.0')
    expect(parsed(skew).prefillSecondsSum).toBeUndefined()
  })

  describe('a step budget under the default (--max-num-batched-tokens 2048)', () => {
    /** A vLLM exposition whose steps never passed 2,048 tokens; `past`: steps past the last finite bucket. */
    const steps = (past = 0) =>
      [
        'vllm:num_requests_running{engine="0",model_name="m"} 0.0',
        'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0',
        ...[512, 1024, 2048, 4096, 8192, 16384].map(
          (le) =>
            `vllm:iteration_tokens_total_bucket{engine="0",le="${le}.0",model_name="m"} ${le <= 1024 ? 10 : 14}.0`,
        ),
        `vllm:iteration_tokens_total_bucket{engine="0",le="+Inf",model_name="m"} ${14 + past}.0`,
      ].join('\n')

    it('is read as the ceiling once a longer prompt was computed alone and two scrapes followed', () => {
      const f = facts()
      f.scraped(parsed(steps()))
      expect(f.stepTokens()).toEqual({ value: 8192, source: 'default_prior' }) // no evidence yet
      f.observePrefill(3_000, 90, true) // a 3,000-token prompt alone: more than one step of ≤ 2,048
      f.scraped(parsed(steps()))
      expect(f.stepTokens().source).toBe('default_prior') // this scrape may predate its steps
      f.scraped(parsed(steps()))
      expect(f.stepTokens()).toEqual({ value: 2048, source: 'engine_metric' })
    })

    it('is not lowered by a prompt that met others, one that fits the ceiling, or steps past the buckets', () => {
      const f = facts()
      f.observePrefill(3_000, 90, false)
      f.observePrefill(1_500, 50, true)
      for (let i = 0; i < 3; i++) f.scraped(parsed(steps()))
      expect(f.stepTokens().source).toBe('default_prior')
      f.observePrefill(3_000, 90, true)
      for (let i = 0; i < 3; i++) f.scraped(parsed(steps(1)))
      expect(parsed(steps(1)).stepCeilingTokens).toBeUndefined()
      expect(f.stepTokens().source).toBe('default_prior')
      // a configured budget wins
      const c = facts({ stepTokens: 8192 })
      c.observePrefill(3_000, 90, true)
      for (let i = 0; i < 3; i++) c.scraped(parsed(steps()))
      expect(c.stepTokens()).toEqual({ value: 8192, source: 'config' })
    })
  })

  it("learns the simulator's engine from its own vLLM /metrics, within 2% of the profile", () => {
    const profile = loadProfile('llama-3.1-8b-a100')
    const engine = new SimEngine({ profile, buckets: vllmFormat.buckets(profile) })
    let t = 0
    for (let i = 0; i < 12; i++) {
      const promptTokens = 300 + i * 250
      engine.submit(
        new SimRequest({
          id: `r${i}`,
          promptTokens,
          targetOutput: 3,
          finishReason: 'length',
          blockHashes: [],
          sink: { onToken: () => {} },
          arrival: t,
        }),
      )
      for (let d = engine.beginStep(t); d !== null; d = engine.beginStep(t)) {
        t += d
        engine.finishStep(t)
      }
    }
    const text = vllmFormat.render({ modelName: profile.model, engine, nowMs: t })
    const f = facts({ stepMs: { value: profile.stepTime.baseMs, source: 'config' } })
    f.scraped(parsed(text))
    const expected = 1000 / (profile.stepTime.perPrefillTokenMs + profile.stepTime.perContextTokenMs)
    const got = f.prefillTokensPerS()
    expect(got.source).toBe('engine_metric')
    expect(Math.abs(got.value - expected) / expected).toBeLessThan(0.02)
    expect(f.kvCapacityTokens()?.value).toBe(profile.engine.numGpuBlocks * profile.engine.blockSize)
    // no step came near the 8,192 budget: the default stands
    expect(f.stepTokens()).toEqual({ value: 8192, source: 'default_prior' })
  })
})
