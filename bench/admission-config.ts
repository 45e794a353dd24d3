/**
 * The admission bench's workload file (config/workloads/admission.yaml): parsed and validated
 * with messages that name the file, the key path and the problem.
 */
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { z } from 'zod'
import type { WorkloadSpec } from './admission-workload.js'

const component = z
  .strictObject({
    weight: z.number().positive(),
    median: z.number().positive(),
    sigma: z.number().nonnegative(),
    min: z.int().positive(),
    max: z.int().positive(),
  })
  .refine((c) => c.min <= c.max, { message: 'min must be <= max' })

const mix = z.array(component).min(1)

const runWindow = z.strictObject({
  warmup_s: z.number().nonnegative(),
  settle_s: z.number().nonnegative(),
  measure_s: z.number().positive(),
  tail_s: z.number().nonnegative(),
})

export const benchFileSchema = z.strictObject({
  seed: z.int(),
  profile: z.string().min(1),
  time_scale: z.number().positive(),
  levels: z.array(z.number().positive()).min(1),
  capacity: z.strictObject({
    attainment: z.number().gt(0).lt(1),
    probe_s: z.number().positive(),
    backlog: z.int().min(100),
  }),
  interactive: z.strictObject({ prompt_tokens: mix, output_tokens: mix }),
  batch: z.strictObject({ load: z.number().nonnegative(), prompt_tokens: mix, output_tokens: mix }),
  run: z.strictObject({ full: runWindow, quick: runWindow }),
})

export type BenchFile = z.output<typeof benchFileSchema>

export class BenchConfigError extends Error {
  override readonly name = 'BenchConfigError'
}

export function parseBenchFile(text: string, source: string): BenchFile {
  const r = benchFileSchema.safeParse(parse(text))
  if (r.success) return r.data
  const lines = r.error.issues.map((i) => `${source}: ${i.path.join('.') || '(root)'}: ${i.message}`)
  throw new BenchConfigError(lines.join('\n'))
}

export function loadBenchFile(path: string): BenchFile {
  return parseBenchFile(readFileSync(path, 'utf8'), path)
}

export function workloadSpec(f: BenchFile): WorkloadSpec {
  return {
    seed: f.seed,
    interactive: { prompt: f.interactive.prompt_tokens, output: f.interactive.output_tokens },
    batch: { prompt: f.batch.prompt_tokens, output: f.batch.output_tokens },
  }
}
