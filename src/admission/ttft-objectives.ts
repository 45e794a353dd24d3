/**
 * The TTFT side of one pool's classes: which classes are refused on their predicted TTFT
 * (`reject_on_ttft`), the objective and the learned margin of each, and what a request's
 * outcome teaches the margin. Pool admission asks it for a request's admission budget.
 */
import type { AdmissionConfig, ClassConfig } from '../config/schema.js'
import { emptyPromptTtftMs, type Objectives } from '../objectives.js'
import { MissMargin } from './margin.js'

export interface ClassTtft {
  readonly sloMs: number
  readonly margin: MissMargin
}

export class TtftObjectives {
  /** Classes whose queue wait the estimator learns from: those admitted on its prediction. */
  private readonly learnFrom = new Set<string>()
  /** Per class refused on its predicted TTFT: its objective and its margin. */
  private readonly byClass = new Map<string, ClassTtft>()

  constructor(classes: Record<string, ClassConfig>, cfg: AdmissionConfig) {
    for (const [name, c] of Object.entries(classes)) {
      if (!c.reject_on_ttft) continue
      this.learnFrom.add(name)
      if (c.slo.ttft_ms !== undefined)
        this.byClass.set(name, {
          sloMs: c.slo.ttft_ms,
          margin: new MissMargin(cfg.margin, cfg.ttft_miss_target),
        })
    }
  }

  /** True for a class admitted on its predicted TTFT (the estimator learns its queue wait). */
  learnsFrom(className: string): boolean {
    return this.learnFrom.has(className)
  }

  /** The class's objective and margin; undefined for a class not refused on its predicted TTFT. */
  get(className: string): ClassTtft | undefined {
    return this.byClass.get(className)
  }

  /** Number of classes refused on their predicted TTFT with an objective. */
  get size(): number {
    return this.byClass.size
  }

  entries(): IterableIterator<[string, ClassTtft]> {
    return this.byClass.entries()
  }

  /**
   * The predicted TTFT a request of this class is admitted up to: its own objective `sloMs`
   * × (1 − the class's margin); ∞ for a class not refused on its predicted TTFT, or a
   * request without a TTFT objective.
   */
  budget(className: string, sloMs: number | undefined): number {
    const t = this.byClass.get(className)
    return t === undefined || sloMs === undefined ? Number.POSITIVE_INFINITY : sloMs * (1 - t.margin.value)
  }

  /**
   * What a request of `promptTokens` that arrived at `arrivedAt` is admitted by
   * (`budget`: its predicted TTFT at most, its objective x (1 - the class's margin)) and
   * queued by (`order`: its rank in its tenant's queue, its TTFT deadline, so a tighter
   * objective goes ahead of those with slack). Under a length-aware objective, the
   * allowance per 1,000 prompt tokens pays for the prompt's own prefill (at
   * `msPerPromptToken`, the rate learned), not for a longer wait: the budget is at most an
   * empty prompt's plus that prefill, and so is the deadline it is queued by. So every
   * length may wait alike: a long prompt neither fills the queue to a depth the short ones
   * cannot wait through, nor is overtaken by the short ones arriving in the slack its
   * allowance gave it (a later deadline) until it is refused from the queue. It is still
   * judged (and refused from the queue, early-refusal.ts) by its own objective. Where its
   * prediction is over this budget, admission raises the budget by the wait its length
   * adds (lengthBudget).
   */
  admitBy(
    className: string,
    objectives: Objectives,
    promptTokens: number,
    arrivedAt: number,
    msPerPromptToken: number,
  ): { budget: number; order: number | undefined } {
    const slo = objectives.ttft_ms
    const budget = this.budget(className, slo)
    const empty = emptyPromptTtftMs(objectives, promptTokens)
    if (empty === undefined || slo === undefined)
      return { budget, order: slo === undefined ? undefined : arrivedAt + slo }
    const prefillMs = msPerPromptToken * promptTokens
    return {
      budget: Math.min(budget, this.budget(className, empty) + prefillMs),
      order: arrivedAt + Math.min(slo, empty + prefillMs),
    }
  }

  /**
   * A length-aware `budget` (admitBy's) raised by what the prompt's length adds to its
   * prediction now: `predictedMs` less `shortPredictedMs`, a prompt of one token arriving
   * with it. admitBy prices the length at the learned prefill rate alone, but a long prompt
   * also waits longer for the dispatcher's own rules (room in the prefill budget, the
   * first-token promises of the prompts sent before it) and behind the prompts its later
   * deadline puts ahead of it; charged against the wait all lengths share, that refused the
   * longest prompts of bench:admission's length-aware workload at 2x 2.3-2.6x as often as
   * the shortest (300 requests a level), predicted well within their own objectives. Raised,
   * a long prompt is refused when a short one would be, or when its own objective
   * (× (1 − the margin)) cannot be met: never beyond that.
   */
  lengthBudget(
    className: string,
    objectives: Objectives,
    promptTokens: number,
    budget: number,
    predictedMs: number,
    shortPredictedMs: number,
  ): number {
    const empty = emptyPromptTtftMs(objectives, promptTokens)
    if (empty === undefined) return budget
    const own = this.budget(className, objectives.ttft_ms)
    return Math.max(budget, Math.min(own, this.budget(className, empty) + predictedMs - shortPredictedMs))
  }

  /**
   * A request's first token came `ttftMs` after it arrived. The margin learns from requests
   * admitted on their prediction (not from probes), each judged by its own objective
   * (`ownSloMs`, its tenant's, where it overrides the class's).
   */
  observe(className: string, ownSloMs: number | undefined, predictedMs: number, ttftMs: number): void {
    const c = this.byClass.get(className)
    const sloMs = ownSloMs ?? c?.sloMs
    if (c !== undefined && sloMs !== undefined && predictedMs <= sloMs) c.margin.observe(ttftMs > sloMs)
  }

  /**
   * A request admitted on its prediction was refused from the queue (early-refusal.ts): its
   * prediction at arrival was wrong as a miss is, and the margin learns it the same way, so
   * that while the queue refuses, arrival refuses more and the queue less. (Not counted,
   * requests went on being admitted into the queue and refused there: 4-37 a level at 2x and
   * 4x in bench:admission's unique workload, up to 44% of those queued.)
   */
  refusedFromQueue(className: string): void {
    this.byClass.get(className)?.margin.observe(true)
  }

  /** Each class's margin, for /admin/state. */
  margins(): Record<string, number> {
    return Object.fromEntries(
      [...this.byClass].map(([k, v]) => [k, Math.round(v.margin.value * 1000) / 1000]),
    )
  }
}
