/**
 * A label whose values are capped: known values always pass, the first `limit` other
 * distinct values pass as they come, and every later one becomes `other`. For labels
 * fed from outside (model names, reject reasons, error kinds), so a client or a new
 * error code cannot grow the number of series without bound.
 */

export const OTHER = 'other'

export class BoundedLabel {
  private readonly known: Set<string>
  private readonly extra = new Set<string>()
  private readonly limit: number

  constructor(known: Iterable<string>, limit: number) {
    this.known = new Set(known)
    this.limit = limit
  }

  value(raw: string): string {
    if (this.known.has(raw) || this.extra.has(raw)) return raw
    if (this.extra.size < this.limit) {
      this.extra.add(raw)
      return raw
    }
    return OTHER
  }
}
