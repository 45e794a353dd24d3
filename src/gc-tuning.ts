/**
 * The garbage collector on one core.
 *
 * V8 scavenges the young generation with helper threads. With one core to run on (a
 * container limited to one CPU, a process pinned to one core) the helpers only take turns
 * with the main thread, which waits for them: on Node 20 a scavenge under load paused the
 * gateway for 11-15 ms, single-threaded for 2-3 ms (bench/results/overhead.md). So `serve`
 * turns parallel scavenging off when the process has fewer than two cores, unless the
 * operator set a scavenge flag themselves (NODE_OPTIONS or node's own arguments).
 */
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { setFlagsFromString } from 'node:v8'

/** The CPUs a cgroup v2 `cpu.max` line allows ("max 100000": no limit), or undefined. */
export function cgroupCpus(cpuMax: string | undefined): number | undefined {
  const [quota, period] = (cpuMax ?? '').trim().split(/\s+/)
  const q = Number(quota)
  const p = Number(period)
  return quota !== 'max' && q > 0 && p > 0 ? q / p : undefined
}

function readCpuMax(): string | undefined {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8')
  } catch {
    return undefined
  }
}

/** The cores this process can use: its CPU affinity, and its cgroup's CPU quota where one is set. */
export function usableCores(affinity = availableParallelism(), cpuMax = readCpuMax()): number {
  const quota = cgroupCpus(cpuMax)
  return quota === undefined ? affinity : Math.min(affinity, quota)
}

/** A V8 flag the operator set that decides scavenging (so the gateway leaves it alone). */
const SCAVENGE_FLAG = /--(no-)?(parallel-scavenge|single-threaded-gc|single-threaded)\b/

/**
 * The flag to set for `cores` (undefined: none): parallel scavenging off below two cores,
 * unless `operatorFlags` (NODE_OPTIONS and node's arguments) already decide it.
 */
export function gcFlagFor(cores: number, operatorFlags: string): string | undefined {
  if (cores >= 2 || SCAVENGE_FLAG.test(operatorFlags)) return undefined
  return '--no-parallel-scavenge'
}

/** Applies gcFlagFor to this process; returns the flag set, for the startup log. */
export function tuneGc(): string | undefined {
  const flag = gcFlagFor(usableCores(), `${process.env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`)
  if (flag !== undefined) setFlagsFromString(flag)
  return flag
}
