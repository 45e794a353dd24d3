/**
 * Headless Chromium (Debian's `chromium`, installed by scripts/test-prereqs.mjs) driven
 * through the Chrome DevTools protocol over --remote-debugging-pipe: the browser reads
 * NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4. No npm
 * package and no browser download: only the protocol, which playwright and puppeteer
 * speak underneath as well.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable, Writable } from 'node:stream'

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'

/** Whether the browser is there; the test fails with this message when not. */
export function chromiumProblem(): string | undefined {
  try {
    accessSync(CHROMIUM, constants.X_OK)
    return undefined
  } catch {
    return `no Chromium at ${CHROMIUM}: run 'node scripts/test-prereqs.mjs' (apt-get install chromium) or set CHROMIUM`
  }
}

type Json = Record<string, unknown>
interface Pending {
  resolve(v: Json): void
  reject(e: Error): void
  method: string
}

export interface CdpEvent {
  readonly method: string
  readonly params: Json
  readonly sessionId?: string
}

export class Browser {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private buffer = ''
  readonly events: CdpEvent[] = []
  private readonly listeners = new Set<(e: CdpEvent) => void>()

  private constructor(
    private readonly child: ChildProcess,
    private readonly input: Writable,
    output: Readable,
    private readonly dir: string,
  ) {
    output.setEncoding('utf8')
    output.on('data', (chunk: string) => this.read(chunk))
    child.on('exit', () => {
      for (const p of this.pending.values()) p.reject(new Error(`chromium exited during ${p.method}`))
      this.pending.clear()
    })
  }

  static async launch(opts: { width?: number; height?: number } = {}): Promise<Browser> {
    const problem = chromiumProblem()
    if (problem !== undefined) throw new Error(problem)
    const dir = mkdtempSync(join(tmpdir(), 'slo-gw-chromium-'))
    const args = [
      '--headless',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-extensions',
      '--remote-debugging-pipe',
      `--user-data-dir=${dir}`,
      `--window-size=${opts.width ?? 1440},${opts.height ?? 900}`,
      'about:blank',
    ]
    // Chromium's sandbox does not run as root (CI here is root)
    if (process.getuid?.() === 0) args.unshift('--no-sandbox')
    const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] })
    child.stderr?.resume()
    const [, , , input, output] = child.stdio as [unknown, unknown, unknown, Writable, Readable]
    const b = new Browser(child, input, output, dir)
    await b.send('Browser.getVersion')
    return b
  }

  private read(chunk: string): void {
    this.buffer += chunk
    for (let end = this.buffer.indexOf('\0'); end >= 0; end = this.buffer.indexOf('\0')) {
      const msg = JSON.parse(this.buffer.slice(0, end)) as Json
      this.buffer = this.buffer.slice(end + 1)
      if (typeof msg.id === 'number') {
        const p = this.pending.get(msg.id)
        this.pending.delete(msg.id)
        const err = msg.error as { message?: string } | undefined
        if (err !== undefined) p?.reject(new Error(`${p.method}: ${err.message ?? 'error'}`))
        else p?.resolve((msg.result ?? {}) as Json)
      } else if (typeof msg.method === 'string') {
        const e: CdpEvent = {
          method: msg.method,
          params: (msg.params ?? {}) as Json,
          ...(typeof msg.sessionId === 'string' ? { sessionId: msg.sessionId } : {}),
        }
        this.events.push(e)
        for (const l of this.listeners) l(e)
      }
    }
  }

  send(method: string, params: Json = {}, sessionId?: string): Promise<Json> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method })
      this.input.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`)
    })
  }

  /** Resolves with the first event (already seen or to come) that `match` accepts. */
  waitFor(match: (e: CdpEvent) => boolean, timeoutMs = 15_000): Promise<CdpEvent> {
    const seen = this.events.find(match)
    if (seen !== undefined) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(l)
        reject(new Error('timed out waiting for a CDP event'))
      }, timeoutMs)
      const l = (e: CdpEvent) => {
        if (!match(e)) return
        clearTimeout(timer)
        this.listeners.delete(l)
        resolve(e)
      }
      this.listeners.add(l)
    })
  }

  /** A new tab with Network, Runtime, Log and Page events on; its session id. */
  async newPage(width = 1440, height = 900): Promise<Page> {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' })
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true })
    const page = new Page(this, String(sessionId))
    for (const domain of ['Network', 'Runtime', 'Log', 'Page']) await page.send(`${domain}.enable`)
    await page.send('Emulation.setDeviceMetricsOverride', {
      width,
      height,
      deviceScaleFactor: 1,
      mobile: false,
    })
    return page
  }

  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r))
      this.send('Browser.close').catch(() => {})
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 3_000)
      await exited
      clearTimeout(timer)
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export class Page {
  constructor(
    readonly browser: Browser,
    readonly sessionId: string,
  ) {}

  send(method: string, params: Json = {}): Promise<Json> {
    return this.browser.send(method, params, this.sessionId)
  }

  events(method: string): Json[] {
    return this.browser.events
      .filter((e) => e.sessionId === this.sessionId && e.method === method)
      .map((e) => e.params)
  }

  async goto(url: string): Promise<void> {
    const loaded = this.browser.waitFor(
      (e) => e.sessionId === this.sessionId && e.method === 'Page.loadEventFired',
    )
    await this.send('Page.navigate', { url })
    await loaded
  }

  /** Evaluates `expression` in the page (promises awaited) and returns its value as JSON. */
  async eval<T>(expression: string): Promise<T> {
    const r = await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true })
    const ex = r.exceptionDetails as { text?: string; exception?: { description?: string } } | undefined
    if (ex !== undefined)
      throw new Error(`in the page: ${ex.exception?.description ?? ex.text ?? 'exception'}`)
    return (r.result as { value: T }).value
  }

  /** Polls `expression` until it is truthy. */
  async until(expression: string, timeoutMs = 15_000): Promise<void> {
    const end = Date.now() + timeoutMs
    while (!(await this.eval<boolean>(`Boolean(${expression})`))) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${expression}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /** Types text into the focused element, as a keyboard would. */
  async type(text: string): Promise<void> {
    await this.send('Input.insertText', { text })
  }

  async screenshot(): Promise<Buffer> {
    const { data } = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true })
    return Buffer.from(String(data), 'base64')
  }

  /** Console errors, uncaught exceptions and the browser's own error log entries. */
  errors(): string[] {
    const out: string[] = []
    for (const c of this.events('Runtime.consoleAPICalled'))
      if (c.type === 'error' || c.type === 'assert')
        out.push(
          `console.${c.type}: ${JSON.stringify((c.args as { value?: unknown }[]).map((a) => a.value))}`,
        )
    for (const e of this.events('Runtime.exceptionThrown'))
      out.push(`exception: ${JSON.stringify((e.exceptionDetails as Json | undefined)?.exception ?? e)}`)
    for (const l of this.events('Log.entryAdded')) {
      const entry = l.entry as { level?: string; text?: string; url?: string }
      if (entry.level === 'error') out.push(`log: ${entry.text} ${entry.url ?? ''}`)
    }
    return out
  }

  /** Every URL the page asked for over the network. */
  requests(): string[] {
    return this.events('Network.requestWillBeSent').map((e) => String((e.request as { url: string }).url))
  }
}
