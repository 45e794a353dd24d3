/**
 * Labelled children of one prom-client metric, cached by their label values so the
 * request path looks a child up instead of building a label object every time.
 * Series can be removed by one label's value (a tenant that lost its label slot).
 */
import type { LabelValues } from 'prom-client'

/** The part of a prom-client Counter / Histogram / Gauge this cache needs. */
export interface LabelledMetric<T extends string, C> {
  labels(labels: LabelValues<T>): C
  remove(labels: LabelValues<T>): void
}

const SEP = '\u0001'

interface Entry<T extends string, C> {
  readonly labels: LabelValues<T>
  readonly child: C
}

export class SeriesCache<T extends string, C> {
  private readonly entries = new Map<string, Entry<T, C>>()
  private readonly metric: LabelledMetric<T, C>
  private readonly names: readonly T[]

  constructor(metric: LabelledMetric<T, C>, names: readonly T[]) {
    this.metric = metric
    this.names = names
  }

  /** The child for these label values, given in the order of `names`. */
  get(values: readonly string[]): C {
    const key = values.length === 1 ? (values[0] ?? '') : values.join(SEP)
    const hit = this.entries.get(key)
    if (hit !== undefined) return hit.child
    const labels: LabelValues<T> = {}
    this.names.forEach((name, i) => {
      labels[name] = values[i] ?? ''
    })
    const entry = { labels, child: this.metric.labels(labels) }
    this.entries.set(key, entry)
    return entry.child
  }

  /** Remove every series whose label `name` equals `value`; returns how many. */
  removeWhere(name: T, value: string): number {
    let n = 0
    for (const [key, entry] of this.entries) {
      if (entry.labels[name] === value) {
        this.metric.remove(entry.labels)
        this.entries.delete(key)
        n++
      }
    }
    return n
  }

  get size(): number {
    return this.entries.size
  }
}
