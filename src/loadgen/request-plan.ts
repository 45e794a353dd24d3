/**
 * The seeded sequence of requests a run sends: when each is due, its class and tenant, and
 * its lengths. Each draw has its own random stream, so the same seed gives the same requests
 * in the same order whatever the rate (only the times scale) and in closed-loop mode too.
 */
import { deriveSeed, Rng } from '../sim/rng.js'
import { type ArrivalSpec, arrivalGaps } from './arrivals.js'
import { lengthDraw, type TableLookup, weightedPick } from './lengths.js'
import type { Workload } from './workload-schema.js'

export interface PlannedRequest {
  readonly index: number
  /** When it is due in an open loop, ms after the start (the first at 0). */
  readonly dueMs: number
  readonly classIndex: number
  /** Undefined when the workload names no tenants. */
  readonly tenantIndex: number | undefined
  /** Tokens of its new text (a conversation's new turn). */
  readonly promptTokens: number
  /** Its max_tokens. */
  readonly outputTokens: number
  /** Starts with the class's shared prefix. */
  readonly sharedPrefix: boolean
  /** Where in the corpus its text is cut from, in [0, 1). */
  readonly textOffset: number
  /** The turns of a conversation, should this request start one. */
  readonly turns: number
  /** A conversation's turn: how long its user thinks after this turn's answer, ms (0: none). */
  readonly thinkMs: number
}

interface ClassDraws {
  readonly prompt: () => number
  readonly output: () => number
  readonly turns: () => number
  readonly think: () => number
  /** Tenant indexes that send the class, and their shares. */
  readonly tenants: readonly number[]
  readonly tenantShares: readonly number[]
}

const STREAM = { arrivals: 1, classes: 2, tenants: 3, text: 4, prefix: 5 } as const

export class RequestPlan {
  private index = 0
  private dueMs = 0
  private readonly gaps: (() => number) | undefined
  private readonly classRng: Rng
  private readonly tenantRng: Rng
  private readonly textRng: Rng
  private readonly prefixRng: Rng
  private readonly classShares: readonly number[]
  private readonly draws: readonly ClassDraws[]

  /** `ratePerS` undefined: a closed loop, where nothing is due at a time (dueMs stays 0). */
  constructor(
    private readonly workload: Workload,
    table: TableLookup,
    ratePerS: number | undefined,
    seed: number = workload.seed,
  ) {
    const rng = (stream: number) => new Rng(deriveSeed(seed, stream))
    const arrival: ArrivalSpec = workload.arrival
    this.gaps = ratePerS === undefined ? undefined : arrivalGaps(arrival, ratePerS, rng(STREAM.arrivals))
    this.classRng = rng(STREAM.classes)
    this.tenantRng = rng(STREAM.tenants)
    this.textRng = rng(STREAM.text)
    this.prefixRng = rng(STREAM.prefix)
    this.classShares = workload.classes.map((c) => c.share)
    this.draws = workload.classes.map((c, i) => {
      const tenants = workload.tenants.flatMap((t, k) =>
        t.classes === undefined || t.classes.includes(c.name) ? [k] : [],
      )
      const base = 16 + 4 * i
      return {
        prompt: lengthDraw(c.prompt_tokens, rng(base), table),
        output: lengthDraw(c.output_tokens, rng(base + 1), table),
        turns:
          c.conversation === undefined ? () => 1 : lengthDraw(c.conversation.turns, rng(base + 2), table),
        think:
          c.conversation?.think_ms === undefined
            ? () => 0
            : lengthDraw(c.conversation.think_ms, rng(base + 3), table),
        tenants,
        tenantShares: tenants.map((k) => workload.tenants[k]!.share),
      }
    })
  }

  next(): PlannedRequest {
    const index = this.index++
    if (index > 0 && this.gaps !== undefined) this.dueMs += this.gaps()
    const classIndex = weightedPick(this.classShares, this.classRng)
    const d = this.draws[classIndex]!
    const cls = this.workload.classes[classIndex]!
    const tenantIndex =
      d.tenants.length === 0 ? undefined : d.tenants[weightedPick(d.tenantShares, this.tenantRng)]
    const share = cls.shared_prefix?.share ?? 0
    return {
      index,
      dueMs: this.dueMs,
      classIndex,
      tenantIndex,
      promptTokens: d.prompt(),
      outputTokens: d.output(),
      sharedPrefix: share > 0 && this.prefixRng.next() < share,
      textOffset: this.textRng.next(),
      turns: d.turns(),
      thinkMs: d.think(),
    }
  }
}
