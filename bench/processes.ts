/**
 * Child processes for the benchmarks: free ports, core pinning with taskset, readiness,
 * CPU time of a process tree read from /proc, and a clean stop.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** A port that was free a moment ago (bind port 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      const port = typeof a === 'object' && a !== null ? a.port : 0
      s.close(() => resolve(port))
    })
  })
}

export function which(bin: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin'])) {
    const p = `${dir}/${bin}`
    if (dir !== '' && existsSync(p)) return p
  }
  return undefined
}

const TASKSET = which('taskset')

/** Whether processes can be pinned to cores (taskset present and at least 2 cores). */
export function canPin(cores: number): boolean {
  return TASKSET !== undefined && cores >= 2
}

/** Pins every thread of a running process to one core. */
export function pin(pid: number, core: number): void {
  if (TASKSET !== undefined)
    execFileSync(TASKSET, ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' })
}

/**
 * Moves the threads of `pid` named `name` (their /proc comm) to `core`, leaving the others
 * where they are. Returns how many it moved (0: none of that name, or nothing to pin with).
 */
export function pinThreads(pid: number, name: string, core: number): number {
  if (TASKSET === undefined) return 0
  let moved = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let comm: string
    try {
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
    } catch {
      continue // the thread ended
    }
    if (comm !== name) continue
    execFileSync(TASKSET, ['-p', '-c', String(core), tid], { stdio: 'ignore' })
    moved++
  }
  return moved
}

/** A thread's time on a CPU so far (/proc schedstat), in µs. */
export function threadCpuUs(pid: number, tid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1000
}

export interface Child {
  readonly name: string
  readonly proc: ChildProcess
  readonly pid: number
  /** Last lines of stdout+stderr, for error messages. */
  output(): string
  stop(): Promise<void>
}

/** Spawns `cmd args`, under `taskset -c core` when core is set. */
export function start(name: string, cmd: string, args: readonly string[], core?: number): Child {
  const [file, argv] =
    core !== undefined && TASKSET !== undefined
      ? [TASKSET, ['-c', String(core), cmd, ...args]]
      : [cmd, [...args]]
  const proc = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-4000)
  }
  proc.stdout?.on('data', keep)
  proc.stderr?.on('data', keep)
  proc.on('error', (err) => keep(Buffer.from(`spawn error: ${err.message}\n`)))
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  return {
    name,
    proc,
    pid: proc.pid ?? -1,
    output: () => out,
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGTERM')
      const done = await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)])
      if (!done) {
        proc.kill('SIGKILL')
        await exited
      }
    },
  }
}

/** Polls `probe` until it resolves true; throws with the child's output after timeoutMs. */
export async function waitReady(
  child: Child,
  probe: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const until = performance.now() + timeoutMs
  while (performance.now() < until) {
    if (child.proc.exitCode !== null)
      throw new Error(`${child.name} exited (${child.proc.exitCode}):\n${child.output()}`)
    if (await probe().catch(() => false)) return
    await sleep(100)
  }
  throw new Error(`${child.name} not ready after ${timeoutMs} ms:\n${child.output()}`)
}

function childrenOf(pid: number): number[] {
  const out: number[] = []
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8')
      // pid (comm) state ppid ...; comm may hold spaces and parens
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) out.push(Number(e))
    } catch {
      // the process went away meanwhile
    }
  }
  return out
}

function threadCpuNs(pid: number): number {
  let ns = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // schedstat: time on CPU (ns), time waiting (ns), timeslices
    const first = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]
    ns += Number(first)
  }
  return ns
}

/**
 * CPU time (user + system) of a process and all its descendants, ms, from the per-thread
 * /proc/<pid>/task/<tid>/schedstat (ns resolution). Threads that ended are not counted,
 * so read it for long-lived processes only.
 */
export function treeCpuMs(pid: number): number {
  let ns = 0
  const queue = [pid]
  while (queue.length > 0) {
    const p = queue.pop() as number
    try {
      ns += threadCpuNs(p)
    } catch {
      continue
    }
    queue.push(...childrenOf(p))
  }
  return ns / 1e6
}

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
}

const TICKS_PER_S = clockTicks()

/**
 * Time one core spent running anything (user, nice, system, irq, softirq), ms, from
 * /proc/stat (USER_HZ ticks, usually 10 ms). NaN when unreadable.
 */
export function coreBusyMs(core: number): number {
  let text: string
  try {
    text = readFileSync('/proc/stat', 'utf8')
  } catch {
    return Number.NaN
  }
  const line = text.split('\n').find((l) => l.startsWith(`cpu${core} `))
  if (line === undefined) return Number.NaN
  // cpuN user nice system idle iowait irq softirq steal guest guest_nice
  const f = line.trim().split(/\s+/).slice(1).map(Number)
  const busy = [0, 1, 2, 5, 6].reduce((a, i) => a + (f[i] ?? 0), 0)
  return (busy * 1000) / TICKS_PER_S
}

/**
 * Builds what the benches run as shipped: the gateway (dist/, tsc -p tsconfig.build.json)
 * and the trivial upstream and the Node floor proxy as plain JS (bench/dist/). Type errors are reported, not fatal
 * (tsc emits anyway); a missing output is.
 */
export function buildForBench(root: string, log: (s: string) => void): void {
  for (const project of ['tsconfig.build.json', 'bench/tsconfig.build.json']) {
    log(`building (tsc -p ${project})`)
    try {
      execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', project], { cwd: root, stdio: 'pipe' })
    } catch (err) {
      const out = String((err as { stdout?: Buffer }).stdout ?? '')
      log(`tsc reported errors (JS is emitted anyway; going on):\n${out.split('\n').slice(0, 10).join('\n')}`)
    }
  }
  for (const f of ['dist/cli.js', 'bench/dist/trivial-upstream.js', 'bench/dist/node-floor-proxy.js'])
    if (!existsSync(join(root, f))) throw new Error(`${f} missing after the build`)
}

/** /proc/loadavg's 1, 5 and 15 minute figures, or n/a. */
export function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    return 'n/a'
  }
}

/**
 * Pins this process (the load client) to core 0 where two cores can be pinned, so the
 * process under test gets core 1; both undefined where they cannot.
 */
export function pinClient(): {
  readonly clientCore: number | undefined
  readonly otherCore: number | undefined
} {
  if (!canPin(cpus().length)) return { clientCore: undefined, otherCore: undefined }
  pin(process.pid, 0)
  return { clientCore: 0, otherCore: 1 }
}

/** On SIGINT or SIGTERM: `stop` (the bench's children), then exit 130. */
export function stopOnSignals(stop: () => Promise<void>, log?: (s: string) => void): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      log?.(`${signal}: stopping the child processes`)
      void stop().finally(() => process.exit(130))
    })
}
