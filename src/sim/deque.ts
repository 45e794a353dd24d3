/** A double-ended queue on a growable ring buffer: O(1) push/pop/shift/unshift. */
export class Deque<T> {
  private buf: (T | undefined)[]
  private head = 0
  private len = 0

  constructor(capacity = 16) {
    this.buf = new Array<T | undefined>(Math.max(4, capacity))
  }

  get length(): number {
    return this.len
  }

  push(v: T): void {
    if (this.len === this.buf.length) this.grow()
    this.buf[(this.head + this.len) % this.buf.length] = v
    this.len++
  }

  unshift(v: T): void {
    if (this.len === this.buf.length) this.grow()
    this.head = (this.head - 1 + this.buf.length) % this.buf.length
    this.buf[this.head] = v
    this.len++
  }

  peek(): T | undefined {
    return this.len === 0 ? undefined : this.buf[this.head]
  }

  shift(): T | undefined {
    if (this.len === 0) return undefined
    const v = this.buf[this.head]
    this.buf[this.head] = undefined
    this.head = (this.head + 1) % this.buf.length
    this.len--
    return v
  }

  at(i: number): T | undefined {
    if (i < 0 || i >= this.len) return undefined
    return this.buf[(this.head + i) % this.buf.length]
  }

  /** Keeps only the elements for which `keep` is true, in order. O(n). */
  retain(keep: (v: T) => boolean): void {
    const kept: T[] = []
    for (let i = 0; i < this.len; i++) {
      const v = this.buf[(this.head + i) % this.buf.length]!
      if (keep(v)) kept.push(v)
    }
    this.buf = new Array<T | undefined>(Math.max(16, kept.length * 2))
    for (let i = 0; i < kept.length; i++) this.buf[i] = kept[i]
    this.head = 0
    this.len = kept.length
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = 0; i < this.len; i++) yield this.buf[(this.head + i) % this.buf.length]!
  }

  private grow(): void {
    const next = new Array<T | undefined>(this.buf.length * 2)
    for (let i = 0; i < this.len; i++) next[i] = this.buf[(this.head + i) % this.buf.length]
    this.buf = next
    this.head = 0
  }
}
