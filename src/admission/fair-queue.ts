/**
 * Weighted deficit round robin (DRR, Shreedhar & Varghese) between tenants, charged in
 * tokens. One FairQueue serves one class of one pool.
 *
 * Rule: tenants with queued items form an active list. The tenant at its head starts a
 * turn by adding its quantum (weight × base quantum) to its deficit, then serves its
 * items in order (by rank, then FIFO: see `push`) while the head item's cost fits in the
 * deficit, paying the cost out of the deficit each time. When the head item does not fit,
 * the turn ends and the tenant moves to the tail with what is left of its deficit. A
 * tenant whose queue empties leaves the active list and loses its deficit (standard DRR),
 * so an idle tenant cannot bank credit, and no per-tenant state outlives its last item.
 * Over a backlogged period each tenant is served tokens in proportion to its weight.
 *
 * An item costlier than one quantum waits until enough turns have passed. Rather than
 * spin through those empty rounds one by one, after a full round in which nobody could
 * serve, the queue adds the same number of quanta to every active tenant that the
 * skipped rounds would have added (the fewest rounds after which someone can serve).
 * This gives exactly the order round-by-round DRR would give.
 *
 * Storage: an intrusive doubly linked list per tenant in rank order, a doubly linked
 * active list of tenants, and each item's node on the item itself (`fairNode`), not in a
 * Map: a long-lived Map that queued items go in and out of makes V8's young-generation
 * collector promote what they hold (see src/slot-map.ts). push (ranks in order), remove,
 * size: O(1). pop, peek: O(1) amortized when costs are mostly below a quantum; in the
 * worst case O(#active tenants).
 *
 * `peek()` settles the round robin (credits and rotates tenants exactly as the next
 * `pop()` would), so it returns the item that the next `pop()` returns, provided
 * nothing is pushed or removed in between. It is idempotent. Deterministic: the same
 * sequence of calls always gives the same order.
 */

export interface FairQueueOptions {
  /** Tokens a tenant of weight 1 may be served per turn. Default 1024. */
  quantum?: number
}

export const DEFAULT_QUANTUM = 1024

/** An item of a FairQueue. */
export interface FairQueued {
  /** The queue's record of the item while it is queued, else undefined. Owned by the queue. */
  fairNode: object | undefined
}

interface ItemNode<T extends FairQueued> {
  readonly queue: FairQueue<T>
  readonly item: T
  readonly cost: number
  /** Served before the tenant's items of a higher rank (see `push`). */
  readonly rank: number
  readonly tenant: TenantState<T>
  prev: ItemNode<T> | undefined
  next: ItemNode<T> | undefined
}

interface TenantState<T extends FairQueued> {
  readonly name: string
  weight: number
  deficit: number
  /** Whether this tenant's current turn has already added its quantum. */
  credited: boolean
  head: ItemNode<T> | undefined
  tail: ItemNode<T> | undefined
  count: number
  /** Neighbours in the active list. */
  prev: TenantState<T> | undefined
  next: TenantState<T> | undefined
}

export class FairQueue<T extends FairQueued> {
  private readonly baseQuantum: number
  private count = 0
  private readonly tenants = new Map<string, TenantState<T>>()
  private activeHead: TenantState<T> | undefined = undefined
  private activeTail: TenantState<T> | undefined = undefined
  private costSum = 0

  constructor(options: FairQueueOptions = {}) {
    const q = options.quantum ?? DEFAULT_QUANTUM
    if (!(Number.isFinite(q) && q > 0)) throw new RangeError(`quantum must be a positive number, got ${q}`)
    this.baseQuantum = q
  }

  /** Items queued. */
  get size(): number {
    return this.count
  }

  /** Sum of the costs (tokens) of the items queued. */
  get totalCost(): number {
    return this.costSum
  }

  /** Tenants with at least one item queued (the active round). */
  get tenantCount(): number {
    return this.tenants.size
  }

  has(item: T): boolean {
    return this.nodeOf(item) !== undefined
  }

  /**
   * Queues `item` in `tenant`'s queue: after every item of a rank ≤ `rank`, before those of a
   * higher rank (the default, +Infinity, is the tail: FIFO). Admission ranks an item by its
   * TTFT deadline, so a tenant's queue is earliest deadline first, which is FIFO when its
   * objectives are the same for every request. The walk starts at the tail: O(1) when ranks
   * come in order. `weight` > 0 sets the tenant's weight (the latest push wins); `cost` ≥ 0
   * is what serving the item charges, in tokens. Throws if the item is already queued.
   */
  push(item: T, tenant: string, cost: number, weight: number, rank = Number.POSITIVE_INFINITY): void {
    if (!(Number.isFinite(cost) && cost >= 0)) throw new RangeError(`cost must be ≥ 0, got ${cost}`)
    if (!(Number.isFinite(weight) && weight > 0)) throw new RangeError(`weight must be > 0, got ${weight}`)
    if (Number.isNaN(rank)) throw new RangeError('rank must be a number, got NaN')
    if (item.fairNode !== undefined) throw new Error('item is already queued')
    let t = this.tenants.get(tenant)
    if (t === undefined) {
      t = {
        name: tenant,
        weight,
        deficit: 0,
        credited: false,
        head: undefined,
        tail: undefined,
        count: 0,
        prev: undefined,
        next: undefined,
      }
      this.tenants.set(tenant, t)
      this.appendActive(t)
    }
    t.weight = weight
    let after = t.tail
    while (after !== undefined && after.rank > rank) after = after.prev
    const before = after === undefined ? t.head : after.next
    const node: ItemNode<T> = { queue: this, item, cost, rank, tenant: t, prev: after, next: before }
    if (after === undefined) t.head = node
    else after.next = node
    if (before === undefined) t.tail = node
    else before.prev = node
    t.count++
    item.fairNode = node
    this.count++
    this.costSum += cost
  }

  /** The item the next `pop()` returns, without removing it. */
  peek(): T | undefined {
    return this.settle()?.head?.item
  }

  pop(): T | undefined {
    const t = this.settle()
    if (t === undefined) return undefined
    const node = t.head!
    t.deficit -= node.cost
    this.unlink(node)
    return node.item
  }

  /**
   * Serves a queued item out of its turn (the dispatcher found it a better fit than the
   * head): removed, and its cost charged to its tenant as `pop` would, so the tenant's later
   * turns pay for it. O(1). False if not queued.
   */
  take(item: T): boolean {
    const node = this.nodeOf(item)
    if (node === undefined) return false
    node.tenant.deficit -= node.cost
    this.unlink(node)
    return true
  }

  /** Removes a queued item (e.g. its client went away). O(1). False if not queued. */
  remove(item: T): boolean {
    const node = this.nodeOf(item)
    if (node === undefined) return false
    this.unlink(node)
    return true
  }

  private nodeOf(item: T): ItemNode<T> | undefined {
    const node = item.fairNode as ItemNode<T> | undefined
    return node?.queue === this ? node : undefined
  }

  /**
   * Advances the round robin until the active head tenant can pay for its head item,
   * and returns that tenant (undefined when empty). Idempotent once settled.
   */
  private settle(): TenantState<T> | undefined {
    let misses = 0
    for (;;) {
      const t = this.activeHead
      if (t === undefined) return undefined
      if (!t.credited) {
        t.deficit += t.weight * this.baseQuantum
        t.credited = true
      }
      if (t.head!.cost <= t.deficit) return t
      // Turn over: keep the remaining deficit, go to the back.
      t.credited = false
      this.moveToTail(t)
      if (++misses >= this.tenants.size) {
        this.skipIdleRounds()
        misses = 0
      }
    }
  }

  /**
   * Called after a full round in which no tenant could serve: every active tenant is
   * uncredited and the head is where the round started. Adds, to every tenant, the
   * quanta of the rounds that would pass before the first tenant can serve, minus one
   * (that last round runs normally so the order among tenants is preserved).
   */
  private skipIdleRounds(): void {
    let fewest = Number.POSITIVE_INFINITY
    for (let t = this.activeHead; t !== undefined; t = t.next) {
      const rounds = Math.ceil((t.head!.cost - t.deficit) / (t.weight * this.baseQuantum))
      if (rounds < fewest) fewest = rounds
    }
    const skip = fewest - 1
    if (!(skip > 0 && Number.isFinite(skip))) return
    for (let t = this.activeHead; t !== undefined; t = t.next) t.deficit += skip * t.weight * this.baseQuantum
  }

  private unlink(node: ItemNode<T>): void {
    const t = node.tenant
    if (node.prev === undefined) t.head = node.next
    else node.prev.next = node.next
    if (node.next === undefined) t.tail = node.prev
    else node.next.prev = node.prev
    node.prev = undefined
    node.next = undefined
    t.count--
    node.item.fairNode = undefined
    this.count--
    this.costSum -= node.cost
    if (this.count === 0) this.costSum = 0 // no floating-point residue when empty
    if (t.count === 0) {
      this.removeActive(t)
      this.tenants.delete(t.name)
    }
  }

  private appendActive(t: TenantState<T>): void {
    t.prev = this.activeTail
    t.next = undefined
    if (this.activeTail === undefined) this.activeHead = t
    else this.activeTail.next = t
    this.activeTail = t
  }

  private removeActive(t: TenantState<T>): void {
    if (t.prev === undefined) this.activeHead = t.next
    else t.prev.next = t.next
    if (t.next === undefined) this.activeTail = t.prev
    else t.next.prev = t.prev
    t.prev = undefined
    t.next = undefined
  }

  private moveToTail(t: TenantState<T>): void {
    if (this.activeTail === t) return
    this.removeActive(t)
    this.appendActive(t)
  }
}
