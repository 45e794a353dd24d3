import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { TimerClock as Clock } from '../clock.js'
import { SimEngine } from './engine.js'
import { EngineLoop } from './engine-loop.js'
import type { FaultSpec } from './fault-spec.js'
import { FaultState } from './fault-state.js'
import { createRequestHandler } from './http-routes.js'
import type { MetricFormat } from './metric-format.js'
import type { SimProfile } from './profile-schema.js'
import { deriveSeed, Rng } from './rng.js'
import { renderSimOwnMetrics } from './sim-own-metrics.js'

export interface ReplicaConfig {
  readonly index: number
  readonly profile: SimProfile
  readonly modelName: string
  readonly format: MetricFormat
  readonly timeScale: number
  readonly seed: number
  readonly clock: Clock
  readonly faults: FaultSpec
  /** Called after the replica crashed (server closed, sockets reset). */
  readonly onCrash: (r: Replica) => void
}

/** One simulated model server: an engine, the loop that drives it, faults, and its HTTP server. */
export class Replica {
  readonly name: string
  readonly engine: SimEngine
  readonly loop: EngineLoop
  readonly faults: FaultState
  readonly outputRng: Rng
  readonly clock: Clock
  readonly modelName: string
  port = 0
  url = ''
  crashed = false
  private readonly server: Server
  private readonly sockets = new Set<Socket>()
  private frozenMetrics: string | null = null
  private readonly created = Math.floor(Date.now() / 1000)

  constructor(private readonly cfg: ReplicaConfig) {
    this.name = `sim-${cfg.index}`
    this.clock = cfg.clock
    this.modelName = cfg.modelName
    this.faults = new FaultState(cfg.clock, new Rng(deriveSeed(cfg.seed, 2 * cfg.index + 1)))
    this.outputRng = new Rng(deriveSeed(cfg.seed, 2 * cfg.index))
    this.engine = new SimEngine({
      profile: cfg.profile,
      timeScale: cfg.timeScale,
      slowdown: () => this.faults.slowdown,
      buckets: cfg.format.buckets(cfg.profile),
    })
    this.loop = new EngineLoop(this.engine, cfg.clock)
    this.server = createServer(createRequestHandler(this))
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => this.sockets.delete(s))
    })
    this.server.on('clientError', (_err, s: Socket) => s.destroy())
    this.applyFaults(cfg.faults)
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err)
      this.server.once('error', onError)
      this.server.listen(port, host, () => {
        this.server.off('error', onError)
        const addr = this.server.address()
        this.port = typeof addr === 'object' && addr !== null ? addr.port : port
        const h = host.includes(':') ? `[${host}]` : host
        this.url = `http://${h}:${this.port}`
        resolve()
        if (this.faults.spec.crash === true) this.crash()
      })
    })
  }

  applyFaults(spec: FaultSpec): void {
    const before = this.faults.slowdown
    this.faults.apply(spec)
    this.loop.rescale(this.faults.slowdown / before)
    this.frozenMetrics = spec.metrics === 'stale' ? this.renderMetrics() : null
    if (spec.crash === true && this.url !== '') this.crash()
  }

  /** /metrics text: live, frozen ('stale'), or null ('failing'). */
  metricsText(): string | null {
    const mode = this.faults.metricsMode
    if (mode === 'failing') return null
    if (mode === 'stale' && this.frozenMetrics !== null) return this.frozenMetrics
    return this.renderMetrics()
  }

  renderMetrics(): string {
    const view = { modelName: this.modelName, engine: this.engine, nowMs: this.clock.now() }
    const own = renderSimOwnMetrics(this.engine, {
      replica: this.name,
      profile: this.cfg.profile.name,
      metricsFormat: this.cfg.format.name,
      timeScale: this.cfg.timeScale,
    })
    return this.cfg.format.render(view) + own
  }

  /**
   * llama.cpp's `GET /props` (its parallel slots as `total_slots`, the per-slot context), when
   * this replica speaks llama.cpp's metrics; null otherwise (other engines answer 404).
   */
  propsBody(): string | null {
    if (this.cfg.format.name !== 'llamacpp') return null
    const e = this.engine.profile.engine
    return JSON.stringify({
      default_generation_settings: { n_ctx: e.maxModelLen },
      total_slots: e.maxNumSeqs,
      model_path: this.modelName,
    })
  }

  modelsBody(): string {
    const m = this.modelName
    const perm = `{"id":"modelperm-${randomUUID().replaceAll('-', '')}","object":"model_permission","created":${this.created},"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}`
    return `{"object":"list","data":[{"id":${JSON.stringify(m)},"object":"model","created":${this.created},"owned_by":"vllm","root":${JSON.stringify(m)},"parent":null,"max_model_len":${this.engine.profile.engine.maxModelLen},"permission":[${perm}]}]}`
  }

  /**
   * The crash fault. In-process it must not take the test runner down: the server stops listening
   * and every connection is reset (as a dead process would). Under the CLI, onCrash exits.
   */
  crash(): void {
    if (this.crashed) return
    this.crashed = true
    this.loop.stop()
    this.server.close()
    for (const s of this.sockets) s.destroy()
    this.cfg.onCrash(this)
  }

  close(): Promise<void> {
    this.loop.stop()
    return new Promise((resolve) => {
      if (!this.server.listening) {
        for (const s of this.sockets) s.destroy()
        resolve()
        return
      }
      this.server.close(() => resolve())
      for (const s of this.sockets) s.destroy()
    })
  }
}
