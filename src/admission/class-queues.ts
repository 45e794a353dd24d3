import type { Clock } from '../clock.js'
import { FairQueue, type FairQueued } from './fair-queue.js'
import { IndexedMinHeap } from './min-heap.js'
import { ShareFloor } from './share-floor.js'

/**
 * The admission queues of one pool: one FairQueue (weighted DRR between tenants, in
 * tokens) per class, strict priority with a floor between classes, count and byte limits
 * per class, and deadlines.
 *
 * Service order between classes:
 * 1. A class with a `minShare` is *due* when serving its next item keeps it within its
 *    share of the prompt tokens dispatched while it had items queued (see ShareFloor: a
 *    deficit, bounded by a sliding window of `minShareWindowMs`). Due classes are served
 *    first, by priority.
 * 2. Then the other non-empty classes by priority (lower number first, ties: declaration
 *    order).
 * So under a permanent backlog above it a class of minShare s gets s of the tokens (to
 * within one item), and priority inversion is bounded by the same s; a class of minShare 0
 * gets nothing while a class above it has work. Work-conserving: a class with nothing
 * queued accrues nothing, so its share goes to the others, and any class takes whatever the
 * classes above it leave. Dispatches that bypass the queues (`recordDispatch`) count too.
 *
 * Order within a class: each tenant's items by `order` (admission's TTFT deadline: arrival
 * plus the request's TTFT objective), then FIFO, so a short prompt under a length-aware
 * objective is not queued behind long prompts that have hundreds of ms of slack left; with
 * one objective for every request of a tenant that is FIFO. The class keeps its items in
 * that order too (across tenants), for what walks the queue as it will be served
 * (`shedWhere`, `followers`) and for the work ahead of a new arrival (`costAhead`).
 *
 * Deadlines: an item's effective deadline is min(its deadline, enqueue time + the class's
 * maxQueueWaitMs). An indexed min-heap over effective deadlines gives `expired(now)` in
 * O(k log n) and `nextDeadline()` in O(1); dequeue and remove take the item out of the
 * heap in O(log n) (exact removal instead of lazy tombstones, so nothing lingers).
 *
 * Costs: enqueue, dequeue, takeFrom, remove O(log n) (+ O(#classes) to choose a class);
 * counters O(1), costAhead O(#classes). The clock must be monotonic.
 */

export interface QueueClass {
  name: string
  /** Lower is served first. */
  priority: number
  /** Maximum items queued in this class. */
  queueLimit: number
  /** Maximum bytes (request bodies) queued in this class. */
  queueLimitBytes: number
  /** Longest an item may wait in this class; caps its deadline. */
  maxQueueWaitMs: number
  /** Share (0..1) of the prompt tokens dispatched the class gets while it has items queued. Default 0. */
  minShare?: number
}

export interface ClassQueuesOptions {
  classes: readonly QueueClass[]
  clock: Clock
  /** The window bounding what a class's floor remembers (see ShareFloor). Default 5_000. */
  minShareWindowMs?: number
  /** DRR base quantum in tokens (× tenant weight). Default 1024. */
  quantum?: number
}

export interface EnqueueRequest {
  class: string
  tenant: string
  /** Tokens charged by the fair queue (and counted by costAhead). */
  cost: number
  bytes: number
  /** Tenant weight for the fair queue, > 0. */
  weight: number
  /** Clock ms after which the item is shed; Infinity for none (maxQueueWaitMs still applies). */
  deadline: number
  /**
   * Served before the items of its class and tenant of a later `order`: its TTFT deadline
   * (clock ms). Default +Infinity: after every item queued (FIFO).
   */
  order?: number
}

export type EnqueueResult = 'ok' | 'queue_full'

export interface Queued<T> {
  item: T
  class: string
}

export interface Dequeued<T> extends Queued<T> {
  waitedMs: number
}

export const DEFAULT_MIN_SHARE_WINDOW_MS = 5_000

/** An item of ClassQueues. */
export interface ClassQueued {
  readonly id: string
  /** The queues' record of the item while it is queued, else undefined. Owned by the queues. */
  queueEntry?: object | undefined
}

interface Entry<T extends ClassQueued> extends FairQueued {
  readonly queues: ClassQueues<T>
  readonly item: T
  readonly cls: ClassState<T>
  readonly cost: number
  readonly bytes: number
  readonly enqueuedAt: number
  readonly deadline: number
  /** Its rank in the class's order (EnqueueRequest.order). */
  readonly order: number
  /** Enqueue order, breaks deadline ties. */
  readonly seq: number
  heapIndex: number
  /** Neighbours in the class's list, in `order` then arrival (service order for one tenant). */
  older: Entry<T> | undefined
  newer: Entry<T> | undefined
}

interface ClassState<T extends ClassQueued> {
  readonly spec: QueueClass
  readonly index: number
  readonly fair: FairQueue<Entry<T>>
  bytes: number
  oldest: Entry<T> | undefined
  newest: Entry<T> | undefined
  /** The class's floor; undefined for a minShare of 0. */
  readonly floor: ShareFloor | undefined
}

export class ClassQueues<T extends ClassQueued> {
  private readonly clock: Clock
  private readonly byName = new Map<string, ClassState<T>>()
  /** Classes by priority, then declaration order. */
  private readonly byPriority: ClassState<T>[]
  /** The classes with a floor, by priority. */
  private readonly floors: ClassState<T>[]
  /**
   * Items queued. Each item's entry is on the item (`queueEntry`), not in a Map: a long-lived
   * Map that queued items go in and out of makes V8's young-generation collector promote what
   * they hold (see src/slot-map.ts).
   */
  private count = 0
  private readonly deadlines = new IndexedMinHeap<Entry<T>>(
    (a, b) => a.deadline < b.deadline || (a.deadline === b.deadline && a.seq < b.seq),
  )
  private seq = 0

  constructor(options: ClassQueuesOptions) {
    this.clock = options.clock
    const windowMs = options.minShareWindowMs ?? DEFAULT_MIN_SHARE_WINDOW_MS
    if (!(windowMs > 0)) throw new RangeError(`minShareWindowMs must be > 0, got ${windowMs}`)
    let shares = 0
    const fairOptions = options.quantum === undefined ? {} : { quantum: options.quantum }
    options.classes.forEach((spec, index) => {
      if (this.byName.has(spec.name)) throw new Error(`duplicate queue class "${spec.name}"`)
      if (!Number.isFinite(spec.priority))
        throw new RangeError(`class "${spec.name}": priority must be finite`)
      const minShare = spec.minShare ?? 0
      if (!(minShare >= 0 && minShare <= 1))
        throw new RangeError(`class "${spec.name}": minShare must be in [0, 1], got ${minShare}`)
      shares += minShare
      for (const key of ['queueLimit', 'queueLimitBytes', 'maxQueueWaitMs'] as const) {
        if (!(spec[key] >= 0)) throw new RangeError(`class "${spec.name}": ${key} must be ≥ 0`)
      }
      this.byName.set(spec.name, {
        spec: { ...spec },
        index,
        fair: new FairQueue<Entry<T>>(fairOptions),
        bytes: 0,
        oldest: undefined,
        newest: undefined,
        floor: minShare > 0 ? new ShareFloor(minShare, windowMs) : undefined,
      })
    })
    // a little slack for shares written in decimals (0.7 + 0.2 + 0.1)
    if (shares > 1 + 1e-9) throw new RangeError(`the classes' minShare sum to ${shares}, more than 1`)
    this.byPriority = [...this.byName.values()].sort(byPriority)
    this.floors = this.byPriority.filter((c) => c.floor !== undefined)
  }

  /** Items queued in all classes. */
  get size(): number {
    return this.count
  }

  has(item: T): boolean {
    return this.entryOf(item) !== undefined
  }

  /** Queues `item`, or refuses it when the class's count or byte limit would be exceeded. */
  enqueue(item: T, req: EnqueueRequest): EnqueueResult {
    const c = this.state(req.class)
    if (item.queueEntry !== undefined) throw new Error(`item "${item.id}" is already queued`)
    if (!(Number.isFinite(req.bytes) && req.bytes >= 0)) throw new RangeError(`bytes must be ≥ 0`)
    if (c.fair.size + 1 > c.spec.queueLimit || c.bytes + req.bytes > c.spec.queueLimitBytes) {
      return 'queue_full'
    }
    const now = this.clock.now()
    const order = req.order ?? Number.POSITIVE_INFINITY
    let older = c.newest
    while (older !== undefined && older.order > order) older = older.older
    const newer = older === undefined ? c.oldest : older.newer
    const entry: Entry<T> = {
      queues: this,
      item,
      cls: c,
      cost: req.cost,
      bytes: req.bytes,
      enqueuedAt: now,
      deadline: Math.min(req.deadline, now + c.spec.maxQueueWaitMs),
      order,
      seq: this.seq++,
      heapIndex: -1,
      older,
      newer,
      fairNode: undefined,
    }
    c.fair.push(entry, req.tenant, req.cost, req.weight, order) // validates cost, weight, order first
    if (older === undefined) c.oldest = entry
    else older.newer = entry
    if (newer === undefined) c.newest = entry
    else newer.older = entry
    c.bytes += req.bytes
    item.queueEntry = entry
    this.count++
    if (Number.isFinite(entry.deadline)) this.deadlines.push(entry)
    return 'ok'
  }

  /** What `dequeue()` would return now, without removing it. */
  peek(): Queued<T> | undefined {
    const c = this.first(this.clock.now())
    return c === undefined ? undefined : this.peekState(c)
  }

  /** Removes and returns the next item in service order (see the class doc comment). */
  dequeue(): Dequeued<T> | undefined {
    const now = this.clock.now()
    const c = this.first(now)
    return c === undefined ? undefined : this.dequeueState(c, now)
  }

  /** The next item of one class (its DRR head), for a dispatcher that skips classes. */
  peekClass(name: string): Queued<T> | undefined {
    return this.peekState(this.state(name))
  }

  /** Removes and returns the next item of one class. Counts as serving that class. */
  dequeueFrom(name: string): Dequeued<T> | undefined {
    return this.dequeueState(this.state(name), this.clock.now())
  }

  /**
   * Up to `limit` items of class `name` other than its head, in the class's order (which
   * stands in for the fair queue's): the ones a dispatcher may serve out of turn.
   */
  followers(name: string, limit: number): T[] {
    const c = this.state(name)
    const head = c.fair.peek()
    const out: T[] = []
    for (let e = c.oldest; e !== undefined && out.length < limit; e = e.newer)
      if (e !== head) out.push(e.item)
    return out
  }

  /**
   * Removes `item` of class `name` out of its turn. Counts as serving that class, and its
   * tenant pays for it in the fair queue as if it had been its turn.
   */
  takeFrom(name: string, item: T): Dequeued<T> | undefined {
    const c = this.state(name)
    const entry = this.entryOf(item)
    if (entry === undefined || entry.cls !== c) return undefined
    const now = this.clock.now()
    c.fair.take(entry)
    this.charge(c, entry.cost, now) // before detach: the class still counts as queued
    this.detach(entry)
    return { item, class: name, waitedMs: Math.max(0, now - entry.enqueuedAt) }
  }

  /** Names of the non-empty classes in the order `dequeue()` would serve them now. */
  classesInOrder(): string[] {
    const now = this.clock.now()
    const due: string[] = []
    const rest: string[] = []
    for (const c of this.byPriority) {
      if (c.oldest === undefined) continue
      if (this.isDue(c, now)) due.push(c.spec.name)
      else rest.push(c.spec.name)
    }
    return [...due, ...rest]
  }

  /**
   * True when the class is served under its floor now: it has items queued and serving
   * the next keeps it within its minShare (it goes before the classes above it).
   */
  underFloor(name: string): boolean {
    return this.isDue(this.state(name), this.clock.now())
  }

  /** What each class with a floor is owed now, prompt tokens (negative: taken beyond its share). */
  floorState(): Record<string, number> {
    const now = this.clock.now()
    return Object.fromEntries(this.floors.map((c) => [c.spec.name, Math.round(c.floor!.owed(now))]))
  }

  /**
   * Work of class `name` dispatched without passing through the queues (placed at once):
   * it counts in the shares of the classes that have items queued.
   */
  recordDispatch(name: string, cost: number): void {
    this.charge(this.state(name), cost, this.clock.now())
  }

  /** Removes a queued item (its client went away). False if it is not queued. */
  remove(item: T): boolean {
    const entry = this.entryOf(item)
    if (entry === undefined) return false
    this.detach(entry)
    return true
  }

  /** Removes and returns every item whose effective deadline is ≤ now, earliest first. */
  expired(now: number): T[] {
    const out: T[] = []
    for (
      let top = this.deadlines.peek();
      top !== undefined && top.deadline <= now;
      top = this.deadlines.peek()
    ) {
      this.detach(top)
      out.push(top.item)
    }
    return out
  }

  /**
   * Walks class `name` in its order, each item with the prompt tokens queued ahead of it
   * (the classes served before it under strict priority, and its own class's items before
   * it), and removes those `hopeless` says can no longer make it. Returns them in that
   * order. The class's order stands in for the fair queue's. O(items in the class).
   */
  shedWhere(name: string, hopeless: (item: T, aheadTokens: number, aheadRequests: number) => boolean): T[] {
    const c = this.state(name)
    const before = this.ahead(name)
    let ahead = before.tokens - c.fair.totalCost
    let requests = before.requests - c.fair.size
    const out: T[] = []
    for (let e = c.oldest; e !== undefined; ) {
      const next = e.newer
      if (hopeless(e.item, ahead, requests)) {
        this.detach(e)
        out.push(e.item)
      } else {
        ahead += e.cost
        requests++
      }
      e = next
    }
    return out
  }

  /** The earliest effective deadline queued, for arming one timer; undefined when none. */
  nextDeadline(): number | undefined {
    return this.deadlines.peek()?.deadline
  }

  sizeOf(name: string): number {
    return this.state(name).fair.size
  }

  bytesOf(name: string): number {
    return this.state(name).bytes
  }

  /** Token cost queued in this class alone. */
  costOf(name: string): number {
    return this.state(name).fair.totalCost
  }

  /**
   * Token cost queued in the classes served before or with `name` under strict priority
   * (priority ≤ its priority, itself included): the prefill work ahead of a new arrival.
   * With `order` (the arrival's EnqueueRequest.order), its own class's items of a later
   * order, which it would go ahead of, are left out. The floor is not applied.
   * O(#classes + items of a later order).
   */
  costAhead(name: string, order = Number.POSITIVE_INFINITY): number {
    return this.ahead(name, order).tokens
  }

  /** What costAhead counts: its tokens, and the requests they belong to. */
  ahead(name: string, order = Number.POSITIVE_INFINITY): { tokens: number; requests: number } {
    const own = this.state(name)
    const p = own.spec.priority
    let tokens = 0
    let requests = 0
    for (const c of this.byPriority) {
      if (c.spec.priority > p) break
      tokens += c.fair.totalCost
      requests += c.fair.size
    }
    for (let e = own.newest; e !== undefined && e.order > order; e = e.older) {
      tokens -= e.cost
      requests--
    }
    return { tokens: Math.max(0, tokens), requests: Math.max(0, requests) }
  }

  /** How long the oldest item of the class has waited at `now`; 0 when it is empty. O(items in the class). */
  oldestWaitMs(name: string, now: number): number {
    let first = Number.POSITIVE_INFINITY
    for (let e = this.state(name).oldest; e !== undefined; e = e.newer) first = Math.min(first, e.enqueuedAt)
    return Number.isFinite(first) ? Math.max(0, now - first) : 0
  }

  private state(name: string): ClassState<T> {
    const c = this.byName.get(name)
    if (c === undefined) throw new RangeError(`unknown queue class "${name}"`)
    return c
  }

  private isDue(c: ClassState<T>, now: number): boolean {
    const head = c.fair.peek()
    return c.floor !== undefined && head !== undefined && c.floor.due(now, head.cost)
  }

  /** The class `dequeue()` serves at `now`: the first due, else the first non-empty. O(#classes). */
  private first(now: number): ClassState<T> | undefined {
    for (const c of this.floors) if (this.isDue(c, now)) return c
    for (const c of this.byPriority) if (c.oldest !== undefined) return c
    return undefined
  }

  /** `cost` tokens of class `by` went out: into the floor of every class with items queued. */
  private charge(by: ClassState<T>, cost: number, now: number): void {
    for (const c of this.floors) {
      if (c.oldest === undefined) continue
      c.floor!.record(now, cost, c === by, c.fair.peek()?.cost ?? 0)
    }
  }

  private peekState(c: ClassState<T>): Queued<T> | undefined {
    const entry = c.fair.peek()
    return entry === undefined ? undefined : { item: entry.item, class: c.spec.name }
  }

  private dequeueState(c: ClassState<T>, now: number): Dequeued<T> | undefined {
    const entry = c.fair.pop()
    if (entry === undefined) return undefined
    this.charge(c, entry.cost, now) // before detach: the class still counts as queued
    this.detach(entry)
    return { item: entry.item, class: c.spec.name, waitedMs: Math.max(0, now - entry.enqueuedAt) }
  }

  /** Takes an entry out of every structure (the fair queue too, if it is still there). */
  private detach(entry: Entry<T>): void {
    const c = entry.cls
    c.fair.remove(entry)
    this.deadlines.remove(entry)
    if (entry.older === undefined) c.oldest = entry.newer
    else entry.older.newer = entry.newer
    if (entry.newer === undefined) c.newest = entry.older
    else entry.newer.older = entry.older
    entry.older = undefined
    entry.newer = undefined
    c.bytes -= entry.bytes
    if (c.oldest === undefined) {
      c.bytes = 0 // no floating-point residue when empty
      c.floor?.emptied()
    }
    entry.item.queueEntry = undefined
    this.count--
  }

  private entryOf(item: T): Entry<T> | undefined {
    const entry = item.queueEntry as Entry<T> | undefined
    return entry?.queues === this ? entry : undefined
  }
}

function byPriority<T extends ClassQueued>(a: ClassState<T>, b: ClassState<T>): number {
  return a.spec.priority - b.spec.priority || a.index - b.index
}
