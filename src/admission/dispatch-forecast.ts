/**
 * When will a queued request be dispatched, and what will its first step be? A forecast
 * that plays the pool's next engine steps forward, as the gateway's own dispatch rules meet
 * them: the request goes when the prompts queued ahead of it have gone, at an endpoint
 * whose prefill budget has room and whose decode guard is open.
 *
 * The gateway dispatches only at a few moments: a step end at an endpoint (its streams'
 * tokens; the prompts that step prefilled leave the budget, and its decode guard's mean
 * moves). Between them nothing changes. So the forecast walks step
 * ends, earliest first across endpoints, from what is known now (step-timeline.ts):
 *
 * - each endpoint's step in progress ends when its step model says; the prompts sent
 *   before it began are prefilled then; the next step takes the prompts sent since, and
 *   lasts what the model says of them and the streams decoding there;
 * - each step end adds one gap of that step's length per decoding stream to the guard's
 *   decaying mean (the weights before it decaying by the time since), and the guard is
 *   open after it while that mean is within the class's limit, and would stay within it
 *   with the next step (the prompts sent there since the step in progress began, and those
 *   the forecast sent) counted in as one more gap per decoding stream (decode-guard.ts,
 *   DecodeGuard.allows);
 * - at a step end where the guard is open and the budget has room, the queue ahead drains
 *   into the room, whole requests (of the mean size queued) at a time, as the dispatcher
 *   takes them (one that does not fit waits for room, and an endpoint with nothing pending
 *   takes the head whatever its size: a prompt larger than the whole budget goes alone),
 *   and one after another only while the guard's check lets the next go: while the next
 *   step with those sent so far keeps its mean within the limit (the one that fills that
 *   room goes too). Drained as far as the budget alone allowed, the whole queue ahead went
 *   into one step in the forecast where the guard sent it over several: queued requests
 *   were priced a first step too long (a median 30-80 ms over in bench:admission's
 *   gateway-only runs; 81 ms on two replicas, whose estimator's error at the client was
 *   p90 50% in steady state) and a wait too short; the request goes when what is ahead
 *   of it and its own prompt fit;
 * - the streams decoding there grow their context a token a step; those the gateway sent
 *   there end when their expected output is streamed (each frees its batch slot and KV room,
 *   and leaves the decode), and the prompts the forecast dispatches decode from the end of
 *   the step that prefills them: a step's length follows the batch as it shrinks and grows.
 *   Without them the decoding count stayed as it was now: after a burst of long steps, the
 *   guard's mean decayed only toward a step of today's batch, so a forecast held it closed
 *   for hundreds of ms where the streams ending reopened it in tens (bench:admission,
 *   prefix-sharing at 2x: every queued request refused in one pass, predicted at 640-690
 *   ms; the requests admitted just after waited ~100 ms and met their objective).
 *
 * Its first token then comes at the end of the step after the one in progress (a prompt
 * sent when a step ended misses the step the engine began at once): after the step in
 * progress, the step with the prompts dispatched with it (those ahead of it in that burst,
 * its own, and those expected after it while room lasts). The estimator prices those parts
 * and fits the forecast to what happens (ttft-estimator.ts).
 *
 * Not played: requests of other classes dispatched meanwhile (a floor's share, out of
 * turn), arrivals with an earlier deadline going ahead, streams of other clients. The
 * fit's constant takes their mean.
 */
import { addGaps, type DecayedGaps, type GuardWindow, longestGapWithin, meanWith } from './decode-guard.js'
import type { Ahead } from './early-refusal.js'
import type { RunningEnd } from './running.js'
import type { StepModel } from './step-timeline.js'

/** One endpoint as the forecast starts from it. */
export interface EndpointNow {
  /** Ms until the step in progress ends (0: none, or due now), and its whole length. */
  readonly residualMs: number
  readonly stepMs: number
  /** Prompt tokens the step in progress prefills (done at its end). */
  readonly inStepTokens: number
  /** Prompt tokens sent since it began (the next step's). */
  readonly nextTokens: number
  /** Streams decoding there, and their context tokens. */
  readonly decodes: number
  readonly contextTokens: number
  /** Prompt tokens the class may keep awaiting their first token there (its prefill budget share). */
  readonly budgetTokens: number
  /** The decode guard for the class there (undefined: not measured, open). */
  readonly guard: GuardWindow | undefined
  /** Every gate lets the request go there now (KV room is taken as open later). */
  readonly openNow: boolean
  /** Batch slots free there now (the engine's max_num_seqs less the requests in flight). */
  readonly slots: number
  /** KV tokens free there under the class's KV limit now (Infinity: not known). */
  readonly kvFree: number
  /** When the requests the gateway runs there end, soonest first (after how many steps, and the KV they free with their slot). */
  readonly ends: readonly RunningEnd[]
  readonly model: StepModel
}

/** What the forecast says of a request queued now. */
export interface DispatchForecast {
  /** Ms from now until it is dispatched. */
  readonly waitMs: number
  /** Ms from its dispatch until the step then in progress ends. */
  readonly residualMs: number
  /** Prompt tokens sent with it that share its step: those before it in its burst and those expected after (its own not counted). */
  readonly withTokens: number
  /** A decode step at its endpoint then, ms. */
  readonly decodeStepMs: number
}

interface Sim {
  t: number
  /** When its step in progress ends, and its whole length (each stream's gap at its end). */
  end: number
  length: number
  cur: number
  next: number
  decodes: number
  context: number
  /** The guard's decayed sums (decode-guard.ts, GuardWindow). */
  guard: DecayedGaps
  open: boolean
  /** Slots and KV room free, steps played, and how many of `ends` have freed theirs. */
  slots: number
  kvFree: number
  steps: number
  ended: number
  /** Requests (and their prompt tokens) the forecast dispatched into the step in progress and the next: they decode after it. */
  curReqs: number
  curCtx: number
  nextReqs: number
  nextCtx: number
  readonly e: EndpointNow
}

/**
 * The forecast for a request of `ownTokens` to compute (and `ownKv` of KV to reserve) with `queuedAhead` queued ahead of it, dispatched
 * where the endpoints `eps` allow, looking at most `horizonMs` ahead (undefined: not
 * dispatched by then). `arrivingPerMs`: prompt tokens of its class arriving per ms, queued
 * behind it while it waits: those dispatched with it, while the budget has room. `goesTo`:
 * the endpoint (index in `eps`) the picker would send it to now, were it to go now.
 */
export function forecastDispatch(
  eps: readonly EndpointNow[],
  queuedAhead: Ahead,
  ownTokens: number,
  ownKv: number,
  arrivingPerMs: number,
  horizonMs: number,
  goesTo?: number,
): DispatchForecast | undefined {
  if (eps.length === 0) return undefined
  const sims: Sim[] = eps.map((e) => ({
    t: 0,
    end: e.residualMs,
    length: e.stepMs,
    cur: e.inStepTokens,
    next: e.nextTokens,
    decodes: e.decodes,
    context: e.contextTokens,
    guard: { sumMs: e.guard?.sumMs ?? 0, gaps: e.guard?.gaps ?? 0 },
    open: e.guard?.open ?? true,
    slots: e.slots,
    kvFree: e.kvFree,
    steps: 0,
    ended: 0,
    curReqs: 0,
    curCtx: 0,
    nextReqs: 0,
    nextCtx: 0,
    e,
  }))
  let ahead = queuedAhead.tokens
  // the dispatcher sends whole requests, in order: the queue drains a request (of the mean
  // size queued ahead) at a time, and one that does not fit waits for room (as its head
  // does), but where nothing is pending the head goes whatever its size (fitsBudget)
  const unit = queuedAhead.requests > 0 ? queuedAhead.tokens / queuedAhead.requests : 0
  // a request ahead reserves KV in the proportion this one does to the tokens it computes
  const unitKv = unit * (ownKv / Math.max(1, ownTokens))
  // now first: a gate may be open already (the dispatcher runs next): the endpoint the picker
  // chooses, else, of those open now, the one where its first token comes first
  const picked = goesTo === undefined ? undefined : sims[goesTo]
  if (picked?.e.openNow === true) {
    const f = offer(picked, picked.end)
    if (f !== undefined) return f
  }
  let best: DispatchForecast | undefined
  let bestMs = Number.POSITIVE_INFINITY
  for (const s of sims) {
    if (!s.e.openNow) continue
    const f = offer(s, s.end)
    if (f === undefined) continue
    const ms = f.residualMs + s.e.model.ms(f.withTokens + ownTokens, s.decodes, s.context)
    if (ms < bestMs) {
      best = f
      bestMs = ms
    }
  }
  if (best !== undefined) return best
  // at most a few hundred steps: the horizon is a TTFT objective, steps are milliseconds
  for (let i = 0; i < 2000; i++) {
    let s = sims[0]!
    for (const o of sims) if (o.end < s.end) s = o
    if (s.end > horizonMs) return undefined
    stepEnds(s)
    s.length = stepMs(s, s.cur)
    s.end = s.t + s.length
    const f = offer(s, s.end - s.t)
    if (f !== undefined) return f
  }
  return undefined

  /** The dispatcher at `s` now (`residual`: ms left in the step that began or runs there). */
  function offer(s: Sim, residual: number): DispatchForecast | undefined {
    if (!s.open || s.slots < 1 || s.kvFree < unitKv) return undefined
    if (nextStepCloses(s)) return undefined
    const pending = s.cur + s.next
    // an endpoint with nothing pending takes the head whatever its size
    const room =
      pending <= 0 ? Math.max(s.e.budgetTokens, ahead > 0 ? 0 : ownTokens) : s.e.budgetTokens - pending
    if (room <= 0) return undefined
    // the decode guard lets prompts go while the next step with those sent keeps its mean within the limit
    const guardRoom = nextStepRoom(s)
    const aheadRequests = unit > 0 ? Math.round(ahead / unit) : 0
    if (
      ahead + ownTokens <= room &&
      ahead <= guardRoom &&
      aheadRequests < s.slots &&
      aheadRequests * unitKv + ownKv <= s.kvFree
    ) {
      // those arriving until its step begins go with it (behind it in the queue, or at once)
      const joined = Math.min(
        arrivingPerMs * (s.t + Math.max(0, residual)),
        Math.max(0, room - ahead - ownTokens),
        Math.max(0, guardRoom - ahead - ownTokens),
      )
      return {
        waitMs: s.t,
        residualMs: Math.max(0, residual),
        withTokens: s.next + ahead + joined,
        decodeStepMs: stepMs(s, 0),
      }
    }
    const fits =
      unit > 0
        ? Math.min(Math.floor(room / unit), s.slots, Math.floor(s.kvFree / unitKv))
        : Number.POSITIVE_INFINITY
    const whole = unit > 0 ? fits * unit : room
    // one request at a time while the guard's next step has room: the one that fills it goes too
    const guarded = unit > 0 ? (Math.floor(guardRoom / unit) + 1) * unit : guardRoom
    const take = Math.min(ahead, pending <= 0 ? Math.max(unit, whole) : whole, guarded)
    ahead -= take
    s.next += take
    if (unit > 0) {
      const n = Math.round(take / unit)
      s.slots -= n
      s.kvFree -= n * unitKv
      s.nextReqs += n
      s.nextCtx += take
    }
    return undefined
  }
}

/**
 * The step in progress at `s` ends: its streams' gaps (each the step's length) go to the
 * guard's decaying mean (its weights decayed since the last step end, or since now), the
 * running requests whose output is done leave, the prompts it prefilled that the forecast
 * sent begin to decode, the next step begins.
 */
function stepEnds(s: Sim): void {
  const gap = s.length
  const sinceMs = s.end - s.t
  s.t = s.end
  s.steps++
  const g = s.e.guard
  if (s.decodes > 0) {
    s.context += s.decodes
    if (g !== undefined) {
      addGaps(s.guard, sinceMs, g.tauMs, gap, s.decodes)
      s.open = s.guard.sumMs / s.guard.gaps <= g.limitMs
    }
  } else s.open = true
  // each stream there got a token: those with none left free their slots and stop decoding
  const ends = s.e.ends
  while (s.ended < ends.length && ends[s.ended]!.steps <= s.steps) {
    const kv = ends[s.ended]!.kvTokens
    s.kvFree += kv
    s.slots++
    s.ended++
    if (s.decodes > 0) {
      s.decodes--
      s.context = Math.max(0, s.context - kv)
    }
  }
  s.decodes += s.curReqs
  s.context += s.curCtx
  s.curReqs = s.nextReqs
  s.curCtx = s.nextCtx
  s.nextReqs = 0
  s.nextCtx = 0
  s.cur = s.next
  s.next = 0
}

/** The step after the one in progress at `s`, with the prompts pending there, takes the guard's mean over its limit (DecodeGuard.allows). */
function nextStepCloses(s: Sim): boolean {
  const g = s.e.guard
  if (g === undefined || s.next <= 0 || s.decodes <= 0 || s.guard.gaps <= 0) return false
  return meanWith(s.guard.sumMs, s.guard.gaps, stepMs(s, s.next), s.decodes) > g.limitMs
}

/**
 * Prompt tokens that may still be sent to `s` for its next step before the guard's check
 * there closes (nextStepCloses): the step model's longest next step whose gaps keep the
 * mean within the limit, in prompt tokens, less those pending. With nothing pending the
 * head goes whatever its size (0 at least); Infinity where the guard does not bind.
 */
function nextStepRoom(s: Sim): number {
  const g = s.e.guard
  if (g === undefined || s.decodes <= 0 || s.guard.gaps <= 0) return Number.POSITIVE_INFINITY
  const longest = longestGapWithin(s.guard.sumMs, s.guard.gaps, s.decodes, g.limitMs)
  const empty = stepMs(s, 0)
  const perToken = (stepMs(s, 1000) - empty) / 1000
  const room = perToken > 0 ? (longest - empty) / perToken - s.next : Number.POSITIVE_INFINITY
  return s.next <= 0 ? Math.max(0, room) : room
}

function stepMs(s: Sim, prefill: number): number {
  return Math.max(0.1, s.e.model.ms(prefill, s.decodes, s.context))
}
