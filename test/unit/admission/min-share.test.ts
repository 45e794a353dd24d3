/**
 * The floor (min_share) on fake time: the class queues in front of a pool that prefills
 * RATE prompt tokens per second, one request at a time (the dispatcher takes the next
 * request when the pool is free), with interactive and batch prompts of random lengths.
 */
import { describe, expect, it } from 'vitest'
import { ClassQueues, type QueueClass } from '../../../src/admission/class-queues.js'
import { ManualClock } from '../../../src/clock.js'

const RATE = 20_000 // prompt tokens per second
const WINDOW_MS = 5_000

const INTERACTIVE: QueueClass = {
  name: 'interactive',
  priority: 0,
  queueLimit: 100_000,
  queueLimitBytes: 1e12,
  maxQueueWaitMs: 1e12,
}
const BATCH: QueueClass = { ...INTERACTIVE, name: 'batch', priority: 1 }

/** Deterministic PRNG (mulberry32) so the runs replay. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Job {
  id: string
  cls: 'interactive' | 'batch'
  cost: number
}

/**
 * A pool in front of the queues. `backlog(cls)` keeps a class permanently backlogged;
 * `arrive(cls, atMs)` adds one request at a time; `run(untilMs)` dispatches whenever the
 * pool is free and records every dispatch with its time.
 */
function pool(batchShare: number, seed = 1) {
  const clock = new ManualClock(0)
  const q = new ClassQueues<Job>({
    classes: [INTERACTIVE, { ...BATCH, minShare: batchShare }],
    clock,
    minShareWindowMs: WINDOW_MS,
  })
  const r = rng(seed)
  let n = 0
  const cost = (cls: Job['cls']) =>
    cls === 'interactive' ? 100 + Math.floor(r() * 1400) : 200 + Math.floor(r() * 3800)
  const add = (cls: Job['cls']) => {
    const job = { id: `${cls}${n++}`, cls, cost: cost(cls) }
    q.enqueue(job, { class: cls, tenant: 't', cost: job.cost, bytes: 1, weight: 1, deadline: Infinity })
  }
  const backlogged = new Set<Job['cls']>()
  const arrivals: { at: number; cls: Job['cls'] }[] = []
  const log: { at: number; job: Job }[] = []
  let busyUntil = 0
  let idleMs = 0
  return {
    q,
    clock,
    log,
    idleMs: () => idleMs,
    backlog(cls: Job['cls'], on = true) {
      if (on) backlogged.add(cls)
      else backlogged.delete(cls)
    },
    /** Poisson arrivals of `cls` at `perS` from the current time until `untilMs`. */
    poisson(cls: Job['cls'], perS: number, untilMs: number) {
      const gap = () => -Math.log(1 - r()) * (1000 / perS)
      for (let t = clock.now() + gap(); t < untilMs; t += gap()) arrivals.push({ at: t, cls })
      arrivals.sort((a, b) => a.at - b.at)
    },
    run(untilMs: number) {
      for (;;) {
        for (const cls of backlogged) while (q.sizeOf(cls) < 20) add(cls)
        while (arrivals.length > 0 && arrivals[0]!.at <= clock.now()) add(arrivals.shift()!.cls)
        if (clock.now() >= untilMs) return
        let idle = false
        if (clock.now() >= busyUntil) {
          const got = q.dequeue()
          if (got === undefined) idle = true
          else {
            log.push({ at: clock.now(), job: got.item })
            busyUntil = clock.now() + (got.item.cost / RATE) * 1000
          }
        }
        const busy = busyUntil > clock.now() ? busyUntil : Infinity
        const next = Math.min(untilMs, busy, arrivals[0]?.at ?? Infinity)
        if (idle) idleMs += next - clock.now()
        clock.advance(next - clock.now())
      }
    },
  }
}

/** Batch's share of the prompt tokens dispatched in [fromMs, toMs). */
function batchShare(log: { at: number; job: Job }[], fromMs: number, toMs: number): number {
  let batch = 0
  let all = 0
  for (const { at, job } of log) {
    if (at < fromMs || at >= toMs) continue
    all += job.cost
    if (job.cls === 'batch') batch += job.cost
  }
  return all === 0 ? Number.NaN : batch / all
}

describe('min_share: a floor of prefill work for a class while it has requests queued', () => {
  for (const share of [0.05, 0.2]) {
    it(`keeps a backlogged batch class within 10% of a ${share} share under a permanent interactive backlog`, () => {
      for (const seed of [1, 2, 3]) {
        const p = pool(share, seed)
        p.backlog('interactive')
        p.backlog('batch')
        p.run(120_000)
        const tokens = p.log.reduce((s, d) => s + d.job.cost, 0)
        expect(tokens).toBeGreaterThan(0.99 * RATE * 120) // the pool never idles
        // over the whole run and over each half (not just on average)
        for (const [from, to] of [
          [0, 120_000],
          [0, 60_000],
          [60_000, 120_000],
        ] as const) {
          const got = batchShare(p.log, from, to)
          expect(Math.abs(got - share) / share, `seed ${seed}, ${from}-${to} ms: ${got}`).toBeLessThan(0.1)
        }
      }
    })
  }

  it('gives batch all the capacity interactive leaves (interactive at half the pool, batch backlogged)', () => {
    const p = pool(0.05)
    p.backlog('batch')
    // interactive prompts average 800 tokens: 12.5 req/s is half of 20,000 tokens/s
    p.poisson('interactive', 12.5, 120_000)
    p.run(120_000)
    expect(p.idleMs()).toBe(0) // work-conserving: never idle while batch waits
    const got = batchShare(p.log, 0, 120_000)
    expect(got).toBeGreaterThan(0.45)
    expect(got).toBeLessThan(0.55)
    // and interactive lost nothing to it: every interactive request that arrived was served
    expect(p.q.sizeOf('interactive')).toBeLessThanOrEqual(2)
  })

  it('gives interactive all of it while batch is idle, and batch only its share (no burst) when it comes back', () => {
    const p = pool(0.2)
    p.backlog('interactive')
    p.run(60_000) // batch idle for a minute: a share it does not use goes to interactive
    expect(batchShare(p.log, 0, 60_000)).toBe(0)
    p.backlog('batch')
    p.run(120_000)
    // nothing banked from the idle minute: no more than its share from the first seconds on
    expect(batchShare(p.log, 60_000, 62_000)).toBeLessThanOrEqual(0.2 * 1.25)
    expect(Math.abs(batchShare(p.log, 60_000, 120_000) - 0.2) / 0.2).toBeLessThan(0.1)
  })

  it('is back at its floor within one window after having had the pool to itself', () => {
    const p = pool(0.2)
    p.backlog('batch')
    p.run(60_000) // batch alone: all of it (interactive idle)
    expect(batchShare(p.log, 0, 60_000)).toBe(1)
    p.backlog('interactive')
    p.run(180_000)
    // what batch took beyond its share while alone is forgotten after about one window
    const first = p.log.find((d) => d.at >= 60_000 && d.job.cls === 'batch')
    expect(first?.at).toBeLessThan(60_000 + 1.2 * WINDOW_MS)
    expect(Math.abs(batchShare(p.log, 60_000 + 2 * WINDOW_MS, 180_000) - 0.2) / 0.2).toBeLessThan(0.1)
  })

  it('gives a class of min_share 0 nothing under a permanent higher-priority backlog', () => {
    const p = pool(0)
    p.backlog('interactive')
    p.backlog('batch')
    p.run(60_000)
    expect(p.log.length).toBeGreaterThan(1000)
    expect(batchShare(p.log, 0, 60_000)).toBe(0)
  })
})
