/**
 * The simulator as its own process (`slo-gateway sim`), on a port that survives it: a
 * fault suite kills it (SIGKILL, a crash) and starts it again on the same port, and sets
 * its faults through its admin API (POST /admin/faults).
 */
import { type CliProcess, runCli } from './cli.js'
import { freePort } from './redis.js'
import { sleep } from './upstream.js'

export interface SimProcess {
  readonly url: string
  readonly port: number
  /** Replaces the replica's fault set (`{}` clears it); see docs/simulator.md. */
  setFaults(spec: Record<string, unknown>): Promise<void>
  /** SIGKILL, as a crash; waits for the exit. */
  kill(): Promise<void>
  /** Starts it again on the same port (after kill, or after a crash fault ended it). */
  start(): Promise<void>
  stop(): Promise<void>
}

export async function startSimProcess(
  opts: { profile?: string; timeScale?: number } = {},
): Promise<SimProcess> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  let proc: CliProcess | undefined
  const args = ['sim', '--port', String(port), '--profile', opts.profile ?? 'llama-3.1-8b-h100']
  if (opts.timeScale !== undefined) args.push('--time-scale', String(opts.timeScale))
  const alive = () => proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null
  const start = async () => {
    if (alive()) return
    const p = runCli(args)
    proc = p
    for (let i = 0; i < 400 && !p.stdout.includes('listening on'); i++) {
      if (p.child.exitCode !== null) throw new Error(`sim exited: ${p.stderr}`)
      await sleep(25)
    }
    if (!p.stdout.includes('listening on')) throw new Error(`sim never listened: ${p.stderr}`)
  }
  const kill = async (signal: NodeJS.Signals) => {
    const p = proc
    if (p === undefined || !alive()) return
    p.child.kill(signal)
    await p.exited
  }
  await start()
  return {
    url,
    port,
    setFaults: async (spec) => {
      const res = await fetch(`${url}/admin/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(spec),
      })
      if (res.status !== 200) throw new Error(`faults refused: ${res.status} ${await res.text()}`)
    },
    kill: () => kill('SIGKILL'),
    start,
    stop: () => kill('SIGTERM'),
  }
}
