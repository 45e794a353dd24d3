/**
 * Findings about objectives the hardware cannot meet: a TPOT objective below the engine's
 * decode step at the batch its KV cache allows (or at any batch), and a TTFT objective
 * below the idle prefill time of the class's typical prompt.
 *
 * "At any batch" is admission's own judgment (unreachableTpot, src/admission/tpot-reachable.ts),
 * given here the step a profile's step model (or the estimator's priors) puts on one sequence
 * at the class's typical context, where admission gives it the step it learned.
 */
import { unreachableTpot } from '../../admission/tpot-reachable.js'
import { lengthAwareTtftMs } from '../../objectives.js'
import type { Check, Finding, PoolSubject } from '../finding.js'
import { round } from '../finding.js'
import { largestBatchWithin } from '../step-cost.js'

/** The batch a pool's KV cache allows a class at its typical context (and max_num_seqs). */
export function kvBatch(p: PoolSubject, maxKvUsage: number, contextTokens: number): number | undefined {
  const kv = p.facts.kvCapacityTokens?.value
  const seqs = p.facts.maxNumSeqs?.value
  const byKv = kv === undefined ? undefined : Math.max(1, Math.floor((kv * maxKvUsage) / contextTokens))
  if (byKv === undefined) return seqs
  return seqs === undefined ? byKv : Math.min(seqs, byKv)
}

export const tpotUnattainable: Check = ({ config, pools, typical }) => {
  const out: Finding[] = []
  const margin = config.admission.margin
  for (const [name, c] of Object.entries(config.classes)) {
    const tpot = c.slo.tpot_ms
    if (tpot === undefined) continue
    const t = typical(name)
    // a sequence holds its prompt and, on average over its decode, half its answer
    const ctx = t.promptTokens + t.outputTokens / 2
    for (const p of pools) {
      const one = p.cost.decodeStepMs(1, ctx)
      const [never] = unreachableTpot({ [name]: c }, { value: one, source: p.cost.source })
      if (never !== undefined) {
        out.push({
          id: 'tpot-unattainable',
          severity: 'error',
          pool: p.name,
          class: name,
          path: `classes.${name}.slo.tpot_ms`,
          title: `class ${name}: TPOT objective ${tpot} ms is below one decode step of a single sequence on pool ${p.name} (${never.leastTpotMs} ms)`,
          numbers: {
            tpotMs: tpot,
            stepMsAtBatch1: never.leastTpotMs,
            contextTokens: Math.round(ctx),
            model: never.source,
          },
          why: 'No batch size meets it: every streamed request misses its TPOT objective, so goodput is zero whatever the throughput.',
          fix: `raise classes.${name}.slo.tpot_ms above ${Math.ceil(one / (1 - margin))} ms, or serve this class on faster hardware (tensor parallelism, a smaller model)`,
        })
        continue
      }
      if (!p.cost.batchAware) continue
      const batch = kvBatch(p, c.max_kv_usage, ctx)
      if (batch === undefined) continue
      const step = p.cost.decodeStepMs(batch, ctx)
      const budget = tpot * (1 - margin)
      if (step <= budget) continue
      const within = largestBatchWithin(p.cost, budget, ctx, batch)
      out.push({
        id: 'tpot-unattainable',
        severity: 'warning',
        pool: p.name,
        class: name,
        path: `classes.${name}.slo.tpot_ms`,
        title: `class ${name}: at the batch of ${batch} its KV cache allows on pool ${p.name}, a decode step takes ${round(step)} ms, over the TPOT objective ${tpot} ms`,
        numbers: {
          tpotMs: tpot,
          budgetMs: round(budget),
          kvBatch: batch,
          stepMsAtKvBatch: round(step),
          batchWithinTpot: within,
          contextTokens: Math.round(ctx),
          model: p.cost.source,
        },
        why: `Continuous batching fills the batch to ${batch}; throughput looks high while every stream decodes slower than its objective, so goodput is far below throughput. Only up to ${within} sequences at once decode within ${round(budget)} ms (the objective less the margin).`,
        fix: `cap the engine's batch at ${within} (vLLM --max-num-seqs ${within}, and ${p.path}.capacity.max_num_seqs: ${within}), or raise classes.${name}.slo.tpot_ms to ${Math.ceil(step / (1 - margin))}`,
      })
    }
  }
  return out
}

export const ttftUnattainable: Check = ({ config, pools, typical }) => {
  const out: Finding[] = []
  const margin = config.admission.margin
  for (const [name, c] of Object.entries(config.classes)) {
    const base = c.slo.ttft_ms
    if (base === undefined) continue
    const prompt = typical(name).promptTokens
    const slo = lengthAwareTtftMs(base, c.slo.ttft_ms_per_1k_prompt_tokens ?? 0, prompt)
    for (const p of pools) {
      const idle = p.cost.idlePrefillMs(prompt)
      const budget = slo * (1 - margin)
      if (idle <= budget) continue
      const error = idle > slo
      out.push({
        id: 'ttft-unattainable',
        severity: error ? 'error' : 'warning',
        pool: p.name,
        class: name,
        path: `classes.${name}.slo.ttft_ms`,
        title: `class ${name}: a typical ${prompt}-token prompt takes ${round(idle)} ms to prefill on an idle server of pool ${p.name}, ${error ? 'over' : 'within the margin of'} the TTFT objective ${slo} ms`,
        numbers: {
          ttftMs: slo,
          budgetMs: round(budget),
          idlePrefillMs: round(idle),
          promptTokens: prompt,
          model: p.cost.source,
        },
        why: error
          ? 'Even an idle server cannot meet it: admission refuses these requests (ttft_unreachable) or every one misses its objective.'
          : 'Only an idle server meets it: any queue or running batch pushes it over, so admission refuses most of these requests.',
        fix: `raise classes.${name}.slo.ttft_ms to at least ${Math.ceil(idle / (1 - margin))}, or make it length-aware (classes.${name}.slo.ttft_ms_per_1k_prompt_tokens)`,
      })
    }
  }
  return out
}
