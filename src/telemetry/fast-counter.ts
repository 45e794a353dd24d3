/**
 * A counter for the request path: prom-client's Counter hashes the label set (string
 * building, validation, an object lookup) on every `inc` of a labelled child; a child here
 * adds to a field. It registers itself on a prom-client Registry as a metric of type
 * `counter` and is exported exactly as prom-client's Counter is: a series appears at its
 * first `inc` (not at `labels()`), in the order series were first incremented, and a
 * removed series re-appears from 0 if its child is incremented again.
 */
import { format } from 'node:util'
import type { Metric, Registry } from 'prom-client'

type Labels<T extends string> = Partial<Record<T, string | number>>

const SEP = '\u0001'

export class FastCounterChild {
  value = 0
  /** Whether the series is exported now (incremented since created / removed / reset). */
  live = false
  readonly labels: Record<string, string | number>
  private readonly owner: FastCounter<string>
  private readonly key: string

  constructor(owner: FastCounter<string>, key: string, labels: Record<string, string | number>) {
    this.owner = owner
    this.key = key
    this.labels = labels
  }

  inc(v?: number): void {
    // prom-client's checks, in its order (NaN passes them, as there).
    if (v && !Number.isFinite(v)) throw new TypeError(`Value is not a valid number: ${format(v)}`)
    if (v !== undefined && v < 0) throw new Error('It is not possible to decrease a counter')
    if (!this.live) {
      this.live = true
      this.value = 0
      this.owner.attach(this.key, this)
    }
    this.value += v ?? 1
  }
}

interface Value {
  labels: Record<string, string | number>
  value: number
}

export class FastCounter<T extends string> {
  name: string
  readonly help: string
  readonly type = 'counter'
  readonly aggregator = 'sum'
  private readonly labelNames: readonly T[]
  private readonly collect: (() => void) | undefined
  /** Every child handed out, by label key. */
  private readonly children = new Map<string, FastCounterChild>()
  /** Exported series, in the order of their first increment. */
  private readonly series = new Map<string, FastCounterChild>()

  constructor(opts: {
    name: string
    help: string
    labelNames: readonly T[]
    registry: Registry
    collect?: () => void
  }) {
    this.name = opts.name
    this.help = opts.help
    this.labelNames = opts.labelNames
    this.collect = opts.collect
    // The registry needs only name, help, type, get() and reset(), which this class has.
    opts.registry.registerMetric(this as unknown as Metric)
  }

  private key(labels: Labels<T>): string {
    for (const k in labels) {
      if (!this.labelNames.includes(k as T)) {
        throw new Error(`Added label "${k}" is not included in initial labelset: ${format(this.labelNames)}`)
      }
    }
    let key = ''
    for (const n of this.labelNames) {
      const v = labels[n]
      key += v === undefined ? SEP : `${v}${SEP}\u0002`
    }
    return key
  }

  labels(labels: Labels<T>): FastCounterChild {
    const key = this.key(labels)
    let c = this.children.get(key)
    if (c === undefined) {
      c = new FastCounterChild(this as FastCounter<string>, key, { ...labels } as Record<
        string,
        string | number
      >)
      this.children.set(key, c)
    }
    return c
  }

  /** Increment the series of `labels` (prom-client's `inc(labels, value)`). */
  inc(labels: Labels<T>, value?: number): void {
    this.labels(labels).inc(value)
  }

  /** @internal a child's first increment since it was created, removed or reset. */
  attach(key: string, child: FastCounterChild): void {
    this.series.set(key, child)
  }

  remove(labels: Labels<T>): void {
    const key = this.key(labels)
    const c = this.series.get(key)
    if (c !== undefined) {
      c.live = false
      c.value = 0
      this.series.delete(key)
    }
  }

  reset(): void {
    for (const c of this.series.values()) {
      c.live = false
      c.value = 0
    }
    this.series.clear()
  }

  /** What prom-client's Registry reads: one sample per series. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    if (this.collect !== undefined) this.collect()
    const values: Value[] = []
    for (const c of this.series.values()) values.push({ value: c.value, labels: c.labels })
    return { help: this.help, name: this.name, type: this.type, values, aggregator: this.aggregator }
  }
}
