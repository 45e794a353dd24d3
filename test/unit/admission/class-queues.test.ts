import { describe, expect, it } from 'vitest'
import { ClassQueues, type EnqueueRequest, type QueueClass } from '../../../src/admission/class-queues.js'
import { ManualClock } from '../../../src/clock.js'

interface Item {
  id: string
}

const INTERACTIVE: QueueClass = {
  name: 'interactive',
  priority: 0,
  queueLimit: 100,
  queueLimitBytes: 1_000_000,
  maxQueueWaitMs: 60_000,
}
const BATCH: QueueClass = {
  name: 'batch',
  priority: 10,
  queueLimit: 100,
  queueLimitBytes: 1_000_000,
  maxQueueWaitMs: 1_800_000,
}

// one object per id within a test, as the gateway has one per request (the queues know an item
// by the object, which carries its entry)
let items = new Map<string, Item>()
function item(id: string): Item {
  let it = items.get(id)
  if (it === undefined) {
    it = { id }
    items.set(id, it)
  }
  return it
}

function setup(classes: QueueClass[] = [BATCH, INTERACTIVE]) {
  items = new Map()
  const clock = new ManualClock(1000)
  const q = new ClassQueues<Item>({ classes, clock })
  return { clock, q }
}

function req(cls: string, over: Partial<EnqueueRequest> = {}): EnqueueRequest {
  return { class: cls, tenant: 'default', cost: 100, bytes: 10, weight: 1, deadline: Infinity, ...over }
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

describe('ClassQueues', () => {
  it('serves classes in strict priority order, FIFO within a tenant', () => {
    const { q } = setup()
    expect(q.peek()).toBeUndefined()
    expect(q.dequeue()).toBeUndefined()
    expect(q.enqueue(item('b1'), req('batch'))).toBe('ok')
    expect(q.enqueue(item('i1'), req('interactive'))).toBe('ok')
    expect(q.enqueue(item('i2'), req('interactive'))).toBe('ok')
    expect(q.classesInOrder()).toEqual(['interactive', 'batch'])
    expect(q.peek()).toEqual({ item: item('i1'), class: 'interactive' })
    expect(q.dequeue()?.item.id).toBe('i1')
    expect(q.dequeue()?.item.id).toBe('i2')
    expect(q.classesInOrder()).toEqual(['batch'])
    expect(q.dequeue()).toEqual({ item: item('b1'), class: 'batch', waitedMs: 0 })
    expect(q.size).toBe(0)
  })

  it('lets batch (min share 0.2) ahead of interactive once it has earned its next item, then strict priority resumes', () => {
    const { q } = setup([INTERACTIVE, { ...BATCH, minShare: 0.2 }])
    for (let i = 1; i <= 10; i++) q.enqueue({ id: `i${i}` }, req('interactive'))
    q.enqueue(item('b1'), req('batch'))
    q.enqueue(item('b2'), req('batch'))
    expect(q.underFloor('batch')).toBe(false) // nothing dispatched yet: nothing owed
    // 0.2 of each 100-token interactive dispatch: b1 (100 tokens, 80 net of its own share) after four
    const order = Array.from({ length: 12 }, () => q.dequeue()?.item.id)
    expect(order).toEqual(['i1', 'i2', 'i3', 'i4', 'b1', 'i5', 'i6', 'i7', 'i8', 'b2', 'i9', 'i10'])
    expect(q.dequeue()).toBeUndefined()
  })

  it('gives a class of min share 0 nothing while a class above it has work', () => {
    const { q } = setup([INTERACTIVE, BATCH])
    for (let i = 0; i < 100; i++) q.enqueue({ id: `i${i}` }, req('interactive'))
    q.enqueue(item('b'), req('batch'))
    for (let i = 0; i < 100; i++) {
      expect(q.underFloor('batch')).toBe(false)
      expect(q.dequeue()?.class).toBe('interactive')
    }
    expect(q.dequeue()?.item.id).toBe('b')
  })

  it('counts work dispatched around the queues into the floors of the classes waiting', () => {
    const { q } = setup([INTERACTIVE, { ...BATCH, minShare: 0.5 }])
    q.enqueue(item('b1'), req('batch'))
    q.enqueue(item('i1'), req('interactive'))
    expect(q.classesInOrder()).toEqual(['interactive', 'batch'])
    q.recordDispatch('interactive', 100) // placed at once while b1 waited
    expect(q.underFloor('batch')).toBe(true)
    expect(q.classesInOrder()).toEqual(['batch', 'interactive'])
    expect(q.floorState()).toEqual({ batch: 50 })
    expect(q.dequeue()?.item.id).toBe('b1')
    expect(q.floorState()).toEqual({ batch: 0 }) // its queue emptied: nothing owed, nothing banked
  })

  it('refuses min shares outside [0, 1] or summing past 1', () => {
    const clock = new ManualClock()
    expect(() => new ClassQueues({ classes: [{ ...BATCH, minShare: 1.5 }], clock })).toThrow(/\[0, 1\]/)
    expect(
      () =>
        new ClassQueues({
          classes: [
            { ...INTERACTIVE, minShare: 0.6 },
            { ...BATCH, minShare: 0.5 },
          ],
          clock,
        }),
    ).toThrow(/sum to 1.1/)
    const ok = [
      { ...INTERACTIVE, minShare: 0.7 },
      { ...BATCH, name: 'b', minShare: 0.2 },
      { ...BATCH, minShare: 0.1 },
    ]
    expect(() => new ClassQueues({ classes: ok, clock })).not.toThrow()
  })

  it('lets the dispatcher skip a class with peekClass/dequeueFrom', () => {
    const { clock, q } = setup()
    q.enqueue(item('i1'), req('interactive'))
    q.enqueue(item('b1'), req('batch'))
    clock.advance(250)
    expect(q.peekClass('batch')).toEqual({ item: item('b1'), class: 'batch' })
    expect(q.dequeueFrom('batch')).toEqual({ item: item('b1'), class: 'batch', waitedMs: 250 })
    expect(q.dequeueFrom('batch')).toBeUndefined()
    expect(q.peekClass('batch')).toBeUndefined()
    expect(q.peek()?.item.id).toBe('i1')
    expect(() => q.peekClass('nope')).toThrow(/unknown queue class/)
    expect(() => q.enqueue(item('x'), req('nope'))).toThrow(/unknown queue class/)
  })

  it('lists the items behind a class head, oldest first, and takes one out of turn', () => {
    const { clock, q } = setup()
    for (const id of ['i1', 'i2', 'i3']) q.enqueue(item(id), req('interactive'))
    q.enqueue(item('b1'), req('batch'))
    clock.advance(40)
    expect(q.followers('interactive', 5).map((i) => i.id)).toEqual(['i2', 'i3'])
    expect(q.followers('interactive', 1).map((i) => i.id)).toEqual(['i2'])
    expect(q.takeFrom('batch', item('i3'))).toBeUndefined() // not of that class
    expect(q.takeFrom('interactive', item('nope'))).toBeUndefined()
    expect(q.takeFrom('interactive', item('i3'))).toEqual({
      item: item('i3'),
      class: 'interactive',
      waitedMs: 40,
    })
    expect(q.sizeOf('interactive')).toBe(2)
    expect(q.costOf('interactive')).toBe(200)
    expect(q.bytesOf('interactive')).toBe(20)
    expect(q.has(item('i3'))).toBe(false)
    expect(q.dequeue()?.item.id).toBe('i1')
    expect(q.followers('interactive', 5)).toEqual([])
  })

  it('serves a tenant by TTFT deadline (order), FIFO among equal ones, and counts only earlier orders ahead', () => {
    const { clock, q } = setup()
    q.enqueue(item('long1'), req('interactive', { cost: 4000, order: 1900 }))
    q.enqueue(item('long2'), req('interactive', { cost: 4000, order: 1950 }))
    clock.advance(100)
    // a short prompt with a tighter objective: ahead of the two long ones, behind the batch-free queue
    expect(q.costAhead('interactive', 1600)).toBe(0)
    q.enqueue(item('short'), req('interactive', { cost: 200, order: 1600 }))
    q.enqueue(item('same'), req('interactive', { cost: 200, order: 1900 })) // after long1: FIFO among equals
    q.enqueue(item('tail'), req('interactive', { cost: 50 })) // no order: the tail
    expect(q.costAhead('interactive', 1900)).toBe(200 + 4000 + 200)
    expect(q.ahead('interactive', 1900)).toEqual({ tokens: 4400, requests: 3 })
    expect(q.costAhead('interactive')).toBe(8450)
    expect(q.ahead('interactive').requests).toBe(5)
    expect(q.oldestWaitMs('interactive', clock.now())).toBe(100) // long1, not the head
    const order: string[] = []
    for (let d = q.dequeue(); d !== undefined; d = q.dequeue()) order.push(d.item.id)
    expect(order).toEqual(['short', 'long1', 'same', 'long2', 'tail'])
  })

  it('shares a class 1:3 between tenants of weights 1 and 3 over 400 dequeues', () => {
    const big = { ...INTERACTIVE, queueLimit: 10_000 }
    const { q } = setup([big])
    for (let i = 0; i < 400; i++) {
      q.enqueue({ id: `a${i}` }, req('interactive', { tenant: 'a', weight: 1, cost: 200 }))
      q.enqueue({ id: `b${i}` }, req('interactive', { tenant: 'b', weight: 3, cost: 200 }))
    }
    let a = 0
    let b = 0
    for (let i = 0; i < 400; i++) {
      if (q.dequeue()!.item.id.startsWith('a')) a++
      else b++
    }
    expect(b / a).toBeGreaterThan(2.7)
    expect(b / a).toBeLessThan(3.3)
  })

  it('refuses with queue_full on the count limit and on the byte limit, per class', () => {
    const small: QueueClass = { ...INTERACTIVE, queueLimit: 2, queueLimitBytes: 100 }
    const { q } = setup([small, BATCH])
    expect(q.enqueue(item('1'), req('interactive', { bytes: 40 }))).toBe('ok')
    expect(q.enqueue(item('2'), req('interactive', { bytes: 61 }))).toBe('queue_full') // 101 bytes
    expect(q.enqueue(item('2'), req('interactive', { bytes: 60 }))).toBe('ok') // exactly 100
    expect(q.enqueue(item('3'), req('interactive', { bytes: 0 }))).toBe('queue_full') // 3 items
    expect(q.enqueue(item('3'), req('batch', { bytes: 500 }))).toBe('ok') // other class unaffected
    expect(q.sizeOf('interactive')).toBe(2)
    expect(q.bytesOf('interactive')).toBe(100)
    q.dequeue()
    expect(q.enqueue(item('4'), req('interactive', { bytes: 40 }))).toBe('ok')
    expect(() => q.enqueue(item('4'), req('batch'))).toThrow(/already queued/)
  })

  it('removes a queued item and keeps every counter exact', () => {
    const { clock, q } = setup()
    q.enqueue(item('i1'), req('interactive', { cost: 300, bytes: 30, deadline: 5000 }))
    clock.advance(100)
    q.enqueue(item('i2'), req('interactive', { cost: 200, bytes: 20, deadline: 3000 }))
    q.enqueue(item('b1'), req('batch', { cost: 1000, bytes: 100 }))
    expect(q.costAhead('interactive')).toBe(500)
    expect(q.costAhead('batch')).toBe(1500)
    expect(q.costOf('batch')).toBe(1000)
    expect(q.nextDeadline()).toBe(3000)
    expect(q.oldestWaitMs('interactive', clock.now())).toBe(100)

    expect(q.remove(item('i2'))).toBe(true)
    expect(q.remove(item('i2'))).toBe(false)
    expect(q.has(item('i2'))).toBe(false)
    expect(q.nextDeadline()).toBe(5000)
    expect(q.costAhead('interactive')).toBe(300)
    expect(q.bytesOf('interactive')).toBe(30)
    expect(q.remove(item('i1'))).toBe(true)
    expect(q.oldestWaitMs('interactive', clock.now())).toBe(0)
    expect(q.nextDeadline()).toBe(1100 + BATCH.maxQueueWaitMs) // b1: enqueued at 1100, class cap
    expect(q.remove(item('b1'))).toBe(true)
    expect(q.size).toBe(0)
    expect(q.nextDeadline()).toBeUndefined()
    expect(q.costAhead('batch')).toBe(0)
  })

  it('expires items at their deadline (capped by maxQueueWaitMs) and reports the next one', () => {
    const capped: QueueClass = { ...INTERACTIVE, maxQueueWaitMs: 2_000 }
    const { clock, q } = setup([capped, BATCH])
    q.enqueue(item('late'), req('interactive', { deadline: 10_000 })) // capped to 1000 + 2000
    q.enqueue(item('early'), req('interactive', { deadline: 1_500 }))
    q.enqueue(item('b'), req('batch', { deadline: 2_500 }))
    q.enqueue(item('tie'), req('batch', { deadline: 1_500 }))
    expect(q.nextDeadline()).toBe(1_500)
    expect(q.expired(clock.now())).toEqual([])
    clock.advance(499)
    expect(q.expired(clock.now())).toEqual([])
    clock.advance(1)
    expect(q.expired(clock.now())).toEqual([{ id: 'early' }, { id: 'tie' }]) // deadline ≤ now, FIFO on ties
    expect(q.nextDeadline()).toBe(2_500)
    clock.advance(10_000)
    expect(q.expired(clock.now())).toEqual([{ id: 'b' }, { id: 'late' }])
    expect(q.size).toBe(0)
    expect(q.nextDeadline()).toBeUndefined()
    expect(q.bytesOf('interactive')).toBe(0)
  })

  it('returns every counter to zero after 1,000 random operations (reference model)', () => {
    const classes: QueueClass[] = [
      { name: 'interactive', priority: 0, queueLimit: 40, queueLimitBytes: 4000, maxQueueWaitMs: 5_000 },
      {
        name: 'standard',
        priority: 5,
        queueLimit: 30,
        queueLimitBytes: 3000,
        maxQueueWaitMs: 20_000,
        minShare: 0.1,
      },
      {
        name: 'batch',
        priority: 10,
        queueLimit: 50,
        queueLimitBytes: 5000,
        maxQueueWaitMs: 60_000,
        minShare: 0.05,
      },
    ]
    const names = classes.map((c) => c.name)
    const prio = new Map(classes.map((c) => [c.name, c.priority]))
    const { clock, q } = setup(classes)
    const r = rng(2024)
    interface Ref {
      item: Item
      cls: string
      cost: number
      bytes: number
      deadline: number
      order: number
      seq: number
      enqueuedAt: number
    }
    const model = new Map<string, Ref>()
    const pick = <V>(xs: readonly V[]): V => xs[Math.floor(r() * xs.length)]!
    const check = (): void => {
      expect(q.size).toBe(model.size)
      const refs = [...model.values()]
      for (const c of classes) {
        const mine = refs.filter((x) => x.cls === c.name)
        expect(q.sizeOf(c.name)).toBe(mine.length)
        expect(q.bytesOf(c.name)).toBe(mine.reduce((s, x) => s + x.bytes, 0))
        const ahead = refs.filter((x) => prio.get(x.cls)! <= c.priority).reduce((s, x) => s + x.cost, 0)
        expect(q.costAhead(c.name)).toBe(ahead)
        // with an arrival's order: its class's items of a later order are not ahead of it
        const o = clock.now() + Math.floor(r() * 30_000)
        const later = mine.filter((x) => x.order > o).reduce((s, x) => s + x.cost, 0)
        expect(q.costAhead(c.name, o)).toBe(ahead - later)
        // the class in order, then arrival (its DRR head left out)
        const head = q.peekClass(c.name)?.item
        const inOrder = [...mine]
          .sort((a, b) => a.order - b.order || a.seq - b.seq)
          .map((x) => x.item)
          .filter((x) => x !== head)
        expect(q.followers(c.name, 1000)).toEqual(inOrder)
        const oldest = Math.min(...mine.map((x) => x.enqueuedAt))
        expect(q.oldestWaitMs(c.name, clock.now())).toBe(mine.length === 0 ? 0 : clock.now() - oldest)
      }
      const next = refs.length === 0 ? undefined : Math.min(...refs.map((x) => x.deadline))
      expect(q.nextDeadline()).toBe(next)
    }
    for (let i = 0; i < 1000; i++) {
      const op = r()
      if (op < 0.45) {
        const cls = pick(names)
        const spec = classes.find((c) => c.name === cls)!
        const bytes = Math.floor(r() * 300)
        const cost = Math.floor(r() * 3000)
        const deadline = r() < 0.3 ? Infinity : clock.now() + Math.floor(r() * 30_000)
        const order = r() < 0.3 ? undefined : clock.now() + Math.floor(r() * 30_000)
        const item = { id: `r${i}` }
        const inClass = [...model.values()].filter((x) => x.cls === cls)
        const full =
          inClass.length + 1 > spec.queueLimit ||
          inClass.reduce((s, x) => s + x.bytes, 0) + bytes > spec.queueLimitBytes
        const res = q.enqueue(item, {
          class: cls,
          tenant: pick(['t1', 't2', 't3']),
          cost,
          bytes,
          weight: pick([1, 2, 3]),
          deadline,
          ...(order === undefined ? {} : { order }),
        })
        expect(res).toBe(full ? 'queue_full' : 'ok')
        if (!full) {
          model.set(item.id, {
            item,
            cls,
            cost,
            bytes,
            deadline: Math.min(deadline, clock.now() + spec.maxQueueWaitMs),
            order: order ?? Infinity,
            seq: i,
            enqueuedAt: clock.now(),
          })
        }
      } else if (op < 0.6) {
        const peeked = q.peek()
        const got = q.dequeue()
        expect(got?.item).toBe(peeked?.item)
        if (got !== undefined) {
          expect(model.get(got.item.id)?.cls).toBe(got.class)
          model.delete(got.item.id)
        } else expect(model.size).toBe(0)
      } else if (op < 0.7) {
        const cls = pick(names)
        const got = q.dequeueFrom(cls)
        if (got !== undefined) {
          expect(model.get(got.item.id)?.cls).toBe(cls)
          model.delete(got.item.id)
        }
      } else if (op < 0.85) {
        const ids = [...model.keys()]
        if (r() < 0.2 || ids.length === 0) expect(q.remove(item('absent'))).toBe(false)
        else {
          const id = pick(ids)
          expect(q.remove(model.get(id)!.item)).toBe(true)
          model.delete(id)
        }
      } else {
        clock.advance(Math.floor(r() * 2_000))
        const now = clock.now()
        const want = [...model.values()].filter((x) => x.deadline <= now).map((x) => x.item.id)
        const got = q.expired(now).map((x) => x.id)
        expect([...got].sort()).toEqual([...want].sort())
        for (const id of got) model.delete(id)
      }
      check()
    }
    // Drain by a mix of the three ways out, then everything must be zero.
    let k = 0
    while (q.size > 0) {
      const way = k++ % 3
      if (way === 0) q.dequeue()
      else if (way === 1) q.dequeueFrom(pick(names))
      else {
        const first = q.peek()
        if (first !== undefined) q.remove(first.item)
      }
    }
    expect(q.nextDeadline()).toBeUndefined()
    expect(q.classesInOrder()).toEqual([])
    for (const c of names) {
      expect(q.sizeOf(c)).toBe(0)
      expect(q.bytesOf(c)).toBe(0)
      expect(q.costAhead(c)).toBe(0)
      expect(q.oldestWaitMs(c, clock.now())).toBe(0)
    }
  })

  it('handles 100k items enqueued and dequeued', () => {
    const big = (c: QueueClass): QueueClass => ({ ...c, queueLimit: 100_000, queueLimitBytes: 1e12 })
    const { clock, q } = setup([big(INTERACTIVE), big(BATCH)])
    const n = 100_000
    for (let i = 0; i < n; i++) {
      const cls = i % 4 === 0 ? 'batch' : 'interactive'
      q.enqueue({ id: `${i}` }, req(cls, { tenant: `t${i % 50}`, cost: 1 + (i % 4000), deadline: 1e9 + i }))
      if (i % 1000 === 0) clock.advance(1)
    }
    expect(q.size).toBe(n)
    let out = 0
    while (q.dequeue() !== undefined) out++
    expect(out).toBe(n)
    expect(q.nextDeadline()).toBeUndefined()
  })
})
