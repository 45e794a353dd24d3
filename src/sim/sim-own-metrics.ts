import type { SimEngine } from './engine.js'
import { labelPairs, PromWriter } from './metric-formats/prom-text.js'

export interface SimInfo {
  readonly replica: string
  readonly profile: string
  readonly metricsFormat: string
  readonly timeScale: number
}

/**
 * The simulator's own health, appended to every format: how far steps run behind their planned
 * time (`sim_step_lag_seconds`; if it grows, the simulator and not the model is the bottleneck).
 */
export function renderSimOwnMetrics(engine: SimEngine, info: SimInfo): string {
  const w = new PromWriter('python')
  w.gauge(
    'sim_info',
    'Simulated model server: replica, profile, metrics format, time scale.',
    labelPairs([
      ['replica', info.replica],
      ['profile', info.profile],
      ['metrics_format', info.metricsFormat],
      ['time_scale', String(info.timeScale)],
    ]),
    1,
  )
  w.histogram(
    'sim_step_lag_seconds',
    'How late each engine step ended, relative to its planned (absolute) time.',
    '',
    engine.stats.stepLag,
  )
  w.counter('sim_steps_total', 'Engine steps run.', '', engine.stats.steps)
  w.gauge('sim_kv_blocks_used', 'KV cache blocks in use.', '', engine.kv.usedBlocks)
  w.gauge('sim_kv_blocks_total', 'KV cache blocks in total.', '', engine.kv.totalBlocks)
  return w.text()
}
