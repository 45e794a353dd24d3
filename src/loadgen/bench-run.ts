/**
 * A bench run: the planned requests sent in an open loop (each at its due time, whatever
 * the answers do, so a slow target cannot slow the offered load: no coordinated omission)
 * or a closed loop (`concurrency` senders, each sending its next request when the last
 * ended), for a duration or a number of requests. Requests still running after the last
 * arrival get `drainMs` to end, then are cut (`aborted`). The client watches its own
 * event-loop delay, which would otherwise distort every time it takes, silently.
 */

import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Dispatcher } from 'undici'
import type { RequestBuilder } from './request-builder.js'
import type { RequestPlan } from './request-plan.js'
import { type StreamTiming, streamRequest } from './stream-client.js'

export interface BenchRecord extends StreamTiming {
  readonly index: number
  readonly class: string
  readonly tenant?: string
  /** Its conversation and turn; `retry`: the turn sent again after a refusal. */
  readonly conversation?: { readonly id: number; readonly turn: number; readonly retry?: boolean }
  /** When it was due (open loop), ms after the start. */
  readonly dueMs: number
  /** When it was sent, ms after the start. */
  readonly sentMs: number
  /** Prompt tokens sent, by the client's count. */
  readonly promptTokensSent: number
  readonly maxTokens: number
}

export type LoopMode = { readonly rate: number } | { readonly concurrency: number }

export interface RunOptions {
  readonly client: Dispatcher
  readonly plan: RequestPlan
  readonly builder: RequestBuilder
  readonly classNames: readonly string[]
  readonly tenantNames: readonly string[]
  readonly mode: LoopMode
  /** Stop sending after this long... */
  readonly durationMs?: number
  /** ...or this many requests, whichever comes first. */
  readonly requests?: number
  readonly drainMs: number
  /** Called about once a second while it runs. */
  readonly onProgress?: (p: Progress) => void
}

export interface Progress {
  readonly elapsedMs: number
  readonly sent: number
  readonly done: readonly BenchRecord[]
  readonly running: number
  /** Event-loop delay over the last second, ms. */
  readonly loopDelayP99Ms: number
}

export interface LoopDelay {
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly meanMs: number
}

export interface RunResult {
  readonly records: BenchRecord[]
  /** Wall-clock start (epoch ms). */
  readonly startedAt: number
  /** First send to the last answer, ms. */
  readonly elapsedMs: number
  /** Sends stopped at (the last arrival), ms. */
  readonly sendingMs: number
  readonly loopDelay: LoopDelay
  /** How late each open-loop send was against its due time, ms. */
  readonly sendLagMs: readonly number[]
  /** The client's CPU time (user + system) over the run, ms. */
  readonly cpuMs: number
}

const RESOLUTION_MS = 5

/** The histogram's delays beyond the timer's own interval, in ms. */
function delays(h: ReturnType<typeof monitorEventLoopDelay>): LoopDelay {
  const ms = (ns: number) => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - RESOLUTION_MS) : 0)
  return { p50Ms: ms(h.percentile(50)), p99Ms: ms(h.percentile(99)), maxMs: ms(h.max), meanMs: ms(h.mean) }
}

export async function runBench(o: RunOptions): Promise<RunResult> {
  const records: BenchRecord[] = []
  const sendLagMs: number[] = []
  const inflight = new Set<Promise<void>>()
  const drain = new AbortController()
  const whole = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  const recent = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  whole.enable()
  recent.enable()
  const startedAt = Date.now()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const limit = o.requests ?? Number.POSITIVE_INFINITY
  const until = o.durationMs ?? Number.POSITIVE_INFINITY
  let sent = 0
  const progress = setInterval(() => {
    o.onProgress?.({
      elapsedMs: performance.now() - t0,
      sent,
      done: records,
      running: sent - records.length,
      loopDelayP99Ms: delays(recent).p99Ms,
    })
    recent.reset()
  }, 1000)

  const send = async (p: ReturnType<RequestPlan['next']>): Promise<void> => {
    const built = o.builder.build(p)
    const conv = built.conversation
    /** 1 for a conversation's first turn (read before the answer moves it on). */
    const turn = conv === undefined ? 0 : conv.turn + 1
    const sentMs = performance.now() - t0
    sent++
    const t = await streamRequest(o.client, { ...built.request, signal: drain.signal })
    o.builder.settle(built, t)
    const tenant = p.tenantIndex === undefined ? undefined : o.tenantNames[p.tenantIndex]
    records.push({
      ...t,
      index: p.index,
      class: o.classNames[p.classIndex]!,
      ...(tenant === undefined ? {} : { tenant }),
      ...(conv === undefined
        ? {}
        : { conversation: { id: conv.id, turn, ...(built.retry ? { retry: true } : {}) } }),
      dueMs: p.dueMs,
      sentMs,
      promptTokensSent: built.promptTokens,
      maxTokens: built.maxTokens,
    })
  }
  const track = (p: Promise<void>) => {
    inflight.add(p)
    void p.finally(() => inflight.delete(p))
  }

  let sendingMs: number | undefined
  let cut: NodeJS.Timeout | undefined
  /** No more sends: what runs gets drainMs to end. */
  const stopSending = () => {
    if (sendingMs !== undefined) return
    sendingMs = performance.now() - t0
    cut = setTimeout(() => drain.abort(), o.drainMs)
  }
  if ('rate' in o.mode) {
    for (;;) {
      const p = o.plan.next()
      if (p.index >= limit || p.dueMs >= until) break
      const wait = t0 + p.dueMs - performance.now()
      if (wait >= 1) await sleep(wait)
      sendLagMs.push(Math.max(0, performance.now() - (t0 + p.dueMs)))
      track(send(p))
    }
    stopSending()
  } else {
    const worker = async () => {
      while (sent < limit && performance.now() - t0 < until) await send(o.plan.next())
      stopSending()
    }
    for (let i = 0; i < o.mode.concurrency; i++) track(worker())
  }
  while (inflight.size > 0) await Promise.all([...inflight])
  clearTimeout(cut)
  clearInterval(progress)
  const cpu = process.cpuUsage(cpu0)
  whole.disable()
  recent.disable()
  const end = records.reduce((m, r) => Math.max(m, r.sentMs + r.latencyMs), 0)
  const first = records.reduce((m, r) => Math.min(m, r.sentMs), Number.POSITIVE_INFINITY)
  records.sort((a, b) => a.index - b.index)
  return {
    records,
    startedAt,
    elapsedMs: records.length === 0 ? 0 : end - first,
    sendingMs: sendingMs ?? 0,
    loopDelay: delays(whole),
    sendLagMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
  }
}
