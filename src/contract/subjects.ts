/**
 * The pools doctor judges, each with its engine facts: read live from its servers (unless
 * offline), else from its config and a simulator profile (the one named, the built-in
 * simulator's, or the one profile whose model the pool serves).
 */
import { readdirSync } from 'node:fs'
import { type GatewayConfig, type PoolConfig, poolSchema } from '../config/schema.js'
import { loadProfile, PROFILES_DIR } from '../sim/profile-loader.js'
import type { SimProfile } from '../sim/profile-schema.js'
import { type LiveFacts, mergeFacts } from './engine-facts.js'
import type { Finding, PoolSubject } from './finding.js'
import { readFacts } from './read-facts.js'
import { priorsCost, profileCost } from './step-cost.js'

export interface SubjectOptions {
  /** Do not contact the servers. */
  readonly offline: boolean
  /** A profile (name or file) whose step model and limits apply to every pool. */
  readonly profile?: string | undefined
  readonly timeoutMs: number
}

let profiles: SimProfile[] | undefined
function shippedProfiles(): SimProfile[] {
  profiles ??= readdirSync(PROFILES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => loadProfile(f.replace(/\.yaml$/, '')))
  return profiles
}

/** The one shipped profile of a model the pool serves, if exactly one matches. */
function matchingProfile(pool: PoolConfig): SimProfile | undefined {
  const names = new Set([...pool.models, ...pool.aliases, ...(pool.served_model ? [pool.served_model] : [])])
  const found = shippedProfiles().filter((p) => names.has(p.model))
  return found.length === 1 ? found[0] : undefined
}

interface PoolEntry {
  readonly pool: PoolConfig
  readonly path: string
  readonly profile: SimProfile | undefined
  readonly simulated: boolean
}

function poolEntries(config: GatewayConfig, named: SimProfile | undefined): PoolEntry[] {
  const sim = config.simulator
  const simProfile = sim.enabled ? loadProfile(sim.profile) : undefined
  const pools = config.backends.pools
  if (pools.length === 0 && simProfile !== undefined) {
    const pool = poolSchema.parse({ name: 'sim', models: [simProfile.model, '*'] })
    return [{ pool, path: 'simulator', profile: named ?? simProfile, simulated: true }]
  }
  return pools.map((pool, i) => {
    const simulated = i === 0 && simProfile !== undefined && pool.endpoints.length === 0 && !pool.discovery
    const profile = named ?? (simulated ? simProfile : matchingProfile(pool))
    return { pool, path: `backends.pools[${i}]`, profile, simulated }
  })
}

export async function buildSubjects(
  config: GatewayConfig,
  opts: SubjectOptions,
): Promise<{ pools: PoolSubject[]; infos: Finding[] }> {
  const named = opts.profile === undefined ? undefined : loadProfile(opts.profile)
  const infos: Finding[] = []
  const pools: PoolSubject[] = []
  for (const e of poolEntries(config, named)) {
    const { pool, path } = e
    let live: LiveFacts | undefined
    if (!opts.offline && !e.simulated && pool.endpoints.length > 0) {
      const reasons: string[] = []
      for (const url of pool.endpoints) {
        const r = await readFacts(url, pool.engine, pool.metrics_path, opts.timeoutMs)
        if (r.ok) {
          live = r.facts
          break
        }
        reasons.push(r.reason)
      }
      if (live === undefined)
        infos.push({
          id: 'facts-unavailable',
          severity: 'info',
          pool: pool.name,
          path: `${path}.endpoints`,
          title: `pool ${pool.name}: no server answered; judged from the config${e.profile ? ` and profile ${e.profile.name}` : ''} only`,
          numbers: { endpoints: pool.endpoints.length, reasons: reasons.join('; ') },
          why: "The KV cache's size, the block size and max_model_len come from the servers' /metrics and /v1/models; without them the KV findings are skipped unless the config or a profile says.",
          fix: `run doctor where the servers are reachable, or set ${path}.capacity.kv_tokens and capacity.max_num_seqs`,
        })
    } else if (!opts.offline && pool.discovery !== undefined) {
      infos.push({
        id: 'facts-unavailable',
        severity: 'info',
        pool: pool.name,
        path: `${path}.discovery`,
        title: `pool ${pool.name} finds its servers by DNS (${pool.discovery.name}): judged from the config${e.profile ? ` and profile ${e.profile.name}` : ''} only`,
        numbers: { discovery: pool.discovery.name },
        why: 'doctor reads the engine facts of static endpoints only.',
        fix: `set ${path}.capacity.kv_tokens and capacity.max_num_seqs, or pass --profile`,
      })
    }
    const facts = mergeFacts(live, pool.capacity, `${path}.capacity`, e.profile)
    const a = config.admission.estimator
    const cost =
      e.profile === undefined
        ? priorsCost(a.step_ms, a.prefill_tokens_per_s)
        : profileCost(e.profile.name, e.profile.stepTime, e.profile.engine.maxNumBatchedTokens)
    if (e.profile === undefined)
      infos.push({
        id: 'no-step-model',
        severity: 'info',
        pool: pool.name,
        path: 'admission.estimator',
        title: `pool ${pool.name}: no simulator profile matches its model; latency findings use the estimator's priors (step ${a.step_ms} ms, prefill ${a.prefill_tokens_per_s} tokens/s)`,
        numbers: { stepMs: a.step_ms, prefillTokensPerS: a.prefill_tokens_per_s },
        why: 'The priors do not say how a step grows with the batch, so the TPOT finding can only compare with a single sequence.',
        fix: 'pass --profile NAME (config/sim-profiles/) or a profile file for this hardware',
      })
    const replicas = e.simulated ? config.simulator.replicas : pool.endpoints.length
    pools.push({ name: pool.name, path, pool, facts, cost, replicas })
  }
  return { pools, infos }
}
