import type { TimerClock as Clock } from '../clock.js'
import type { FaultSpec } from './fault-spec.js'
import type { Rng } from './rng.js'

/** What to do with an arriving completion request. */
export type Admission =
  | { readonly kind: 'serve' }
  | { readonly kind: 'not-ready' }
  | { readonly kind: 'error'; readonly status: 500 | 503 }
  | { readonly kind: 'hang' }
  | { readonly kind: 'crash' }

/** The live fault settings of one replica, and the decisions they imply. */
export class FaultState {
  private current: FaultSpec = {}
  private readyAt = 0
  private counted = 0

  constructor(
    private readonly clock: Clock,
    private readonly rng: Rng,
  ) {}

  get spec(): FaultSpec {
    return this.current
  }

  /** Replaces the fault set; `startupDelayMs` counts from now, `crashAfter` counts from zero. */
  apply(spec: FaultSpec): void {
    this.current = spec
    this.counted = 0
    this.readyAt = this.clock.now() + (spec.startupDelayMs ?? 0)
  }

  get ready(): boolean {
    return this.clock.now() >= this.readyAt
  }

  get slowdown(): number {
    return this.current.slowdown ?? 1
  }

  get metricsMode(): 'ok' | 'stale' | 'failing' {
    return this.current.metrics ?? 'ok'
  }

  /** Decides an arriving completion request, in this order: not ready, crash, hang, error. */
  admit(): Admission {
    if (!this.ready) return { kind: 'not-ready' }
    const f = this.current
    if (f.crashAfter !== undefined) {
      this.counted++
      if (this.counted > f.crashAfter) return { kind: 'crash' }
    }
    if (f.hang === true) return { kind: 'hang' }
    if (f.errorRate !== undefined && f.errorRate > 0 && this.rng.next() < f.errorRate) {
      return { kind: 'error', status: f.errorStatus ?? 500 }
    }
    return { kind: 'serve' }
  }

  /** The GET /admin/faults view. */
  describe(): Record<string, unknown> {
    return {
      faults: this.current,
      ready: this.ready,
      requestsSinceApplied: this.counted,
    }
  }
}
