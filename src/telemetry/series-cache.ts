/**
 * Labelled children of one prom-client metric, cached by their label values so the
 * request path looks a child up instead of building a label object every time.
 * Series can be removed by one label's value (a tenant that lost its label slot).
 *
 * The cache is a tree of Maps, one level per label, so a lookup builds no key string and
 * (through `get2` / `get3` / `get4`) no array: a few Map lookups on label strings whose
 * hashes V8 keeps on the strings.
 */
import type { LabelValues } from 'prom-client'

/** The part of a prom-client Counter / Histogram / Gauge this cache needs. */
export interface LabelledMetric<T extends string, C> {
  labels(labels: LabelValues<T>): C
  remove(labels: LabelValues<T>): void
}

interface Entry<T extends string, C> {
  readonly values: readonly string[]
  readonly labels: LabelValues<T>
  readonly child: C
}

// A node maps one label's value to the next level's node, or at the last level to an entry.
type Node = Map<string, unknown>

export class SeriesCache<T extends string, C> {
  private readonly root: Node = new Map()
  private readonly entries = new Set<Entry<T, C>>()
  private readonly metric: LabelledMetric<T, C>
  private readonly names: readonly T[]

  constructor(metric: LabelledMetric<T, C>, names: readonly T[]) {
    this.metric = metric
    this.names = names
  }

  /** The child for these label values, given in the order of `names`. */
  get(values: readonly string[]): C {
    let node = this.root
    const last = this.names.length - 1
    for (let i = 0; i < last; i++) {
      const next = node.get(values[i] ?? '') as Node | undefined
      if (next === undefined) return this.create(values)
      node = next
    }
    const hit = node.get(values[last] ?? '') as Entry<T, C> | undefined
    return hit === undefined ? this.create(values) : hit.child
  }

  /** `get([a, b])` without the array. */
  get2(a: string, b: string): C {
    const hit = (this.root.get(a) as Node | undefined)?.get(b) as Entry<T, C> | undefined
    return hit === undefined ? this.create([a, b]) : hit.child
  }

  /** `get([a, b, c])` without the array. */
  get3(a: string, b: string, c: string): C {
    const n1 = this.root.get(a) as Node | undefined
    const hit = (n1?.get(b) as Node | undefined)?.get(c) as Entry<T, C> | undefined
    return hit === undefined ? this.create([a, b, c]) : hit.child
  }

  /** `get([a, b, c, d])` without the array. */
  get4(a: string, b: string, c: string, d: string): C {
    const n1 = this.root.get(a) as Node | undefined
    const n2 = n1?.get(b) as Node | undefined
    const hit = (n2?.get(c) as Node | undefined)?.get(d) as Entry<T, C> | undefined
    return hit === undefined ? this.create([a, b, c, d]) : hit.child
  }

  private create(raw: readonly string[]): C {
    const values = this.names.map((_, i) => raw[i] ?? '')
    const labels: LabelValues<T> = {}
    this.names.forEach((name, i) => {
      labels[name] = values[i]
    })
    const entry: Entry<T, C> = { values, labels, child: this.metric.labels(labels) }
    let node = this.root
    const last = values.length - 1
    for (let i = 0; i < last; i++) {
      let next = node.get(values[i]!) as Node | undefined
      if (next === undefined) {
        next = new Map()
        node.set(values[i]!, next)
      }
      node = next
    }
    node.set(values[last]!, entry)
    this.entries.add(entry)
    return entry.child
  }

  /** Remove every series whose label `name` equals `value`; returns how many. */
  removeWhere(name: T, value: string): number {
    let n = 0
    for (const entry of this.entries) {
      if (entry.labels[name] === value) {
        this.metric.remove(entry.labels)
        this.entries.delete(entry)
        this.unlink(entry.values)
        n++
      }
    }
    return n
  }

  private unlink(values: readonly string[]): void {
    const path: Node[] = [this.root]
    for (let i = 0; i < values.length - 1; i++) {
      const next = path[i]!.get(values[i]!) as Node | undefined
      if (next === undefined) return
      path.push(next)
    }
    for (let i = values.length - 1; i >= 0; i--) {
      const node = path[i]!
      node.delete(values[i]!)
      if (node.size > 0 || i === 0) return
    }
  }

  get size(): number {
    return this.entries.size
  }
}
