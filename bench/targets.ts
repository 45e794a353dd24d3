/**
 * What the overhead benches measure: the trivial upstream itself and the proxies in front
 * of it (the gateway with telemetry on and off, or with every feature on; nginx, haproxy;
 * Portkey's AI gateway), each a child process.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { type Child, freePort, start, waitReady, which } from './processes.js'

/** The trivial upstream built to plain JS (bench/tsconfig.build.json), relative to the root. */
export const UPSTREAM_JS = 'bench/dist/trivial-upstream.js'
/** The Node floor proxy, built likewise. */
const NODE_FLOOR_JS = 'bench/dist/node-floor-proxy.js'

export type TargetKey =
  | 'direct'
  | 'gateway'
  | 'gateway-off'
  | 'gateway-all'
  | 'gateway-before'
  | 'nginx'
  | 'haproxy'
  | 'portkey'
  | 'node-floor'

export interface Target {
  readonly key: TargetKey
  readonly label: string
  readonly origin: string
  /** The proxy's process (CPU is read from its tree); undefined for the upstream itself. */
  readonly child?: Child
  /** The gateway's admin listener. */
  readonly admin?: string
  /** Headers every request to it must carry (routing for Portkey, the API key for gateway-all). */
  readonly headers?: Readonly<Record<string, string>>
  stop(): Promise<void>
}

export interface Upstream {
  readonly child: Child
  readonly port: number
  readonly origin: string
}

const SMALL_CHAT = JSON.stringify({
  model: 'bench-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 1,
})

/** One small chat completion answered 200. */
async function answers(origin: string, headers: Readonly<Record<string, string>> = {}): Promise<boolean> {
  const res = await request(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: SMALL_CHAT,
  })
  await res.body.dump()
  return res.statusCode === 200
}

export async function startUpstream(
  root: string,
  core: number | undefined,
  chunks: number,
  intervalMs: number,
) {
  const port = await freePort()
  const child = start(
    'trivial-upstream',
    process.execPath,
    [
      join(root, UPSTREAM_JS),
      '--port',
      String(port),
      '--chunks',
      String(chunks),
      '--interval-ms',
      String(intervalMs),
    ],
    core,
  )
  const origin = `http://127.0.0.1:${port}`
  await waitReady(child, () => answers(origin))
  return { child, port, origin } satisfies Upstream
}

export function directTarget(up: Upstream): Target {
  return { key: 'direct', label: 'upstream direct', origin: up.origin, stop: async () => {} }
}

async function proxy(
  key: TargetKey,
  label: string,
  child: Child,
  port: number,
  cleanup?: () => void,
  admin?: string,
  headers?: Readonly<Record<string, string>>,
) {
  const origin = `http://127.0.0.1:${port}`
  await waitReady(child, () => answers(origin, headers))
  const target: Target = {
    key,
    label,
    origin,
    child,
    ...(admin === undefined ? {} : { admin }),
    ...(headers === undefined ? {} : { headers }),
    stop: async () => {
      await child.stop()
      cleanup?.()
    },
  }
  return target
}

/** `node dist/cli.js serve --upstream ...`, with telemetry on or off (telemetry.enabled). */
export async function startGateway(root: string, up: Upstream, telemetry: boolean, core: number | undefined) {
  const [port, admin] = [await freePort(), await freePort()]
  const common = [
    '--upstream',
    up.origin,
    '--port',
    String(port),
    '--admin-port',
    String(admin),
    '--set',
    'log.level=warn',
  ]
  const args = [join(root, 'dist/cli.js'), 'serve', ...common]
  if (!telemetry) args.push('--set', 'telemetry.enabled=false')
  const key = telemetry ? 'gateway' : 'gateway-off'
  const child = start(key, process.execPath, args, core)
  const t = await proxy(key, 'slo-gateway', child, port, undefined, `http://127.0.0.1:${admin}`)
  return telemetry ? t : { ...t, label: 'slo-gateway, telemetry off (telemetry.enabled=false)' }
}

/** Whether the gateway runs admission control (its /admin/state has an `admission` section). */
export async function admissionWired(t: Target): Promise<boolean | undefined> {
  if (t.admin === undefined) return undefined
  try {
    const res = await request(`${t.admin}/admin/state`)
    const state = (await res.body.json()) as Record<string, unknown>
    return state.admission !== undefined && state.admission !== null
  } catch {
    return undefined
  }
}

/**
 * Fills the `__NAME__` placeholders of a config template (nginx, HAProxy, YAML), except on its
 * comment lines (`#` first): a template names its placeholders in its header comment, and a
 * value of several lines put there would leave all but its first line outside the comment
 * (HAProxy in front of two replicas refused its config: "'server' out of section").
 */
export function render(template: string, vars: Record<string, string | number>): string {
  return template
    .split('\n')
    .map((line) => {
      if (line.trimStart().startsWith('#')) return line
      let out = line
      for (const [k, v] of Object.entries(vars)) out = out.replaceAll(`__${k}__`, String(v))
      return out
    })
    .join('\n')
}

/** nginx from bench/peers/nginx.conf; undefined when the binary is missing. */
export async function startNginx(root: string, up: Upstream, core: number | undefined) {
  const bin = which('nginx')
  if (bin === undefined) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'bench-nginx-'))
  const port = await freePort()
  const conf = render(readFileSync(join(root, 'bench/peers/nginx.conf'), 'utf8'), {
    PORT: port,
    UPSTREAM_PORT: up.port,
    DIR: dir,
  })
  writeFileSync(join(dir, 'nginx.conf'), conf)
  const child = start(
    'nginx',
    bin,
    ['-p', dir, '-e', join(dir, 'startup-error.log'), '-c', join(dir, 'nginx.conf')],
    core,
  )
  return proxy('nginx', 'nginx (1 worker)', child, port, () => rmSync(dir, { recursive: true, force: true }))
}

/**
 * bench/node-floor-proxy.ts: node:http and undici with nothing on top (a body read, one
 * JSON.parse, Pool.dispatch, the answer relayed), the floor of any Node.js proxy here.
 */
export async function startNodeFloor(root: string, up: Upstream, core: number | undefined) {
  const port = await freePort()
  const args = [join(root, NODE_FLOOR_JS), '--port', String(port), '--upstream', up.origin]
  const child = start('node-floor', process.execPath, args, core)
  return proxy(
    'node-floor',
    'Node floor (node:http + undici, nothing else: bench/node-floor-proxy.ts)',
    child,
    port,
  )
}

/** HAProxy from bench/peers/haproxy.cfg; undefined when the binary is missing. */
export async function startHaproxy(root: string, up: Upstream, core: number | undefined) {
  const bin = which('haproxy')
  if (bin === undefined) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'bench-haproxy-'))
  const port = await freePort()
  const cfg = render(readFileSync(join(root, 'bench/peers/haproxy.cfg'), 'utf8'), {
    PORT: port,
    UPSTREAM_PORT: up.port,
  })
  writeFileSync(join(dir, 'haproxy.cfg'), cfg)
  const child = start('haproxy', bin, ['-db', '-f', join(dir, 'haproxy.cfg')], core)
  return proxy('haproxy', 'haproxy (1 thread)', child, port, () =>
    rmSync(dir, { recursive: true, force: true }),
  )
}

/** The key of the tenant in bench/peers/gateway-all.yaml (its SHA-256 is in the file). */
export const GATEWAY_ALL_KEY = 'sk-bench-all'

/**
 * `node dist/cli.js serve --config` bench/peers/gateway-all.yaml: API-key auth, a limited
 * tenant, admission and telemetry all on, in front of the trivial upstream.
 */
export async function startGatewayAll(
  root: string,
  up: Upstream,
  core: number | undefined,
  /** Another build's root (its dist/cli.js), for a before/after run: target gateway-before. */
  before?: string,
) {
  const [port, admin] = [await freePort(), await freePort()]
  const dir = mkdtempSync(join(tmpdir(), 'bench-gateway-all-'))
  const conf = render(readFileSync(join(root, 'bench/peers/gateway-all.yaml'), 'utf8'), {
    PORT: port,
    ADMIN_PORT: admin,
    UPSTREAM: up.origin,
  })
  writeFileSync(join(dir, 'gateway.yaml'), conf)
  const args = [join(before ?? root, 'dist/cli.js'), 'serve', '--config', join(dir, 'gateway.yaml')]
  const key = before === undefined ? 'gateway-all' : 'gateway-before'
  const child = start(key, process.execPath, args, core)
  return proxy(
    key,
    before === undefined
      ? 'slo-gateway, all features on (bench/peers/gateway-all.yaml)'
      : `slo-gateway BEFORE (${before}/dist), all features on`,
    child,
    port,
    () => rmSync(dir, { recursive: true, force: true }),
    `http://127.0.0.1:${admin}`,
    { authorization: `Bearer ${GATEWAY_ALL_KEY}` },
  )
}

/** Where npm put @portkey-ai/gateway's server (a bench devDependency); undefined when missing. */
export function portkeyServer(root: string): string | undefined {
  for (const base of [join(root, 'node_modules'), join(root, 'bench/node_modules')]) {
    const file = join(base, '@portkey-ai/gateway/build/start-server.js')
    if (existsSync(file)) return file
  }
  return undefined
}

/** Portkey's version from its package.json, or ''. */
export function portkeyVersion(root: string): string {
  const server = portkeyServer(root)
  if (server === undefined) return ''
  try {
    const pkg = JSON.parse(readFileSync(join(server, '../../package.json'), 'utf8')) as { version?: string }
    return pkg.version ?? ''
  } catch {
    return ''
  }
}

/**
 * Portkey's AI gateway (`@portkey-ai/gateway`, Node build, `--headless`, NODE_ENV=production):
 * it routes each request by its headers, here `x-portkey-provider: openai` with
 * `x-portkey-custom-host` the upstream's /v1. Undefined when the package is not installed.
 */
export async function startPortkey(root: string, up: Upstream, core: number | undefined) {
  const server = portkeyServer(root)
  if (server === undefined) return undefined
  const port = await freePort()
  const child = start(
    'portkey',
    'env',
    ['NODE_ENV=production', process.execPath, server, `--port=${port}`, '--headless'],
    core,
  )
  return proxy(
    'portkey',
    `Portkey AI gateway ${portkeyVersion(root)} (Node)`,
    child,
    port,
    undefined,
    undefined,
    {
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': `${up.origin}/v1`,
      authorization: 'Bearer sk-unused',
    },
  )
}
