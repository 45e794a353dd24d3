/**
 * What the reliability benches (soak, queued) run: `slo-gateway serve` and `slo-gateway sim`
 * as their own processes, from the source (through tsx, as the tests run them), on free
 * ports, and what they read of the gateway: its /metrics figures and /admin/state.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { type Child, freePort, start, waitReady } from './processes.js'

export const ROOT = join(import.meta.dirname, '..')
const CLI = join(ROOT, 'src', 'cli.ts')

export interface Proc {
  readonly child: Child
  readonly url: string
}

/** A simulator process (one replica) with initial faults. */
export async function startSim(faults?: Record<string, unknown>): Promise<Proc> {
  const port = await freePort()
  const args = ['--import', 'tsx', CLI, 'sim', '--port', String(port)]
  if (faults !== undefined) args.push('--fault', JSON.stringify(faults))
  const child = start('sim', process.execPath, args)
  const url = `http://127.0.0.1:${port}`
  await waitReady(child, async () => (await fetch(`${url}/metrics`)).ok)
  return { child, url }
}

export interface GatewayProc extends Proc {
  readonly adminUrl: string
  /** The probe listener (server.probe_port), when asked for. */
  readonly probeUrl?: string
}

/**
 * The gateway process with `config` (ports are set here), ready when /readyz says so;
 * `probes`: with a probe listener (server.probe_port) on a free port too.
 */
export async function startGateway(
  config: Record<string, unknown>,
  opts: { probes?: boolean } = {},
): Promise<GatewayProc> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const probePort = opts.probes === true ? await freePort() : undefined
  const dir = mkdtempSync(join(tmpdir(), 'slo-gw-bench-'))
  const file = join(dir, 'gateway.yaml')
  const server = {
    ...(config.server as object),
    port,
    admin_port: adminPort,
    ...(probePort !== undefined ? { probe_port: probePort } : {}),
  }
  writeFileSync(file, stringify({ log: { level: 'warn' }, ...config, server }))
  const child = start('gateway', process.execPath, ['--import', 'tsx', CLI, 'serve', '--config', file])
  const adminUrl = `http://127.0.0.1:${adminPort}`
  // ready when both listeners say so (the probe thread starts after the admin listener)
  const probeUrl = probePort === undefined ? undefined : `http://127.0.0.1:${probePort}`
  await waitReady(
    child,
    async () =>
      (await fetch(`${adminUrl}/readyz`)).ok &&
      (probeUrl === undefined || (await fetch(`${probeUrl}/readyz`)).ok),
    60_000,
  )
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    adminUrl,
    ...(probeUrl !== undefined ? { probeUrl } : {}),
  }
}

/** The sum of a metric's series (prom text), optionally only those with every `k="v"`. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue
    sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

/** A process's resident set, MB, from /proc (NaN when gone). */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? Number.NaN : Number(m[1]) / 1024
  } catch {
    return Number.NaN
  }
}

/** Open file descriptors of a process (sockets included), NaN when unreadable. */
export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length
  } catch {
    return Number.NaN
  }
}

export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits
