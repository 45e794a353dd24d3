/**
 * An unordered map keyed by per-request objects that come and go thousands of times a second
 * (requests in flight, running at an endpoint): an array with swap-remove, each key keeping
 * its own index in `slot`. Set, delete and lookup are O(1), and nothing is allocated once
 * the arrays have grown to the largest number in flight. A set is a map of each key to itself.
 *
 * Why not a Map or a Set: a long-lived one (its table in V8's old generation) that
 * requests enter and leave makes the young-generation collector keep what its deleted
 * entries held, so every request it held, with all its objects (socket buffers, headers,
 * bodies), is copied and then promoted, to be freed only by a full collection. A check in
 * plain Node (a Map grown once, then 32 entries in flight each holding ~8 KB, 400,000
 * adds and deletes): 2.7 GB promoted and 3.8 s of scavenges, against 0.1 MB and 0.1 s with
 * arrays. On bench:peers:overhead's saturation load, the Map of the requests in flight made
 * the gateway promote ~3 MB a scavenge (99% of what survived one scavenge survived the
 * next) and spend ~20% of its CPU in scavenges of 7-10 ms.
 */
export interface Slotted {
  /** The key's index in its SlotMap; -1 when it is in none. Owned by the SlotMap. */
  slot: number
}

export class SlotMap<K extends Slotted, V> {
  private readonly keys: K[] = []
  private readonly vals: V[] = []

  get size(): number {
    return this.keys.length
  }

  has(k: K): boolean {
    return k.slot >= 0 && this.keys[k.slot] === k
  }

  /** Sets `k`'s value (`k` must be a key of no other SlotMap). */
  set(k: K, v: V): void {
    if (this.has(k)) {
      this.vals[k.slot] = v
      return
    }
    k.slot = this.keys.length
    this.keys.push(k)
    this.vals.push(v)
  }

  /** Removes `k`; false when it was not a key. */
  delete(k: K): boolean {
    if (!this.has(k)) return false
    const i = k.slot
    const lastKey = this.keys.pop() as K
    const lastVal = this.vals.pop() as V
    if (lastKey !== k) {
      this.keys[i] = lastKey
      this.vals[i] = lastVal
      lastKey.slot = i
    }
    k.slot = -1
    return true
  }

  /** The values now, in no particular order (a copy: safe to change the map while using it). */
  values(): V[] {
    return this.vals.slice()
  }

  /** Iterates the values in place: do not set or delete during the iteration. */
  [Symbol.iterator](): IterableIterator<V> {
    return this.vals.values()
  }
}
