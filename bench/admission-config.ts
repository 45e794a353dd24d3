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
  /** The measured window is made longer where needed for this many interactive arrivals per level. */
  min_requests: z.int().positive().optional(),
})

/** A workload: the base file's workload with these changes (admission-workloads.ts). */
const workloadOverride = z.strictObject({
  description: z.string().min(1),
  profile: z.string().min(1).optional(),
  replicas: z.int().min(1).max(8).optional(),
  time_scale: z.number().positive().optional(),
  /** Interactive's arrivals: Poisson, or gamma with this coefficient of variation. */
  arrivals: z
    .strictObject({ process: z.enum(['poisson', 'gamma']), cv: z.number().positive().default(1) })
    .optional(),
  interactive: z.strictObject({ prompt_tokens: mix.optional(), output_tokens: mix.optional() }).optional(),
  batch_load: z.number().nonnegative().optional(),
  /** The run's `min_requests` for this workload (bursty arrivals need more to average over bursts). */
  min_requests: z.int().positive().optional(),
  prefix: z
    .strictObject({
      system_tokens: z.int().min(16),
      new_conversation: z.number().gt(0).max(1),
      max_turns: z.int().positive(),
      max_context_tokens: z.int().positive(),
      retry: z.number().min(0).lt(1),
      retry_window: z.int().positive(),
    })
    .optional(),
  /** Length-aware TTFT objective (the gateway's and the client's judgement alike). */
  ttft_ms_per_1k_prompt_tokens: z.number().nonnegative().optional(),
  /** Share of interactive requests sending x-gateway-allow-demotion: true. */
  allow_demotion: z.number().min(0).max(1).optional(),
})

const preset = z.strictObject({
  title: z.string().min(1),
  workloads: z.array(z.string().min(1)).min(1),
  levels: z.array(z.number().positive()).min(1),
  time_scale: z.number().positive(),
  run: z.strictObject({ full: runWindow, quick: runWindow }),
  /** Report file, relative to the repository's root. */
  out: z.string().min(1),
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
  /** The yardsticks: HAProxy with maxconn per server and a short queue (model ms, time-scaled). */
  peers: z.strictObject({
    haproxy_maxconn: z.array(z.int().positive()).min(1),
    queue_timeout_ms: z.int().positive(),
    /** The batch class's own backend: its maxconn per server. */
    batch_maxconn: z.int().positive(),
  }),
  workloads: z.record(z.string().regex(/^[a-z0-9-]+$/), workloadOverride),
  presets: z.record(z.string().regex(/^[a-z0-9-]+$/), preset).default({}),
})

export type BenchFile = z.output<typeof benchFileSchema>
export type WorkloadOverride = z.output<typeof workloadOverride>
export type Preset = z.output<typeof preset>

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
