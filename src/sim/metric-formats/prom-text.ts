import type { Histogram } from '../histogram.js'

/**
 * How numbers look in the exposition: 'python' as prometheus_client prints them (3 -> "3.0",
 * used by vLLM, SGLang, TensorRT-LLM), 'plain' as Rust's metrics-exporter and llama.cpp do ("3").
 */
export type NumberStyle = 'python' | 'plain'

export function formatNumber(v: number, style: NumberStyle): string {
  if (v === Number.POSITIVE_INFINITY) return '+Inf'
  if (v === Number.NEGATIVE_INFINITY) return '-Inf'
  if (Number.isNaN(v)) return 'NaN'
  if (style === 'python' && Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`
  return String(v)
}

export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

/** `a="x",b="y"` (no braces) from ordered pairs. */
export function labelPairs(pairs: readonly (readonly [string, string])[]): string {
  return pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')
}

/** Builds one Prometheus text exposition (format 0.0.4). */
export class PromWriter {
  private readonly lines: string[] = []

  constructor(private readonly style: NumberStyle) {}

  header(name: string, help: string, type: 'gauge' | 'counter' | 'histogram'): this {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
    return this
  }

  /** One sample; `labels` is `a="x",b="y"` or ''. */
  sample(name: string, labels: string, value: number): this {
    this.lines.push(`${name}${labels === '' ? '' : `{${labels}}`} ${formatNumber(value, this.style)}`)
    return this
  }

  gauge(name: string, help: string, labels: string, value: number): this {
    return this.header(name, help, 'gauge').sample(name, labels, value)
  }

  counter(name: string, help: string, labels: string, value: number): this {
    return this.header(name, help, 'counter').sample(name, labels, value)
  }

  /**
   * A histogram: `_bucket` series (with `le` after the other labels), then `_count` and `_sum`,
   * as prometheus_client orders them. A missing histogram renders empty with `bounds`.
   */
  histogram(
    name: string,
    help: string,
    labels: string,
    h: Histogram | undefined,
    bounds?: readonly number[],
  ): this {
    this.header(name, help, 'histogram')
    const b = h?.bounds ?? bounds ?? []
    const cum = h?.cumulative() ?? new Array<number>(b.length + 1).fill(0)
    const sep = labels === '' ? '' : `${labels},`
    for (let i = 0; i <= b.length; i++) {
      const le = i < b.length ? formatNumber(b[i]!, this.style) : '+Inf'
      this.sample(`${name}_bucket`, `${sep}le="${le}"`, cum[i]!)
    }
    this.sample(`${name}_count`, labels, h?.count ?? 0)
    this.sample(`${name}_sum`, labels, h?.sum ?? 0)
    return this
  }

  text(): string {
    return `${this.lines.join('\n')}\n`
  }
}
