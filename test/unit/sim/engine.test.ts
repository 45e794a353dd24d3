import { describe, expect, it } from 'vitest'
import { getMetricFormat } from '../../../src/sim/metric-format-registry.js'
import { loadProfile } from '../../../src/sim/profile-loader.js'
import { stepTimeMs } from '../../../src/sim/step-model.js'
import { drive, gaps, mean, promValue, testProfile } from './helpers.js'

describe('SimEngine on virtual time', () => {
  it("a single request's TTFT and TPOT match the step model (8b-h100 profile)", () => {
    const p = loadProfile('llama-3.1-8b-h100')
    const d = drive(p)
    const prompt = 1000
    const out = 50
    const { sink } = d.add(prompt, out)
    d.run()
    expect(sink.times).toHaveLength(out)
    const m = p.stepTime
    const ttftModel = stepTimeMs(m, { prefillTokens: prompt, decodeSeqs: 0, contextTokens: prompt })
    // Decode step k reads prompt + k tokens of context; the mean over k = 1..out-1.
    const tpotModel = m.baseMs + m.perDecodeSeqMs + m.perContextTokenMs * (prompt + out / 2)
    const ttft = sink.times[0]!
    const tpot = mean(gaps(sink.times))
    expect(Math.abs(ttft / ttftModel - 1)).toBeLessThan(0.05)
    expect(Math.abs(tpot / tpotModel - 1)).toBeLessThan(0.05)
    // and the model is the one the profile documents: ~32 ms TTFT for 1k tokens, ~6.5 ms TPOT
    expect(ttft).toBeGreaterThan(30)
    expect(ttft).toBeLessThan(34)
    expect(tpot).toBeGreaterThan(6.5)
    expect(tpot).toBeLessThan(6.7)
  })

  it('TPOT grows with the number of running sequences as the model says', () => {
    const p = testProfile({}, { base_ms: 5, per_decode_seq_ms: 0.1, per_context_token_ms: 0.001 })
    const measured: number[] = []
    for (const n of [1, 8, 32]) {
      const d = drive(p)
      const sinks = Array.from({ length: n }, () => d.add(100, 40).sink)
      d.run()
      // decode-only phase: tokens 2..40 of the first request
      const tpot = mean(gaps(sinks[0]?.times ?? []))
      const ctxPerSeq = 100 + 20 // mean context over the decode steps
      const model = 5 + 0.1 * n + 0.001 * n * ctxPerSeq
      expect(Math.abs(tpot / model - 1)).toBeLessThan(0.05)
      measured.push(tpot)
    }
    expect(measured[1]).toBeGreaterThan(measured[0]!)
    expect(measured[2]).toBeGreaterThan(measured[1]!)
  })

  it('chunks a long prompt over steps within max_num_batched_tokens', () => {
    const p = testProfile({ max_num_batched_tokens: 512 })
    const d = drive(p)
    const { sink } = d.add(1500, 2)
    expect(d.step()).toBe(true) // 512
    expect(d.step()).toBe(true) // 1024
    expect(sink.times).toHaveLength(0)
    expect(d.step()).toBe(true) // 1500: first token
    expect(sink.times).toHaveLength(1)
  })

  it('preempts the newest running request when KV runs out; every request still completes exactly', () => {
    // 32 blocks x 16 = 512 tokens of KV; 8 requests x (40 + 60) tokens need 56 blocks at the end.
    const p = testProfile({ num_gpu_blocks: 32, max_model_len: 512, max_num_seqs: 16 })
    const d = drive(p)
    const reqs = Array.from({ length: 8 }, () => d.add(40, 60))
    d.run()
    expect(d.engine.stats.preemptions).toBeGreaterThan(0)
    for (const { req, sink } of reqs) {
      expect(sink.times).toHaveLength(60)
      expect(sink.finish).toBe('length')
      expect(req.state).toBe('finished')
    }
    expect(reqs.some((r) => r.req.numPreemptions > 0)).toBe(true)
    expect(d.engine.kv.usedBlocks).toBe(0)
    expect(d.engine.stats.generationTokens).toBe(8 * 60)
  })

  it('kv_cache_usage_perc equals used blocks / total at every scrape', () => {
    const p = testProfile({ num_gpu_blocks: 48, max_model_len: 512 })
    const format = getMetricFormat('vllm')
    const d = drive(p, format.buckets(p))
    for (let i = 0; i < 6; i++) d.add(30 + 10 * i, 50)
    const e = d.engine
    let scrapes = 0
    const scrape = (): void => {
      const text = format.render({ modelName: 'm', engine: e, nowMs: d.now })
      expect(promValue(text, 'vllm:kv_cache_usage_perc')).toBeCloseTo(e.kv.usedBlocks / 48, 12)
      expect(promValue(text, 'vllm:num_requests_running')).toBe(e.numRunning)
      expect(promValue(text, 'vllm:num_requests_waiting')).toBe(e.numWaiting)
      scrapes++
    }
    for (;;) {
      scrape()
      const dur = e.beginStep(d.now)
      if (dur === null) break
      scrape() // mid-step
      d.now += dur
      e.finishStep(d.now)
    }
    expect(scrapes).toBeGreaterThan(50)
  })

  it("a disconnected request's blocks are freed at the next step", () => {
    const p = testProfile()
    const d = drive(p)
    const a = d.add(160, 100)
    const b = d.add(160, 100)
    for (let i = 0; i < 5; i++) d.step()
    const before = d.engine.kv.usedBlocks
    expect(before).toBe(2 * Math.ceil((160 + 5) / 16))
    d.engine.abort(a.req)
    expect(d.engine.kv.usedBlocks).toBe(before) // nothing happens until the next step
    d.step()
    expect(a.req.state).toBe('aborted')
    expect(d.engine.kv.usedBlocks).toBe(Math.ceil((160 + 6) / 16))
    expect(d.engine.numRunning).toBe(1)
    expect(d.engine.stats.finished.abort).toBe(1)
    const tokensA = a.sink.times.length
    d.run()
    expect(a.sink.times.length).toBe(tokensA)
    expect(b.sink.times).toHaveLength(100)
    expect(d.engine.kv.usedBlocks).toBe(0)
  })

  it('admits at most max_num_seqs and queues the rest FCFS', () => {
    const p = testProfile({ max_num_seqs: 4 })
    const d = drive(p)
    const reqs = Array.from({ length: 6 }, () => d.add(10, 5))
    d.step()
    expect(d.engine.numRunning).toBe(4)
    expect(d.engine.numWaiting).toBe(2)
    d.run()
    const firstTokens = reqs.map((r) => r.sink.times[0]!)
    expect(firstTokens[4]).toBeGreaterThan(firstTokens[3]!)
  })

  it('prefix caching: a repeated prompt hits the cache and skips most of its prefill', () => {
    const p = testProfile({ enable_prefix_caching: true })
    const d = drive(p)
    const hashes = Array.from({ length: 10 }, (_, i) => `h${i}`)
    const first = d.add(160, 2, { hashes })
    d.run()
    const t0 = d.now
    const second = d.add(160, 2, { hashes, arrival: t0 })
    d.run()
    const ttft1 = first.sink.times[0]!
    const ttft2 = second.sink.times[0]! - t0
    expect(second.req.cachedPromptTokens).toBe(144) // 9 of 10 blocks: the last one is recomputed
    expect(ttft2).toBeLessThan(ttft1)
    expect(d.engine.stats.prefixQueries).toBe(320)
    expect(d.engine.stats.prefixHits).toBe(144)
  })

  it('applies the time scale to step durations', () => {
    const p = testProfile()
    const d1 = drive(p)
    const d4 = drive(p, {}, 4)
    d1.add(100, 10)
    d4.add(100, 10)
    expect(d4.run()).toBeCloseTo(4 * d1.run(), 9)
  })
})
