/**
 * The admission bench's workload: seeded, deterministic, in model time (before time scaling).
 *
 * Two streams of requests, each from its own seeded sub-stream:
 * - interactive chat: Poisson arrivals at `level × capacity` requests/s;
 * - a batch flood: Poisson arrivals at a fixed rate (the same at every level).
 *
 * Prompt and output lengths are drawn from a mix of lognormal components (pick a component by
 * weight, then `round(median · e^(σ·Z))`, clamped to [min, max]). A stream is one fixed sequence
 * of requests whose gaps are drawn for rate 1 and divided by the rate: at every level request k
 * of a class has the same lengths, only the spacing changes (a higher level offers more of the
 * same sequence in the same time). So the levels differ in load and in nothing else.
 */
import { type ArrivalSpec, arrivalGaps } from '../src/loadgen/arrivals.js'
import { deriveSeed, Rng } from '../src/sim/rng.js'
import { type MessagePart, type PrefixSpec, shapeConversations } from './admission-conversations.js'

export interface LognormalComponent {
  readonly weight: number
  /** e^μ: half the draws are below it (before clamping). */
  readonly median: number
  /** σ of the underlying normal. */
  readonly sigma: number
  readonly min: number
  readonly max: number
}

export type LengthMix = readonly LognormalComponent[]

export interface ClassShape {
  readonly prompt: LengthMix
  readonly output: LengthMix
}

export type BenchClass = 'interactive' | 'batch'

export interface Arrival {
  /** Position in its class's sequence (the same request at every level). */
  readonly seq: number
  readonly cls: BenchClass
  /** Model-time ms from the start of the run. */
  readonly atMs: number
  readonly promptTokens: number
  readonly outputTokens: number
  /** Prefix-sharing traffic: the prompt's messages (without: one user message unique to the request). */
  readonly messages?: readonly MessagePart[]
  /** Sends `x-gateway-allow-demotion: true` (the gateway may queue it as batch instead of refusing it). */
  readonly allowDemotion?: boolean
}

export interface WorkloadSpec {
  readonly seed: number
  readonly interactive: ClassShape
  readonly batch: ClassShape
  /** Interactive's arrival process (default Poisson); batch's is always Poisson. */
  readonly arrivals?: ArrivalSpec
  /** Interactive as prefix-sharing conversations (admission-conversations.ts). */
  readonly prefix?: PrefixSpec
  /** Share of interactive requests that allow demotion to batch (drawn from a stream of its own). */
  readonly allowDemotion?: number
}

/** Gamma arrivals with this coefficient of variation (CV = 1/sqrt(shape); 1 is Poisson). */
export function gammaWithCv(cv: number): ArrivalSpec {
  if (!(cv > 0)) throw new RangeError(`coefficient of variation: expected > 0, got ${cv}`)
  return { process: 'gamma', burstiness: 1 / (cv * cv) }
}

/** μ and σ of the underlying normal of a component, and its (unclamped) mean e^(μ+σ²/2). */
export function lognormalParams(c: LognormalComponent): { mu: number; sigma: number; mean: number } {
  const mu = Math.log(c.median)
  return { mu, sigma: c.sigma, mean: Math.exp(mu + (c.sigma * c.sigma) / 2) }
}

/** One length from the mix. */
export function drawLength(mix: LengthMix, rng: Rng): number {
  const total = mix.reduce((a, c) => a + c.weight, 0)
  let u = rng.next() * total
  let comp = mix[mix.length - 1]!
  for (const c of mix) {
    if (u < c.weight) {
      comp = c
      break
    }
    u -= c.weight
  }
  const v = Math.round(comp.median * Math.exp(comp.sigma * rng.normal()))
  return Math.min(comp.max, Math.max(comp.min, v))
}

const STREAM = { interactive: 1, batch: 2 } as const

/** The first `count` requests of a class's sequence, with gaps for rate 1 request/s (ms). */
export function classSequence(spec: WorkloadSpec, cls: BenchClass, count: number): Arrival[] {
  const rng = new Rng(deriveSeed(spec.seed, STREAM[cls]))
  const shape = spec[cls]
  const process = cls === 'interactive' && spec.arrivals !== undefined ? spec.arrivals : POISSON
  const gap = arrivalGaps(process, 1, rng)
  const out: Arrival[] = []
  let t = 0
  for (let seq = 0; seq < count; seq++) {
    t += gap()
    const promptTokens = drawLength(shape.prompt, rng)
    const outputTokens = drawLength(shape.output, rng)
    out.push({ seq, cls, atMs: t, promptTokens, outputTokens })
  }
  if (cls !== 'interactive') return out
  const turns = spec.prefix === undefined ? undefined : shapeConversations(out, spec.prefix, spec.seed)
  const demote = new Rng(deriveSeed(spec.seed, STREAM_DEMOTION))
  const share = spec.allowDemotion ?? 0
  return out.map((a, i) => {
    const s = turns?.[i]
    const shaped = s === undefined ? a : { ...a, promptTokens: s.promptTokens, messages: s.messages }
    return demote.next() < share ? { ...shaped, allowDemotion: true } : shaped
  })
}

const STREAM_DEMOTION = 4

const POISSON: ArrivalSpec = { process: 'poisson', burstiness: 1 }

/**
 * A class's arrivals at `ratePerS` within [0, durationMs) of model time. Bursty (gamma)
 * arrivals offer a fixed count in each of `windowsMs` (consecutive, summing to the duration;
 * default one window): see burstyArrivals.
 */
export function classArrivals(
  spec: WorkloadSpec,
  cls: BenchClass,
  ratePerS: number,
  durationMs: number,
  windowsMs: readonly number[] = [durationMs],
): Arrival[] {
  if (!(ratePerS > 0)) return []
  if (cls === 'interactive' && spec.arrivals?.process === 'gamma')
    return burstyArrivals(spec, ratePerS, windowsMs)
  // enough draws for the window with a wide margin: Poisson(λT) exceeds λT + 10·sqrt(λT) + 20 never in practice
  const expected = (ratePerS * durationMs) / 1000
  const seq = classSequence(spec, cls, Math.ceil(expected + 10 * Math.sqrt(expected) + 20))
  return seq.map((a) => ({ ...a, atMs: a.atMs / ratePerS })).filter((a) => a.atMs < durationMs)
}

/**
 * Gamma arrivals at `ratePerS`: exactly rate × length of them in each window (rounded), placed
 * by the gamma gaps of the sequence. Each window takes the next count + 1 arrivals
 * of the sequence and scales their times so that the last (not sent) falls on its end. The
 * bursts stay (scaling keeps the gaps' coefficient of variation) and a level offers the load
 * it is named for. Left to the draws, a window of ~120 arrivals at CV 3 offers ±27% of it
 * (1 s.d.) and heavy-tailed: in the bursty workload's seed the first 100 arrivals span 180
 * mean gaps, so every level offered 22-45% of its rate in its measured window.
 */
export function burstyArrivals(
  spec: WorkloadSpec,
  ratePerS: number,
  windowsMs: readonly number[],
): Arrival[] {
  const counts = windowsMs.map((ms) => Math.round((ratePerS * ms) / 1000))
  const seq = classSequence(
    spec,
    'interactive',
    counts.reduce((a, n) => a + n + 1, 0),
  )
  const out: Arrival[] = []
  let next = 0
  let offsetMs = 0
  for (const [k, n] of counts.entries()) {
    const windowMs = windowsMs[k] as number
    const from = next === 0 ? 0 : (seq[next - 1] as Arrival).atMs
    const span = (seq[next + n] as Arrival).atMs - from
    const scale = span > 0 ? windowMs / span : 0
    for (let j = 0; j < n; j++) {
      const a = seq[next + j] as Arrival
      out.push({ ...a, atMs: offsetMs + (a.atMs - from) * scale })
    }
    next += n + 1
    offsetMs += windowMs
  }
  return out
}

/** Both classes merged in arrival order. */
export function mergedArrivals(
  spec: WorkloadSpec,
  rates: { interactive: number; batch: number },
  durationMs: number,
  windowsMs?: readonly number[],
): Arrival[] {
  return [
    ...classArrivals(spec, 'interactive', rates.interactive, durationMs, windowsMs),
    ...classArrivals(spec, 'batch', rates.batch, durationMs),
  ].sort((a, b) => a.atMs - b.atMs)
}

/** Mean of a mix (exact for the clamped lognormal is not needed; a sample mean is). */
export function sampleMean(mix: LengthMix, seed: number, n = 20_000): number {
  const rng = new Rng(seed)
  let sum = 0
  for (let i = 0; i < n; i++) sum += drawLength(mix, rng)
  return sum / n
}

const FILLER = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor '.repeat(2048)

/**
 * A chat message whose prompt is exactly `tokens` tokens by the simulator's rule
 * (`ceil(chars/4) + 4` for one message), starting with a tag unique to the run and request so
 * the prefix cache cannot skip its prefill. Needs tokens ≥ 5 + ceil(tag/4); shorter is padded up.
 */
export function promptText(tag: string, tokens: number): string {
  return contentText(tag, tokens - 4)
}

/** A message content of exactly `contentTokens` tokens (4 characters each), starting with its tag. */
function contentText(tag: string, contentTokens: number): string {
  const chars = Math.max(tag.length + 1, 4 * contentTokens)
  let body = `${tag} `
  while (body.length < chars) body += FILLER.slice(0, chars - body.length)
  return body
}

/**
 * The chat messages of a request in a run tagged `tag`: its conversation's messages (equal keys
 * give equal text within the run, so the server's prefix cache can hold them), or one user
 * message unique to the request.
 */
export function chatMessages(tag: string, a: Arrival): { role: string; content: string }[] {
  if (a.messages === undefined)
    return [{ role: 'user', content: promptText(`${tag}-${a.cls}-${a.seq}`, a.promptTokens) }]
  return a.messages.map((m) => ({ role: m.role, content: contentText(`${tag}-${m.key}`, m.tokens) }))
}
