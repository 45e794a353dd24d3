/**
 * Config reload, on SIGHUP and when the config file changes: the tenants (`auth`, `tenants`:
 * keys, classes, weights, limits, SLO overrides) change without a restart or a dropped
 * request. The new file is loaded and validated whole, as at startup (the same flags and
 * environment applied); a file with errors is refused, its problems logged, and the running
 * config stays. Other sections that changed are named in a warning: they need a restart
 * (the listeners, pools, classes and stores are built once).
 *
 * The file is watched through its directory, so an editor that writes a new file and renames
 * it, and a Kubernetes ConfigMap (a symlink swapped under the mount), are both seen; events
 * are debounced and the file's text compared with the last one read, so a touch or a burst
 * of events reloads once.
 *
 * Each reload is counted on /metrics: `slo_gateway_config_reloads_total{result="applied"}`
 * or `{result="refused"}`.
 */
import { type FSWatcher, readFileSync, watch } from 'node:fs'
import { basename, dirname } from 'node:path'
import type { FastifyBaseLogger as Logger } from 'fastify'
import { Counter, type Registry } from 'prom-client'
import { ConfigError } from './config/load.js'
import type { GatewayConfig } from './config/schema.js'
import { tenantFindings } from './config/tenants.js'

/** The sections a reload applies; every other one needs a restart. */
export const RELOADABLE_SECTIONS = ['auth', 'tenants'] as const

/** What the reload is applied to (the runtime). */
export interface Reloadable {
  /** The config the running sections were built from (before the simulator's pools). */
  readonly baseConfig: GatewayConfig
  applyTenants(next: GatewayConfig): void
}

export type ReloadOutcome =
  | { readonly ok: true; readonly changed: string[]; readonly restartNeeded: string[] }
  | { readonly ok: false; readonly problems: readonly string[] }

/** The top-level sections whose values differ. */
export function changedSections(a: GatewayConfig, b: GatewayConfig): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof GatewayConfig>
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]))
}

const DEBOUNCE_MS = 50

export interface ReloaderOptions {
  readonly target: Reloadable
  /** Loads and validates the config as at startup; throws ConfigError. */
  readonly load: () => GatewayConfig
  /** The file to watch; undefined: SIGHUP only. */
  readonly file?: string | undefined
  readonly logger: Logger
  /** Where the reloads are counted (the gateway's /metrics); none: not counted. */
  readonly registry?: Registry | undefined
}

export class ConfigReloader {
  private readonly opts: ReloaderOptions
  private current: GatewayConfig
  private watcher: FSWatcher | undefined
  private timer: NodeJS.Timeout | undefined
  private lastText: string | undefined
  private readonly counted: Counter<'result'> | undefined

  constructor(opts: ReloaderOptions) {
    this.opts = opts
    this.counted =
      opts.registry === undefined
        ? undefined
        : new Counter({
            name: 'slo_gateway_config_reloads_total',
            help: 'Config reloads (SIGHUP or the file changed), by result: applied or refused (the running config stays).',
            labelNames: ['result'],
            registers: [opts.registry],
          })
    this.counted?.inc({ result: 'applied' }, 0)
    this.counted?.inc({ result: 'refused' }, 0)
    this.current = opts.target.baseConfig
    this.lastText = opts.file === undefined ? undefined : readText(opts.file)
  }

  /** Reloads now (SIGHUP, or the file changed); logs and returns what happened. */
  reload(reason: string): ReloadOutcome {
    const outcome = this.apply(reason)
    this.counted?.inc({ result: outcome.ok ? 'applied' : 'refused' })
    return outcome
  }

  private apply(reason: string): ReloadOutcome {
    const { logger } = this.opts
    let next: GatewayConfig
    try {
      next = this.opts.load()
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [String(err)]
      logger.error(
        { reason, problems },
        `config reload refused (${problems.length} problem${problems.length === 1 ? '' : 's'}); the running config stays:\n  ${problems.join('\n  ')}`,
      )
      return { ok: false, problems }
    }
    const changed = changedSections(this.current, next)
    const reloadable = new Set<string>(RELOADABLE_SECTIONS)
    const restartNeeded = changed.filter((k) => !reloadable.has(k))
    // the tenants must fit the classes that keep running
    const misfits = tenantFindings(next.tenants, this.current.classes).map(
      (f) => `${f.path.join('.')}: ${f.message} (classes change only on a restart)`,
    )
    if (misfits.length > 0) {
      logger.error(
        { reason, problems: misfits },
        `config reload refused; the running config stays:\n  ${misfits.join('\n  ')}`,
      )
      return { ok: false, problems: misfits }
    }
    this.opts.target.applyTenants(next)
    this.current = { ...this.current, auth: next.auth, tenants: next.tenants }
    logger.info(
      { reason, changed: changed.filter((k) => reloadable.has(k)), tenants: next.tenants.length },
      `config reloaded (${reason}): ${next.tenants.length} tenant${next.tenants.length === 1 ? '' : 's'}`,
    )
    if (restartNeeded.length > 0) {
      logger.warn(
        { reason, restartNeeded },
        `config reload: ${restartNeeded.join(', ')} changed and take effect only on a restart`,
      )
    }
    return { ok: true, changed, restartNeeded }
  }

  /** Watches the file; a change reloads once its events settle. */
  watch(): void {
    const file = this.opts.file
    if (file === undefined || this.watcher !== undefined) return
    const name = basename(file)
    try {
      this.watcher = watch(dirname(file), (_event, changed) => {
        // a ConfigMap swaps `..data`, an editor a temp file: any event may be ours
        if (changed !== null && changed !== name && !changed.startsWith('..')) return
        clearTimeout(this.timer)
        this.timer = setTimeout(() => this.fileChanged(), DEBOUNCE_MS)
      })
      this.watcher.unref()
    } catch (err) {
      this.opts.logger.warn({ err, file }, 'cannot watch the config file; reload with SIGHUP')
    }
  }

  close(): void {
    clearTimeout(this.timer)
    this.watcher?.close()
    this.watcher = undefined
  }

  private fileChanged(): void {
    const text = readText(this.opts.file!)
    // deleted mid-swap (the next event brings the new one), or the same text again
    if (text === undefined || text === this.lastText) return
    this.lastText = text
    this.reload('file changed')
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}
