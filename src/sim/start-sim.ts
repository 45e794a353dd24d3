import { type TimerClock as Clock, systemClock as realClock } from '../clock.js'
import { parseFaultSpec } from './fault-spec.js'
import { getMetricFormat, isMetricFormatName } from './metric-format-registry.js'
import { DEFAULT_PROFILE, loadProfile } from './profile-loader.js'
import { Replica } from './replica.js'
import { type SimHandle, SimOptionError, type SimOptions } from './sim-options.js'

export interface SimHooks {
  /** After a replica crashed in-process. The CLI exits the process here. */
  readonly onCrash?: (replica: Replica) => void
  readonly clock?: Clock
}

/** Starts the simulator in this process. Crash faults close the replica; they never exit. */
export function startSim(opts: SimOptions = {}): Promise<SimHandle> {
  return startSimWith(opts, {})
}

export async function startSimWith(opts: SimOptions, hooks: SimHooks): Promise<SimHandle> {
  const o = validate(opts)
  const profile = loadProfile(o.profile)
  const format = getMetricFormat(o.metricsFormat)
  const replicas: Replica[] = []
  const closeAll = async (): Promise<void> => {
    await Promise.all(replicas.map((r) => r.close()))
  }
  try {
    for (let i = 0; i < o.replicas; i++) {
      const r = new Replica({
        index: i,
        profile,
        modelName: opts.modelName ?? profile.model,
        format,
        timeScale: o.timeScale,
        seed: o.seed,
        clock: hooks.clock ?? realClock,
        faults: o.faults,
        onCrash: hooks.onCrash ?? (() => {}),
      })
      replicas.push(r)
      await r.listen(o.port === 0 ? 0 : o.port + i, o.host)
    }
  } catch (err) {
    await closeAll()
    throw err
  }
  let closed: Promise<void> | null = null
  return {
    replicas,
    modelName: opts.modelName ?? profile.model,
    close: () => {
      closed ??= closeAll()
      return closed
    },
  }
}

function validate(opts: SimOptions) {
  const port = opts.port ?? 8000
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new SimOptionError(`port: expected 0..65535, got ${port}`)
  const replicas = opts.replicas ?? 1
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 64) {
    throw new SimOptionError(`replicas: expected an integer 1..64, got ${replicas}`)
  }
  if (port !== 0 && port + replicas - 1 > 65535)
    throw new SimOptionError('port + replicas - 1 must be <= 65535')
  const timeScale = opts.timeScale ?? 1
  if (!(Number.isFinite(timeScale) && timeScale > 0)) {
    throw new SimOptionError(`timeScale: expected a number > 0, got ${timeScale}`)
  }
  const metricsFormat = opts.metricsFormat ?? 'vllm'
  if (!isMetricFormatName(metricsFormat))
    throw new SimOptionError(`metricsFormat: unknown format "${metricsFormat}"`)
  const seed = opts.seed ?? 1
  if (!Number.isInteger(seed)) throw new SimOptionError(`seed: expected an integer, got ${seed}`)
  const faults = parseFaultSpec(opts.faults ?? {})
  if (!faults.ok) throw new SimOptionError(`faults: ${faults.message}`)
  return {
    port,
    replicas,
    timeScale,
    metricsFormat,
    seed,
    host: opts.host ?? '127.0.0.1',
    profile: opts.profile ?? DEFAULT_PROFILE,
    faults: faults.spec,
  }
}
