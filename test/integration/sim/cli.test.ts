import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'
import { runSimCli } from '../../../src/sim/index.js'

const INDEX = fileURLToPath(new URL('../../../src/sim/index.ts', import.meta.url))

/** Runs `runSimCli(args)` in a child Node process (through tsx) and exits with its result. */
function spawnCli(args: string[]): ChildProcess {
  const code = `const m = await import(${JSON.stringify(INDEX)}); process.exit(await m.runSimCli(${JSON.stringify(args)}))`
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** Waits for `n` "listening on URL" lines and returns the URLs. */
function urls(child: ChildProcess, n: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`no URLs after 20 s: ${out}`)), 20_000)
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      const found = [...out.matchAll(/listening on (http:\/\/\S+)/g)].map((m) => m[1]!)
      if (found.length >= n) {
        clearTimeout(timer)
        resolve(found)
      }
    })
    child.on('exit', (c) => reject(new Error(`exited ${c} before listening: ${out}`)))
  })
}

const exitCode = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) => child.on('exit', (code) => resolve(code)))

describe('slo-gateway sim (runSimCli)', () => {
  it('prints one line per replica with its URL and stops cleanly on SIGTERM (exit 0)', async () => {
    const child = spawnCli(['--profile', 'tiny', '--port', '0', '--replicas', '2', '--metrics-format', 'tgi'])
    const exited = exitCode(child)
    const [a, b] = await urls(child, 2)
    expect(a).not.toBe(b)
    expect((await fetch(`${a}/health`)).status).toBe(200)
    expect(await (await fetch(`${b}/metrics`)).text()).toContain('tgi_queue_size')
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  }, 30_000)

  it('under the CLI the crash fault exits the process (exit 1)', async () => {
    const child = spawnCli(['--profile', 'tiny', '--port', '0'])
    const exited = exitCode(child)
    const [url] = await urls(child, 1)
    await fetch(`${url}/admin/faults`, { method: 'POST', body: '{"crash":true}' }).catch(() => undefined)
    expect(await exited).toBe(1)
  }, 30_000)

  it('returns 2 with a clear message and the usage on a bad flag; 0 on --help', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    try {
      expect(await runSimCli(['--replicas', 'many'])).toBe(2)
      const msg = err.mock.calls.map((c) => String(c[0])).join('')
      expect(msg).toContain('--replicas: expected an integer')
      expect(msg).toContain('Usage: slo-gateway sim')
      expect(await runSimCli(['--help'])).toBe(0)
      expect(out.mock.calls.map((c) => String(c[0])).join('')).toContain('--metrics-format')
      expect(await runSimCli(['--profile', 'does-not-exist', '--port', '0'])).toBe(1)
    } finally {
      err.mockRestore()
      out.mockRestore()
    }
  })
})
