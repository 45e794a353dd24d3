/**
 * Token-length draws of a workload (prompt, output, turns): fixed, uniform (inclusive),
 * lognormal (median and sigma of the log, clamped), a table from a JSONL file (random or in
 * order), or a weighted mixture of those. Every draw is a positive integer.
 */
import type { Rng } from '../sim/rng.js'
import type { LengthSpec } from './workload-schema.js'

type Simple = Exclude<LengthSpec, { dist: 'mixture' }>

/** Finds the lengths of a `dist: file` (loaded by loadWorkload). */
export type TableLookup = (spec: Extract<LengthSpec, { dist: 'file' }>) => readonly number[]

function simpleDraw(spec: Simple, rng: Rng, table: TableLookup): () => number {
  switch (spec.dist) {
    case 'fixed':
      return () => spec.value
    case 'uniform': {
      const span = spec.max - spec.min + 1
      return () => spec.min + Math.floor(rng.next() * span)
    }
    case 'lognormal': {
      const mu = Math.log(spec.median)
      const max = spec.max ?? Number.POSITIVE_INFINITY
      return () => Math.min(max, Math.max(spec.min, Math.round(Math.exp(mu + spec.sigma * rng.normal()))))
    }
    case 'file': {
      const values = table(spec)
      if (spec.order === 'random') return () => values[Math.floor(rng.next() * values.length)]!
      let i = 0
      return () => values[i++ % values.length]!
    }
  }
}

export function lengthDraw(spec: LengthSpec, rng: Rng, table: TableLookup): () => number {
  if (spec.dist !== 'mixture') return simpleDraw(spec, rng, table)
  const draws = spec.components.map((c) => simpleDraw(c, rng, table))
  const total = spec.components.reduce((s, c) => s + c.weight, 0)
  const cumulative: number[] = []
  let acc = 0
  for (const c of spec.components) {
    acc += c.weight / total
    cumulative.push(acc)
  }
  return () => {
    const u = rng.next()
    let k = cumulative.findIndex((edge) => u < edge)
    if (k < 0) k = draws.length - 1
    return draws[k]!()
  }
}

/** Index drawn by weight (shares need not sum to 1). */
export function weightedPick(weights: readonly number[], rng: Rng): number {
  const total = weights.reduce((s, w) => s + w, 0)
  let u = rng.next() * total
  for (let i = 0; i < weights.length; i++) {
    u -= weights[i]!
    if (u < 0) return i
  }
  return weights.length - 1
}
