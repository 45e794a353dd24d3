/**
 * The admission bench's workloads: the file's base workload (today's: unique prompts, a batch
 * flood, one replica) changed by each entry of `workloads:`, and `--workloads LIST` picking
 * some of them. Pure: resolution and selection, with errors that name what is wrong.
 */
import { type BenchFile, type WorkloadOverride, workloadSpec } from './admission-config.js'
import { gammaWithCv, type WorkloadSpec } from './admission-workload.js'

export interface Workload {
  readonly name: string
  readonly description: string
  readonly profile: string
  readonly replicas: number
  /** Wall time = model time × scale (SLOs and the gateway's time constants scaled with it). */
  readonly scale: number
  readonly spec: WorkloadSpec
  /** Batch flood as a multiple of batch saturation (0: interactive only). */
  readonly batchLoad: number
  /** Length-aware TTFT objective: ms per 1,000 prompt tokens on top of ttft_ms. */
  readonly ttftPer1k?: number
  /** Overrides the run's `min_requests` (interactive arrivals per measured window). */
  readonly minRequests?: number
}

export function resolveWorkload(
  file: BenchFile,
  name: string,
  o: WorkloadOverride,
  scale?: number,
): Workload {
  const base = workloadSpec(file)
  const spec: WorkloadSpec = {
    ...base,
    interactive: {
      prompt: o.interactive?.prompt_tokens ?? base.interactive.prompt,
      output: o.interactive?.output_tokens ?? base.interactive.output,
    },
    ...(o.arrivals?.process === 'gamma' ? { arrivals: gammaWithCv(o.arrivals.cv) } : {}),
    ...(o.prefix === undefined
      ? {}
      : {
          prefix: {
            systemTokens: o.prefix.system_tokens,
            newConversation: o.prefix.new_conversation,
            maxTurns: o.prefix.max_turns,
            maxContextTokens: o.prefix.max_context_tokens,
            retry: o.prefix.retry,
            retryWindow: o.prefix.retry_window,
          },
        }),
    ...(o.allow_demotion === undefined ? {} : { allowDemotion: o.allow_demotion }),
  }
  return {
    name,
    description: o.description,
    profile: o.profile ?? file.profile,
    replicas: o.replicas ?? 1,
    scale: scale ?? o.time_scale ?? file.time_scale,
    spec,
    batchLoad: o.batch_load ?? file.batch.load,
    ...(o.ttft_ms_per_1k_prompt_tokens === undefined ? {} : { ttftPer1k: o.ttft_ms_per_1k_prompt_tokens }),
    ...(o.min_requests === undefined ? {} : { minRequests: o.min_requests }),
  }
}

/**
 * The workloads named in `list` (comma-separated; `all` or undefined: every one, in the file's
 * order). `scale` (from --scale or a preset) overrides every workload's time scale.
 */
export function selectWorkloads(file: BenchFile, list: string | undefined, scale?: number): Workload[] {
  const known = Object.keys(file.workloads)
  const names = list === undefined || list.trim() === 'all' ? known : list.split(',').map((s) => s.trim())
  const unknown = names.filter((n) => !known.includes(n))
  if (unknown.length > 0 || names.length === 0)
    throw new RangeError(
      `--workloads: unknown workload ${unknown.map((n) => `'${n}'`).join(', ') || '(none given)'}; known: ${known.join(', ')}`,
    )
  return [...new Set(names)].map((n) =>
    resolveWorkload(file, n, file.workloads[n] as WorkloadOverride, scale),
  )
}

/** Parses a comma-separated list of positive numbers (`--levels`). */
export function parseLevels(text: string): number[] {
  const values = text.split(',').map((s) => (s.trim() === '' ? Number.NaN : Number(s)))
  if (values.length === 0 || values.some((v) => !(v > 0)))
    throw new RangeError(`--levels: expected comma-separated positive numbers, got '${text}'`)
  return values
}
