/**
 * Findings about the KV cache: a class that may dispatch into a nearly full cache, an engine
 * batch limit the cache cannot hold at typical context, and a context limit so large that one
 * request can take a large share of the cache.
 */
import type { Check, Finding } from '../finding.js'
import { round } from '../finding.js'

/** The seeds' rule: keep 20-30% of the KV cache free; dispatching at 0.9 or above is an incident. */
export const KV_HEADROOM_LIMIT = 0.9
export const KV_RECOMMENDED = 0.8

export const kvHeadroom: Check = ({ config }) => {
  const out: Finding[] = []
  for (const [name, c] of Object.entries(config.classes)) {
    if (c.max_kv_usage < KV_HEADROOM_LIMIT) continue
    out.push({
      id: 'kv-headroom',
      severity: 'error',
      class: name,
      path: `classes.${name}.max_kv_usage`,
      title: `class ${name} may dispatch until the KV cache is ${Math.round(c.max_kv_usage * 100)}% full`,
      numbers: { maxKvUsage: c.max_kv_usage, limit: KV_HEADROOM_LIMIT, recommended: KV_RECOMMENDED },
      why: 'Running sequences grow by one token per step. With under 10% of the cache free, the engine runs out of blocks mid-decode and preempts (recomputes or swaps) whole sequences: TPOT and TTFT spike for everyone, and a memory-bound server may be restarted (OOM). Keep 20-30% headroom.',
      fix: `set classes.${name}.max_kv_usage to ${KV_RECOMMENDED} or less (interactive 0.8 and batch 0.7 by default)`,
    })
  }
  return out
}

/** The most permissive class KV limit: what the gateway lets the cache fill to. */
function kvLimit(classes: Record<string, { max_kv_usage: number }>): number {
  return Math.max(...Object.values(classes).map((c) => c.max_kv_usage))
}

export const kvOvercommit: Check = ({ config, pools, typical }) => {
  const out: Finding[] = []
  const limit = kvLimit(config.classes)
  const context = Math.max(
    ...Object.keys(config.classes).map((c) => typical(c).promptTokens + typical(c).outputTokens),
  )
  for (const p of pools) {
    const seqs = p.facts.maxNumSeqs
    const kv = p.facts.kvCapacityTokens
    if (seqs === undefined || kv === undefined) continue
    const needed = seqs.value * context
    const allowed = kv.value * limit
    if (needed <= allowed) continue
    const fit = Math.floor(allowed / context)
    const off = !config.admission.enabled
    out.push({
      id: 'kv-overcommit',
      severity: off && needed > kv.value ? 'error' : 'warning',
      pool: p.name,
      path: `${p.path}.capacity.max_num_seqs`,
      title: `pool ${p.name}: ${seqs.value} sequences x ${context} tokens of typical context = ${needed} tokens, above the ${Math.round(allowed)} the KV cache holds at ${limit} usage`,
      numbers: {
        maxNumSeqs: seqs.value,
        typicalContextTokens: context,
        neededTokens: needed,
        kvCapacityTokens: kv.value,
        kvLimit: limit,
        sequencesThatFit: fit,
        admission: config.admission.enabled,
      },
      why: `Under load the engine admits up to max_num_seqs sequences, but only ${fit} of this size fit under the KV limit: the batch fills the cache and the engine preempts. The safe concurrency is set by memory, not by max_num_seqs${off ? '; admission is off, so nothing in the gateway holds the batch back' : "; the gateway's KV gate holds dispatch back, but only for traffic that goes through it and only as well as max_tokens predicts each request's length"}.`,
      fix: `run the engine with max_num_seqs ${fit} (vLLM --max-num-seqs ${fit}) and set ${p.path}.capacity.max_num_seqs: ${fit}, or give the engine more KV memory`,
    })
  }
  return out
}

export const contextHog: Check = ({ pools, options }) => {
  const out: Finding[] = []
  for (const p of pools) {
    const len = p.facts.maxModelLen
    const kv = p.facts.kvCapacityTokens
    if (len === undefined || kv === undefined) continue
    const share = len.value / kv.value
    if (share <= options.maxRequestKvShare) continue
    const safe = Math.floor(kv.value * options.maxRequestKvShare)
    out.push({
      id: 'context-hog',
      severity: share >= 1 ? 'error' : 'warning',
      pool: p.name,
      path: `${p.path}`,
      title: `pool ${p.name}: one request of max_model_len ${len.value} tokens may hold ${Math.round(share * 100)}% of the ${kv.value}-token KV cache`,
      numbers: {
        maxModelLen: len.value,
        kvCapacityTokens: kv.value,
        share: round(share, 3),
        maxShare: options.maxRequestKvShare,
        safeMaxModelLen: safe,
      },
      why: 'A single long request takes most of the cache: every other sequence is preempted or waits for blocks, and the cache fragments. The context limit should fit several requests at once.',
      fix: `serve with a max_model_len of at most ${safe} (vLLM --max-model-len ${safe}), or more KV memory per replica (tensor parallelism, a larger GPU)`,
    })
  }
  return out
}
