import type { Clock } from '../clock.js'
import { FairQueue } from './fair-queue.js'
import { IndexedMinHeap } from './min-heap.js'

/**
 * The admission queues of one pool: one FairQueue (weighted DRR between tenants, in
 * tokens) per class, strict priority with aging between classes, count and byte limits
 * per class, and deadlines.
 *
 * Service order between classes:
 * 1. A class is *starving* when its oldest item has waited ≥ `agingMs` AND the class has
 *    not been served (dequeue/dequeueFrom) for ≥ `agingMs`. Starving classes are served
 *    first, longest-waiting oldest item first (ties: lower priority number, then the
 *    order the classes were declared in).
 * 2. Then the other non-empty classes by priority (lower number first, ties: declaration
 *    order).
 * Serving one item from a class restarts its aging window, so a starving class gets one
 * item ahead of higher-priority work and then strict priority resumes; it can jump the
 * queue again only after another `agingMs`. So every class receives at least one item
 * per `agingMs` (never starved forever) while priority inversion stays bounded to one
 * item per class per `agingMs`.
 *
 * Deadlines: an item's effective deadline is min(its deadline, enqueue time + the class's
 * maxQueueWaitMs). An indexed min-heap over effective deadlines gives `expired(now)` in
 * O(k log n) and `nextDeadline()` in O(1); dequeue and remove take the item out of the
 * heap in O(log n) (exact removal instead of lazy tombstones, so nothing lingers).
 *
 * Costs: enqueue, dequeue, remove O(log n) (+ O(#classes) to choose a class);
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
}

export interface ClassQueuesOptions {
  classes: readonly QueueClass[]
  clock: Clock
  /** Wait after which a lower-priority class may jump ahead. Default 10_000. */
  agingMs?: number
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
}

export type EnqueueResult = 'ok' | 'queue_full'

export interface Queued<T> {
  item: T
  class: string
}

export interface Dequeued<T> extends Queued<T> {
  waitedMs: number
}

export const DEFAULT_AGING_MS = 10_000

interface Entry<T> {
  readonly item: T
  readonly cls: ClassState<T>
  readonly cost: number
  readonly bytes: number
  readonly enqueuedAt: number
  readonly deadline: number
  /** Enqueue order, breaks deadline ties. */
  readonly seq: number
  heapIndex: number
  /** Neighbours in the class's arrival-order list. */
  older: Entry<T> | undefined
  newer: Entry<T> | undefined
}

interface ClassState<T> {
  readonly spec: QueueClass
  readonly index: number
  readonly fair: FairQueue<Entry<T>>
  bytes: number
  oldest: Entry<T> | undefined
  newest: Entry<T> | undefined
  lastServedAt: number
}

export class ClassQueues<T extends { id: string }> {
  private readonly clock: Clock
  private readonly agingMs: number
  private readonly byName = new Map<string, ClassState<T>>()
  /** Classes by priority, then declaration order. */
  private readonly byPriority: ClassState<T>[]
  private readonly entries = new Map<string, Entry<T>>()
  private readonly deadlines = new IndexedMinHeap<Entry<T>>(
    (a, b) => a.deadline < b.deadline || (a.deadline === b.deadline && a.seq < b.seq),
  )
  private seq = 0

  constructor(options: ClassQueuesOptions) {
    this.clock = options.clock
    this.agingMs = options.agingMs ?? DEFAULT_AGING_MS
    if (!(this.agingMs >= 0)) throw new RangeError(`agingMs must be ≥ 0, got ${this.agingMs}`)
    const fairOptions = options.quantum === undefined ? {} : { quantum: options.quantum }
    options.classes.forEach((spec, index) => {
      if (this.byName.has(spec.name)) throw new Error(`duplicate queue class "${spec.name}"`)
      if (!Number.isFinite(spec.priority))
        throw new RangeError(`class "${spec.name}": priority must be finite`)
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
        lastServedAt: Number.NEGATIVE_INFINITY,
      })
    })
    this.byPriority = [...this.byName.values()].sort(byPriority)
  }

  /** Items queued in all classes. */
  get size(): number {
    return this.entries.size
  }

  has(item: T): boolean {
    return this.entries.has(item.id)
  }

  /** Queues `item`, or refuses it when the class's count or byte limit would be exceeded. */
  enqueue(item: T, req: EnqueueRequest): EnqueueResult {
    const c = this.state(req.class)
    if (this.entries.has(item.id)) throw new Error(`item "${item.id}" is already queued`)
    if (!(Number.isFinite(req.bytes) && req.bytes >= 0)) throw new RangeError(`bytes must be ≥ 0`)
    if (c.fair.size + 1 > c.spec.queueLimit || c.bytes + req.bytes > c.spec.queueLimitBytes) {
      return 'queue_full'
    }
    const now = this.clock.now()
    const entry: Entry<T> = {
      item,
      cls: c,
      cost: req.cost,
      bytes: req.bytes,
      enqueuedAt: now,
      deadline: Math.min(req.deadline, now + c.spec.maxQueueWaitMs),
      seq: this.seq++,
      heapIndex: -1,
      older: c.newest,
      newer: undefined,
    }
    c.fair.push(entry, req.tenant, req.cost, req.weight) // validates cost and weight first
    if (c.newest === undefined) c.oldest = entry
    else c.newest.newer = entry
    c.newest = entry
    c.bytes += req.bytes
    this.entries.set(item.id, entry)
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

  /** Names of the non-empty classes in the order `dequeue()` would serve them now. */
  classesInOrder(): string[] {
    const now = this.clock.now()
    const starving: ClassState<T>[] = []
    const rest: string[] = []
    for (const c of this.byPriority) {
      if (c.oldest === undefined) continue
      if (this.isStarving(c, now)) starving.push(c)
      else rest.push(c.spec.name)
    }
    starving.sort(byOldest)
    return [...starving.map((c) => c.spec.name), ...rest]
  }

  /** Removes a queued item (its client went away). False if it is not queued. */
  remove(item: T): boolean {
    const entry = this.entries.get(item.id)
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
   * Aging is not applied. O(#classes).
   */
  costAhead(name: string): number {
    const p = this.state(name).spec.priority
    let sum = 0
    for (const c of this.byPriority) {
      if (c.spec.priority > p) break
      sum += c.fair.totalCost
    }
    return sum
  }

  /** How long the oldest item of the class has waited at `now`; 0 when it is empty. */
  oldestWaitMs(name: string, now: number): number {
    const oldest = this.state(name).oldest
    return oldest === undefined ? 0 : Math.max(0, now - oldest.enqueuedAt)
  }

  private state(name: string): ClassState<T> {
    const c = this.byName.get(name)
    if (c === undefined) throw new RangeError(`unknown queue class "${name}"`)
    return c
  }

  private isStarving(c: ClassState<T>, now: number): boolean {
    return (
      c.oldest !== undefined &&
      now - c.oldest.enqueuedAt >= this.agingMs &&
      now - c.lastServedAt >= this.agingMs
    )
  }

  /** The class `dequeue()` serves at `now`. O(#classes). */
  private first(now: number): ClassState<T> | undefined {
    let starving: ClassState<T> | undefined
    let plain: ClassState<T> | undefined
    for (const c of this.byPriority) {
      if (c.oldest === undefined) continue
      if (this.isStarving(c, now)) {
        if (starving === undefined || byOldest(c, starving) < 0) starving = c
      } else if (plain === undefined) {
        plain = c
      }
    }
    return starving ?? plain
  }

  private peekState(c: ClassState<T>): Queued<T> | undefined {
    const entry = c.fair.peek()
    return entry === undefined ? undefined : { item: entry.item, class: c.spec.name }
  }

  private dequeueState(c: ClassState<T>, now: number): Dequeued<T> | undefined {
    const entry = c.fair.pop()
    if (entry === undefined) return undefined
    this.detach(entry)
    c.lastServedAt = now
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
    if (c.oldest === undefined) c.bytes = 0 // no floating-point residue when empty
    this.entries.delete(entry.item.id)
  }
}

function byPriority<T>(a: ClassState<T>, b: ClassState<T>): number {
  return a.spec.priority - b.spec.priority || a.index - b.index
}

function byOldest<T>(a: ClassState<T>, b: ClassState<T>): number {
  return a.oldest!.enqueuedAt - b.oldest!.enqueuedAt || byPriority(a, b)
}
