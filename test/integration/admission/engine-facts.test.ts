/**
 * Engine facts learned at run time: the gateway in front of the real simulator (its HTTP
 * server on a real socket, time-scaled), with no estimator priors nor prefill budget in the
 * config. After a few streamed requests of varied prompt lengths, /admin/state shows the
 * engine's prefill rate and step time measured within 10% of the simulator's profile (its
 * per_prefill_token_ms and base_ms, scaled), its KV facts from cache_config_info, and the
 * prefill budget derived from them; on an a100 and on an h100 profile, whose facts differ.
 */
import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { type SimGateway, startSimGateway } from '../../helpers/sim-gateway.js'

const SCALE = 2

interface FactJson {
  value: number
  source: string
}

function profile(name: string): {
  engine: { block_size: number; num_gpu_blocks: number; max_num_batched_tokens: number }
  step_time: { base_ms: number; per_prefill_token_ms: number }
} {
  return parse(readFileSync(new URL(`../../../config/sim-profiles/${name}.yaml`, import.meta.url), 'utf8'))
}

/** One streamed chat completion of about `tokens` prompt tokens; resolves at its end. */
async function stream(gw: SimGateway, tokens: number, seed: number): Promise<number> {
  const content = `${seed} `.padEnd((tokens - 4) * 4, 'x')
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      stream: true,
      max_tokens: 30,
      messages: [{ role: 'user', content }],
    }),
  })
  await res.text()
  return res.status
}

async function engineFacts(gw: SimGateway): Promise<Record<string, FactJson>> {
  const s = (await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as {
    backends: { pools: { endpoints: { engineFacts: Record<string, FactJson> }[] }[] }
  }
  const facts = s.backends.pools[0]?.endpoints[0]?.engineFacts
  if (facts === undefined) throw new Error('no engineFacts in /admin/state')
  return facts
}

async function admissionState(gw: SimGateway): Promise<Record<string, unknown>> {
  const s = (await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as {
    admission: { pools: Record<string, unknown>[] }
  }
  return s.admission.pools[0] ?? {}
}

describe('engine facts converge on the simulated engine', () => {
  const gateways: SimGateway[] = []
  afterAll(async () => {
    for (const gw of gateways) await gw.close()
  })

  for (const name of ['llama-3.1-8b-a100', 'llama-3.1-8b-h100']) {
    it(`${name}: prefill rate and step time within 10% of the profile`, async () => {
      const p = profile(name)
      const gw = await startSimGateway({
        scale: SCALE,
        profile: name,
        priors: false,
        raw: { classes: { interactive: { slo: { ttft_ms: 2_000 * SCALE, tpot_ms: 200 * SCALE } } } },
      })
      gateways.push(gw)
      const before = await engineFacts(gw)
      expect(before.prefillTokensPerS?.source).toBe('default_prior')
      expect(before.stepMs?.source).toBe('default_prior')
      // the first requests, one at a time, prompts from 200 to 3,000 tokens
      const lengths = Array.from({ length: 15 }, (_, i) => 200 + ((i * 7) % 15) * 200)
      for (const [i, n] of lengths.entries()) expect(await stream(gw, n, i)).toBe(200)
      await new Promise((r) => setTimeout(r, 300 * SCALE)) // a scrape after the last request
      const facts = await engineFacts(gw)
      const rate = 1000 / p.step_time.per_prefill_token_ms / SCALE
      const step = p.step_time.base_ms * SCALE
      expect(facts.prefillTokensPerS?.source).toBe('measured')
      expect(
        Math.abs((facts.prefillTokensPerS?.value ?? 0) - rate) / rate,
        `rate ${JSON.stringify(facts)}`,
      ).toBeLessThan(0.1)
      expect(facts.stepMs?.source).toBe('measured')
      expect(
        Math.abs((facts.stepMs?.value ?? 0) - step) / step,
        `step ${JSON.stringify(facts)}`,
      ).toBeLessThan(0.1)
      // from cache_config_info
      expect(facts.blockSize).toEqual({ value: p.engine.block_size, source: 'engine_metric' })
      expect(facts.kvCapacityTokens).toEqual({
        value: p.engine.block_size * p.engine.num_gpu_blocks,
        source: 'engine_metric',
      })
      // the step budget: vLLM's default, what the profile has (no prompt was long enough to show it)
      expect(facts.stepTokens?.value).toBe(p.engine.max_num_batched_tokens)
      // the prefill budget follows: the step budget, at most half the TTFT objective of prefill
      const a = await admissionState(gw)
      const budgets = a.prefillBudget as Record<string, { tokens: number; bound: string; source: string }>
      const budget = Object.values(budgets)[0]
      const inTime = Math.floor(((facts.prefillTokensPerS?.value ?? 0) / 1000) * 2_000 * SCALE * 0.5)
      expect(budget?.tokens).toBe(Math.min(p.engine.max_num_batched_tokens, inTime))
      // and the estimator's priors are the learned ones
      const priors = (a.estimator as { priors: { stepMs: number; prefillTokensPerS: number } }).priors
      expect(Math.abs(priors.stepMs - step) / step, `priors ${JSON.stringify(priors)}`).toBeLessThan(0.1)
    }, 60_000)
  }
})
