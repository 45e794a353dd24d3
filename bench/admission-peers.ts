/**
 * The yardsticks of the admission bench, in front of the simulator's replicas: nginx as a plain
 * reverse proxy (bench/peers/nginx-pool.conf) and HAProxy with maxconn per server and a short
 * queue (bench/peers/haproxy-maxconn.cfg), each a process of its own started from its template
 * in a scratch directory, found on the PATH or installed from Debian's package (peer-binaries.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { ensureBinary } from './peer-binaries.js'
import { type Child, freePort, start, waitReady } from './processes.js'
import { render } from './targets.js'

export interface RunningPeer {
  readonly label: string
  readonly origin: string
  readonly child: Child
  stop(): Promise<void>
}

export type PeerKind = 'nginx' | 'haproxy'

export interface HaproxyLimits {
  /** Per server, interactive's backend. */
  readonly maxconn: number
  readonly batchMaxconn: number
  /** Wall ms (already time-scaled). */
  readonly queueTimeoutMs: number
  readonly batchQueueTimeoutS: number
}

const hostPort = (url: string) => new URL(url).host

/** The `server` lines of a backend: one per replica. */
export function serverLines(kind: PeerKind, urls: readonly string[], maxconn?: number): string {
  return urls
    .map((u, i) =>
      kind === 'nginx'
        ? `    server ${hostPort(u)};`
        : `  server s${i} ${hostPort(u)}${maxconn === undefined ? '' : ` maxconn ${maxconn}`}`,
    )
    .join('\n')
}

async function modelsAnswer(origin: string): Promise<boolean> {
  const res = await request(`${origin}/v1/models`)
  await res.body.dump()
  return res.statusCode === 200
}

/**
 * Starts nginx (no limits) or, with `limits`, HAProxy in front of `urls`. Throws when the
 * binary is missing and cannot be installed (the caller reports the path as skipped).
 */
export async function startPeer(
  root: string,
  kind: PeerKind,
  urls: readonly string[],
  limits?: HaproxyLimits,
): Promise<RunningPeer> {
  const bin = ensureBinary(kind)
  const dir = mkdtempSync(join(tmpdir(), `bench-${kind}-`))
  const port = await freePort()
  const file = kind === 'nginx' ? 'nginx-pool.conf' : 'haproxy-maxconn.cfg'
  const vars =
    kind === 'nginx'
      ? { PORT: port, DIR: dir, SERVERS: serverLines('nginx', urls) }
      : {
          PORT: port,
          QUEUE_TIMEOUT_MS: Math.round(limits?.queueTimeoutMs ?? 350),
          BATCH_QUEUE_TIMEOUT_S: Math.round(limits?.batchQueueTimeoutS ?? 1800),
          INTERACTIVE_SERVERS: serverLines('haproxy', urls, limits?.maxconn),
          BATCH_SERVERS: serverLines('haproxy', urls, limits?.batchMaxconn),
        }
  const conf = join(dir, file)
  writeFileSync(conf, render(readFileSync(join(root, 'bench/peers', file), 'utf8'), vars))
  const args =
    kind === 'nginx' ? ['-p', dir, '-e', join(dir, 'startup-error.log'), '-c', conf] : ['-db', '-f', conf]
  const label = kind === 'nginx' ? 'nginx' : `HAProxy maxconn ${limits?.maxconn}`
  const child = start(label, bin, args)
  const origin = `http://127.0.0.1:${port}`
  const stop = async () => {
    await child.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitReady(child, () => modelsAnswer(origin))
  } catch (err) {
    await stop()
    throw err
  }
  return { label, origin, child, stop }
}
