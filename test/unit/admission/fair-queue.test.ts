import { describe, expect, it } from 'vitest'
import { FairQueue, type FairQueued } from '../../../src/admission/fair-queue.js'

interface Job extends FairQueued {
  tenant: string
  cost: number
  n: number
}

function job(tenant: string, cost: number, n: number): Job {
  return { tenant, cost, n, fairNode: undefined }
}

/** Deterministic PRNG (mulberry32) so random tests replay. */
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

/**
 * Textbook DRR on plain arrays, one round at a time (no round skipping), as a reference
 * for the order FairQueue must produce.
 */
class NaiveDrr {
  private readonly active: {
    name: string
    weight: number
    deficit: number
    credited: boolean
    items: Job[]
  }[] = []
  constructor(private readonly quantum: number) {}
  push(j: Job, weight: number): void {
    let t = this.active.find((x) => x.name === j.tenant)
    if (t === undefined) {
      t = { name: j.tenant, weight, deficit: 0, credited: false, items: [] }
      this.active.push(t)
    }
    t.weight = weight
    t.items.push(j)
  }
  remove(j: Job): void {
    const i = this.active.findIndex((x) => x.items.includes(j))
    const t = this.active[i]!
    t.items.splice(t.items.indexOf(j), 1)
    if (t.items.length === 0) this.active.splice(i, 1)
  }
  pop(): Job | undefined {
    for (;;) {
      const t = this.active[0]
      if (t === undefined) return undefined
      if (!t.credited) {
        t.deficit += t.weight * this.quantum
        t.credited = true
      }
      const head = t.items[0]!
      if (head.cost <= t.deficit) {
        t.deficit -= head.cost
        t.items.shift()
        if (t.items.length === 0) this.active.shift()
        return head
      }
      t.credited = false
      this.active.push(this.active.shift()!)
    }
  }
}

describe('FairQueue (weighted DRR in tokens)', () => {
  it('serves a tenant by rank, FIFO among equal ranks and unranked items, and keeps DRR between tenants', () => {
    const q = new FairQueue<Job>({ quantum: 100 })
    const a = [job('a', 10, 0), job('a', 10, 1), job('a', 10, 2), job('a', 10, 3), job('a', 10, 4)]
    q.push(a[0]!, 'a', 10, 1, 50)
    q.push(a[1]!, 'a', 10, 1) // unranked: the tail
    q.push(a[2]!, 'a', 10, 1, 20) // before the first
    q.push(a[3]!, 'a', 10, 1, 50) // after the first (equal rank)
    const b = job('b', 500, 9)
    q.push(b, 'b', 500, 1, 0) // another tenant's rank does not jump a's queue
    q.push(a[4]!, 'a', 10, 1, Number.POSITIVE_INFINITY)
    expect(() => q.push(job('a', 1, 5), 'a', 1, 1, Number.NaN)).toThrow(RangeError)
    const out: number[] = []
    for (let j = q.pop(); j !== undefined; j = q.pop()) out.push(j.n)
    // a's turn (quantum 100) serves all five in rank order before b can pay its 500
    expect(out).toEqual([2, 0, 3, 1, 4, 9])
    expect(q.size).toBe(0)
  })

  it('is empty at first and FIFO within one tenant', () => {
    const q = new FairQueue<Job>()
    expect(q.peek()).toBeUndefined()
    expect(q.pop()).toBeUndefined()
    const jobs = [job('a', 10, 0), job('a', 5000, 1), job('a', 1, 2)]
    for (const j of jobs) q.push(j, j.tenant, j.cost, 1)
    expect(q.size).toBe(3)
    expect(q.totalCost).toBe(5011)
    expect([q.pop(), q.pop(), q.pop()]).toEqual(jobs)
    expect(q.size).toBe(0)
    expect(q.totalCost).toBe(0)
    expect(q.tenantCount).toBe(0)
  })

  it('shares service 1:3 between backlogged tenants of weights 1 and 3 (400 dequeues)', () => {
    const q = new FairQueue<Job>({ quantum: 1024 })
    for (let i = 0; i < 400; i++) {
      q.push(job('light', 100, i), 'light', 100, 1)
      q.push(job('heavy', 100, i), 'heavy', 100, 3)
    }
    const served = { light: 0, heavy: 0 }
    for (let i = 0; i < 400; i++) {
      const j = q.pop()!
      served[j.tenant as 'light' | 'heavy']++
    }
    const ratio = served.heavy / served.light
    expect(ratio).toBeGreaterThan(3 * 0.9)
    expect(ratio).toBeLessThan(3 * 1.1)
  })

  it("charges an item taken out of turn to its tenant's turns, as pop would", () => {
    const q = new FairQueue<Job>({ quantum: 1024 })
    const items = new Map<string, Job>()
    for (const t of ['a', 'b']) {
      for (let i = 1; i <= 6; i++) {
        const j = job(t, 512, i)
        items.set(`${t}${i}`, j)
        q.push(j, t, 512, 1)
      }
    }
    expect(q.take(items.get('a3')!)).toBe(true)
    expect(q.take(items.get('a4')!)).toBe(true)
    expect(q.take(items.get('a4')!)).toBe(false)
    // a has had its round's worth: b goes first (with remove instead, a1 a2 would)
    const order = Array.from({ length: 6 }, () => {
      const j = q.pop()!
      return `${j.tenant}${j.n}`
    })
    expect(order).toEqual(['b1', 'b2', 'a1', 'a2', 'b3', 'b4'])
  })

  it('charges tokens, not requests: equal weights get equal tokens', () => {
    const q = new FairQueue<Job>({ quantum: 1000 })
    for (let i = 0; i < 300; i++) q.push(job('big', 1000, i), 'big', 1000, 1)
    for (let i = 0; i < 3000; i++) q.push(job('small', 100, i), 'small', 100, 1)
    const tokens = { big: 0, small: 0 }
    const count = { big: 0, small: 0 }
    for (let i = 0; i < 1100; i++) {
      const j = q.pop()!
      tokens[j.tenant as 'big' | 'small'] += j.cost
      count[j.tenant as 'big' | 'small']++
    }
    expect(count.small / count.big).toBeCloseTo(10, 0)
    expect(Math.abs(tokens.big - tokens.small) / tokens.big).toBeLessThan(0.05)
  })

  it('makes an item costlier than a quantum wait for its deficit, skipping idle rounds exactly', () => {
    const q = new FairQueue<Job>({ quantum: 100 })
    const huge = job('a', 1050, 0) // needs 11 turns of weight 1
    q.push(huge, 'a', huge.cost, 1)
    const bs: Job[] = []
    for (let i = 0; i < 30; i++) {
      const b = job('b', 50, i)
      bs.push(b)
      q.push(b, 'b', b.cost, 1)
    }
    const order: Job[] = []
    for (let j = q.pop(); j !== undefined; j = q.pop()) order.push(j)
    // b gets 2 items per turn; a's item fits after its 11th credit, i.e. after 10 turns of b.
    expect(order.indexOf(huge)).toBe(20)
    expect(order.length).toBe(31)
  })

  it('skips idle rounds exactly when every head is costlier than its deficit', () => {
    const q = new FairQueue<Job>({ quantum: 3 })
    const ref = new NaiveDrr(3)
    const specs: [string, number, number][] = [
      ['a', 1000, 1],
      ['b', 999, 2],
      ['c', 5000, 3],
      ['a', 7, 1],
      ['b', 3001, 2],
      ['c', 1, 3],
      ['d', 2500, 5],
    ]
    specs.forEach(([t, c, w], i) => {
      const j = job(t, c, i)
      q.push(j, t, c, w)
      ref.push(j, w)
    })
    const got: number[] = []
    const want: number[] = []
    for (let j = q.pop(); j !== undefined; j = q.pop()) got.push(j.n)
    for (let j = ref.pop(); j !== undefined; j = ref.pop()) want.push(j.n)
    expect(got).toEqual(want)
    expect(got.length).toBe(specs.length)
  })

  it('serves a lone huge item without spinning (and the deficit resets once empty)', () => {
    const q = new FairQueue<Job>({ quantum: 1 })
    const j = job('a', 1e12, 0)
    q.push(j, 'a', j.cost, 1)
    expect(q.peek()).toBe(j)
    expect(q.pop()).toBe(j)
    const k = job('a', 2, 1)
    q.push(k, 'a', k.cost, 1)
    const l = job('b', 1, 2)
    q.push(l, 'b', l.cost, 1)
    expect(q.pop()).toBe(l) // a starts again from zero deficit: 2 > 1
    expect(q.pop()).toBe(k)
  })

  it('peek returns exactly what the next pop returns, and is idempotent', () => {
    const q = new FairQueue<Job>({ quantum: 64 })
    const r = rng(7)
    for (let i = 0; i < 200; i++) {
      const t = `t${Math.floor(r() * 5)}`
      const c = Math.floor(r() * 300)
      q.push(job(t, c, i), t, c, 1 + Math.floor(r() * 3))
    }
    while (q.size > 0) {
      const p = q.peek()
      expect(q.peek()).toBe(p)
      expect(q.pop()).toBe(p)
    }
  })

  it('matches round-by-round DRR under random pushes, pops and removes', () => {
    const r = rng(42)
    const quantum = 50
    const q = new FairQueue<Job>({ quantum })
    const ref = new NaiveDrr(quantum)
    const live: Job[] = []
    for (let i = 0; i < 3000; i++) {
      const op = r()
      if (op < 0.5) {
        const t = `t${Math.floor(r() * 4)}`
        const c = r() < 0.1 ? Math.floor(r() * 2000) : Math.floor(r() * 80)
        const w = 1 + Math.floor(r() * 4)
        const j = job(t, c, i)
        q.push(j, t, c, w)
        ref.push(j, w)
        live.push(j)
      } else if (op < 0.85) {
        const got = q.pop()
        expect(got).toBe(ref.pop())
        if (got !== undefined) live.splice(live.indexOf(got), 1)
      } else if (live.length > 0) {
        const j = live.splice(Math.floor(r() * live.length), 1)[0]!
        expect(q.remove(j)).toBe(true)
        ref.remove(j)
      }
      expect(q.size).toBe(live.length)
    }
    for (let j = q.pop(); j !== undefined; j = q.pop()) expect(j).toBe(ref.pop())
    expect(ref.pop()).toBeUndefined()
    expect(q.size).toBe(0)
    expect(q.totalCost).toBe(0)
    expect(q.tenantCount).toBe(0)
  })

  it('removes items anywhere and drops tenants whose queue empties', () => {
    const q = new FairQueue<Job>()
    const a1 = job('a', 10, 1)
    const a2 = job('a', 20, 2)
    const b1 = job('b', 30, 3)
    q.push(a1, 'a', 10, 1)
    q.push(a2, 'a', 20, 1)
    q.push(b1, 'b', 30, 1)
    expect(q.remove(a2)).toBe(true)
    expect(q.remove(a2)).toBe(false)
    expect(q.has(a2)).toBe(false)
    expect(q.totalCost).toBe(40)
    expect(q.remove(b1)).toBe(true)
    expect(q.tenantCount).toBe(1)
    expect(q.pop()).toBe(a1)
    expect(q.tenantCount).toBe(0)
    expect(q.remove(a1)).toBe(false)
  })

  it('refuses duplicates and invalid weights or costs', () => {
    const q = new FairQueue<Job>()
    const j = job('a', 1, 0)
    q.push(j, 'a', 1, 1)
    expect(() => q.push(j, 'a', 1, 1)).toThrow(/already queued/)
    expect(() => q.push(job('a', 1, 1), 'a', 1, 0)).toThrow(RangeError)
    expect(() => q.push(job('a', -1, 2), 'a', -1, 1)).toThrow(RangeError)
    expect(() => new FairQueue({ quantum: 0 })).toThrow(RangeError)
    expect(q.size).toBe(1)
  })

  it('keeps its record on the item: one queue at a time, and none once served', () => {
    const q1 = new FairQueue<Job>()
    const q2 = new FairQueue<Job>()
    const j = job('a', 5, 0)
    q1.push(j, 'a', 5, 1)
    expect(q2.has(j)).toBe(false)
    expect(q2.remove(j)).toBe(false)
    expect(q2.take(j)).toBe(false)
    expect(() => q2.push(j, 'a', 5, 1)).toThrow(/already queued/)
    expect(q1.pop()).toBe(j)
    expect(j.fairNode).toBeUndefined()
    q2.push(j, 'a', 5, 1)
    expect(q2.has(j)).toBe(true)
    expect(q1.has(j)).toBe(false)
    expect(q2.size).toBe(1)
    expect(q1.size).toBe(0)
  })

  it('handles 100k items across many tenants', () => {
    const q = new FairQueue<Job>()
    const n = 100_000
    for (let i = 0; i < n; i++) {
      const t = `t${i % 100}`
      q.push(job(t, 1 + (i % 2000), i), t, 1 + (i % 2000), 1 + (i % 3))
    }
    let popped = 0
    while (q.pop() !== undefined) popped++
    expect(popped).toBe(n)
    expect(q.tenantCount).toBe(0)
  })
})
