/**
 * A gateway as users run it: `slo-gateway serve` in its own process (through tsx), from a
 * config file the test writes (and may rewrite), in front of a fake upstream that answers
 * every chat completion at once with a usage block. For what needs real processes: several
 * replicas on one Redis, SIGKILL, SIGHUP, a config file changed under load.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { type CliProcess, runCli } from './cli.js'
import { type FakeUpstream, startUpstream } from './upstream.js'

export interface GatewayProcess {
  readonly proc: CliProcess
  readonly url: string
  readonly adminUrl: string
  /** The probe listener, when the config sets server.probe_port (0: a free port). */
  readonly probeUrl: string | undefined
  readonly configFile: string
  /** Rewrites the config file (as an editor would: the whole file at once). */
  writeConfig(config: object | string): void
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>
  /** SIGKILL, as a crash; waits for the exit. */
  kill(): Promise<void>
}

const dirs: string[] = []
process.once('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** The chat completion the fake upstream answers with: `usage` as a real server reports it. */
export function answerChat(up: FakeUpstream, completionTokens = 5): void {
  up.handler = (_req, res, seen) => {
    let prompt = 10
    try {
      const body = JSON.parse(seen.body) as { messages?: { content?: string }[] }
      prompt = Math.max(1, Math.ceil(JSON.stringify(body.messages ?? []).length / 4))
    } catch {}
    res.setHeader('content-type', 'application/json')
    res.end(
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: prompt,
          completion_tokens: completionTokens,
          total_tokens: prompt + completionTokens,
        },
      }),
    )
  }
}

export async function chatUpstream(): Promise<FakeUpstream> {
  const up = await startUpstream()
  answerChat(up)
  return up
}

/** Starts `serve` on free ports with `config` (server ports and log level are set here). */
export async function startGatewayProcess(config: Record<string, unknown>): Promise<GatewayProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'slo-gw-'))
  dirs.push(dir)
  const configFile = join(dir, 'gateway.yaml')
  const full = (c: object | string) =>
    typeof c === 'string'
      ? c
      : stringify({ ...c, server: { port: 0, admin_port: 0, ...(c as { server?: object }).server } })
  writeFileSync(configFile, full(config))
  const proc = runCli(['serve', '--config', configFile])
  const line = await proc.waitForLog(
    (l) => typeof l.msg === 'string' && l.msg.startsWith('slo-gateway listening'),
  )
  const stopWith = async (signal: NodeJS.Signals) => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal)
    await proc.exited
  }
  return {
    proc,
    url: `http://127.0.0.1:${line.port}`,
    adminUrl: `http://127.0.0.1:${line.adminPort}`,
    probeUrl: line.probePort === undefined ? undefined : `http://127.0.0.1:${line.probePort}`,
    configFile,
    writeConfig: (c) => writeFileSync(configFile, full(c)),
    stop: () => stopWith('SIGTERM'),
    kill: () => stopWith('SIGKILL'),
  }
}

/** Waits until GET /readyz answers 200 (a backend has fresh load data), or throws after `timeoutMs`. */
export async function untilReady(adminUrl: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while ((await fetch(`${adminUrl}/readyz`)).status !== 200) {
    if (Date.now() > until) throw new Error(`${adminUrl}/readyz not 200 after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** One chat completion with `key`; the status and the headers that matter here. */
export async function chat(
  url: string,
  key: string,
  content = 'hello',
): Promise<{ status: number; headers: Headers; body: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }], max_tokens: 5 }),
  })
  return { status: res.status, headers: res.headers, body: await res.text() }
}
