/**
 * The runtime: the real parts behind the HTTP apps, wired together (backends with their
 * scrapers, admission, telemetry, and, when the config asks for it, the built-in
 * simulator as the model servers). cli.ts starts it, listeners.ts serves it.
 */
import type { Logger } from 'pino'
import { Registry } from 'prom-client'
import { createAdmission } from './admission/index.js'
import { type BackendsHandle, createBackends } from './backends/index.js'
import { type Clock, systemClock } from './clock.js'
import { DEFAULTS, type GatewayConfig, poolSchema } from './config/schema.js'
import { buildHttpApps, type HttpApps } from './http-apps.js'
import { TokenEstimator } from './openai/token-estimator.js'
import type { Reloadable } from './reload.js'
import { type SimThread, startSimThread } from './sim/sim-thread.js'
import { createTelemetry } from './telemetry/index.js'
import { collectProcessMetrics } from './telemetry/process-metrics.js'
import { TenantDirectory } from './tenants/directory.js'
import { FailoverLimiter } from './tenants/failover.js'
import { tenantLimiter } from './tenants/limiter-registry.js'
import { tenantsState } from './tenants/limits.js'

export interface GatewayRuntime extends Reloadable {
  readonly apps: HttpApps
  /** The config as running: the simulator's endpoints in its pool. */
  readonly config: GatewayConfig
  /** The registry /metrics serves (for what the CLI counts around the runtime: reloads). */
  readonly registry: Registry
  /** Stops scrapers and timers, closes pools and the embedded simulator. */
  close(): Promise<void>
}

/**
 * Starts the embedded simulator, on a thread of its own (sim-thread.ts), and points a pool at
 * it (config.simulator.enabled).
 */
async function withSimulator(config: GatewayConfig, logger: Logger): Promise<[GatewayConfig, SimThread]> {
  const s = config.simulator
  const sim = await startSimThread(
    { profile: s.profile, replicas: s.replicas, timeScale: s.time_scale, seed: s.seed, port: 0 },
    (err) => logger.error({ err }, 'built-in simulator stopped: its thread ended; its endpoints will fail'),
  )
  const urls = sim.replicas.map((r) => r.url)
  const model = sim.modelName
  const pools =
    config.backends.pools.length > 0
      ? config.backends.pools.map((p, i) => (i === 0 ? { ...p, endpoints: urls } : p))
      : [
          poolSchema.parse({
            name: 'sim',
            models: [model, '*'],
            endpoints: urls,
            // a time-scaled engine step can hold its metrics still that much longer
            stale_after_ms: DEFAULTS.staleAfterMs * Math.max(1, s.time_scale),
          }),
        ]
  logger.info(
    { replicas: urls.length, profile: s.profile, model, timeScale: s.time_scale },
    'built-in simulator started',
  )
  return [{ ...config, backends: { ...config.backends, pools } }, sim]
}

/**
 * One info line naming the pools, their endpoints (by name: URLs may carry credentials),
 * engine, and whether the simulator is on, e.g.
 * `pools: sim (vllm, 2 endpoints: sim-0, sim-1, models: meta-llama/Llama-3.1-8B-Instruct, *); simulator on`.
 */
function logStartup(logger: Logger, backends: BackendsHandle, simulator: boolean): void {
  const pools = backends.pools().map((p) => {
    const c = p.config
    const endpoints = p.allEndpoints().map((e) => e.name)
    const discovery = c.discovery === undefined ? undefined : `dns ${c.discovery.name}:${c.discovery.port}`
    return {
      name: p.name,
      engine: c.engine,
      models: c.models,
      endpoints,
      ...(discovery ? { discovery } : {}),
    }
  })
  const text = pools
    .map((p) => {
      const where =
        p.discovery ??
        `${p.endpoints.length} endpoint${p.endpoints.length === 1 ? '' : 's'}: ${p.endpoints.join(', ')}`
      return `${p.name} (${p.engine}, ${where}, models: ${p.models.join(', ')})`
    })
    .join('; ')
  logger.info(
    { pools, simulator },
    `pools: ${text === '' ? 'none' : text}; simulator ${simulator ? 'on' : 'off'}`,
  )
}

/** Once at startup: whether requests without a key are served, and as whom (or by no one). */
function logAuth(logger: Logger, tenants: TenantDirectory): void {
  const anon = tenants.anonymous
  const mode = tenants.auth.mode
  const what = mode === 'trusted_header' ? `without ${tenants.auth.header}` : 'without a known API key'
  if (anon === undefined) {
    if (tenants.all().length > 0) return
    logger.warn(
      { authMode: mode },
      `no tenants are configured: every request will be refused (401); add tenants${mode === 'trusted_header' ? '' : ' with api_keys'}, or set auth.anonymous: NAME to serve requests ${what}`,
    )
    return
  }
  logger.warn(
    { anonymousTenant: anon.id, authMode: mode },
    `anonymous access is on: requests ${what} are served as tenant '${anon.id}'; set tenants and auth (and remove auth.anonymous) for production`,
  )
}

/** Once at startup: where the tenants' limits live (the Redis host, never its credentials). */
function logLimits(logger: Logger, config: GatewayConfig): void {
  const l = config.limits
  if (!config.tenants.some((t) => Object.keys(t.limits).length > 0)) return
  if (l.store === 'memory') {
    logger.info(
      { store: 'memory' },
      'tenant limits: memory store (this process only: with N replicas each admits the whole limit)',
    )
    return
  }
  const u = new URL(l.redis.url)
  logger.info(
    { store: 'redis', redis: `${u.hostname}:${u.port || 6379}`, onStoreError: l.on_store_error },
    `tenant limits: shared through redis at ${u.hostname}:${u.port || 6379} (when it cannot answer: ${l.on_store_error})`,
  )
}

export async function createRuntime(
  base: GatewayConfig,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<GatewayRuntime> {
  let sim: SimThread | undefined
  let config = base
  if (base.simulator.enabled) [config, sim] = await withSimulator(base, logger)
  const registry = new Registry()
  collectProcessMetrics(registry)
  const backends = createBackends(config, { clock, registry, logger })
  const telemetry = config.telemetry.enabled
    ? createTelemetry(config, { registry, clock, logger, backends })
    : undefined
  const tokens = new TokenEstimator()
  const admission = createAdmission(config, backends, clock, tokens, logger)
  // Scrapes drive the dispatcher (with completions): no polling loop.
  backends.onChange(() => admission.pumpAll())
  telemetry?.setQueueSource(() => admission.queueDepths())
  const tenants = TenantDirectory.fromConfig(config)
  const limiter = tenantLimiter(config.limits, { clock, logger, registry })
  if (limiter instanceof FailoverLimiter) {
    // a moment for the first connection, so the first requests share the fleet's limits;
    // past it the gateway serves anyway, under limits.on_store_error, and heals on connect
    await limiter
      .ready(config.limits.redis.connect_timeout_ms)
      .catch((err: unknown) =>
        logger.warn(
          { err },
          `tenant limits: redis not reachable at startup; ${config.limits.on_store_error} applies until it is`,
        ),
      )
  }
  const apps = buildHttpApps(config, {
    tenants,
    limiter,
    clock,
    logger,
    registry,
    backends,
    admission,
    tokens,
    recorder: telemetry ?? { record() {} },
    state: { slo: () => telemetry?.state(), tenants: () => tenantsState(tenants, limiter) },
    history: () => telemetry?.history(),
  })
  backends.start()
  logStartup(logger, backends, sim !== undefined)
  logAuth(logger, tenants)
  logLimits(logger, config)
  return {
    apps,
    config,
    registry,
    baseConfig: base,
    applyTenants: (next) => {
      tenants.replace({ auth: next.auth, tenants: next.tenants, classes: config.classes })
      logAuth(logger, tenants)
    },
    close: async () => {
      admission.close()
      telemetry?.close()
      await backends.close()
      await limiter.close()
      await sim?.close()
    },
  }
}
