/**
 * An indexed binary min-heap. Each element carries its own position (`heapIndex`,
 * -1 when not in a heap), so an element can be removed from the middle in O(log n)
 * without a search and without tombstones: the heap holds exactly the live elements,
 * and its memory returns to zero when they leave.
 *
 * push, pop, remove: O(log n). peek, size: O(1).
 * An element may be in at most one IndexedMinHeap at a time.
 */
export interface HeapNode {
  /** Position in the heap's array; -1 when not in a heap. Owned by the heap. */
  heapIndex: number
}

export class IndexedMinHeap<E extends HeapNode> {
  private readonly items: E[] = []

  /** `less(a, b)` is true when a must come out before b. Must be a strict order. */
  constructor(private readonly less: (a: E, b: E) => boolean) {}

  get size(): number {
    return this.items.length
  }

  peek(): E | undefined {
    return this.items[0]
  }

  push(e: E): void {
    if (e.heapIndex !== -1) throw new Error('element is already in a heap')
    e.heapIndex = this.items.length
    this.items.push(e)
    this.up(e.heapIndex)
  }

  pop(): E | undefined {
    const top = this.items[0]
    if (top !== undefined) this.removeAt(0)
    return top
  }

  /** Removes `e` if it is in this heap; false otherwise. */
  remove(e: E): boolean {
    const i = e.heapIndex
    if (i < 0 || this.items[i] !== e) return false
    this.removeAt(i)
    return true
  }

  private removeAt(i: number): void {
    const removed = this.items[i]!
    const last = this.items.pop()!
    removed.heapIndex = -1
    if (i === this.items.length) return // removed the last slot
    this.items[i] = last
    last.heapIndex = i
    // The moved element may belong above or below its new slot.
    if (i > 0 && this.less(last, this.items[(i - 1) >> 1]!)) this.up(i)
    else this.down(i)
  }

  private up(i: number): void {
    const e = this.items[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = this.items[p]!
      if (!this.less(e, parent)) break
      this.items[i] = parent
      parent.heapIndex = i
      i = p
    }
    this.items[i] = e
    e.heapIndex = i
  }

  private down(i: number): void {
    const n = this.items.length
    const e = this.items[i]!
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      let c = l
      if (r < n && this.less(this.items[r]!, this.items[l]!)) c = r
      const child = this.items[c]!
      if (!this.less(child, e)) break
      this.items[i] = child
      child.heapIndex = i
      i = c
    }
    this.items[i] = e
    e.heapIndex = i
  }
}
