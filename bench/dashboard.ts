/**
 * `npm run bench:dashboard [-- --quick] [-- --seconds N] [-- --screenshot FILE]`
 *
 * What an open dashboard costs the gateway: `slo-gateway serve` (the demo config: the
 * built-in simulator, two replicas) in its own process, its CPU time read from its own
 * process_cpu_seconds_total, over the same span with no page and with /dashboard open in
 * headless Chromium (which asks /dashboard/data once a second), first idle, then under a
 * steady mixed load (interactive streams and batch requests). Target: under 1% of a core.
 * Writes reports/dashboard.md and a screenshot of the page under load
 * (reports/dashboard-bench.png, and FILE when given: docs/dashboard.png is made so).
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Browser, type Page } from '../test/helpers/chromium.js'
import { runCli } from '../test/helpers/cli.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const TOKEN = 'bench-dashboard-admin-token'

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    screenshot: { type: 'string' },
  },
})
const seconds = Number(values.seconds ?? (values.quick ? 12 : 60))
if (!(seconds > 0)) throw new Error(`--seconds: expected a positive number, got ${values.seconds}`)

const proc = runCli(['serve', '--port', '0', '--admin-port', '0'], { SLO_GATEWAY_ADMIN_TOKEN: TOKEN })
const line = await proc.waitForLog(
  (l) => typeof l.msg === 'string' && l.msg.startsWith('slo-gateway listening'),
)
const url = `http://127.0.0.1:${line.port}`
const adminUrl = `http://127.0.0.1:${line.adminPort}`
const auth = { authorization: `Bearer ${TOKEN}` }

async function cpuSeconds(): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`, { headers: auth })).text()
  const m = /^process_cpu_seconds_total (\S+)$/m.exec(text)
  if (m === null) throw new Error('no process_cpu_seconds_total in /metrics')
  return Number(m[1])
}

/** CPU share of one core the gateway used over `s` seconds. */
async function measure(s: number): Promise<number> {
  const c0 = await cpuSeconds()
  const t0 = performance.now()
  await new Promise((r) => setTimeout(r, s * 1000))
  const c1 = await cpuSeconds()
  return (c1 - c0) / ((performance.now() - t0) / 1000)
}

// a steady mixed load: interactive streams and batch requests, closed loops
let loading = false
async function loop(cls: 'interactive' | 'batch', words: number, maxTokens: number): Promise<void> {
  while (loading) {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-priority': cls },
      body: JSON.stringify({
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        stream: cls === 'interactive',
        max_tokens: maxTokens,
        messages: [{ role: 'user', content: 'lorem ipsum '.repeat(words) }],
      }),
    }).catch(() => undefined)
    await res?.arrayBuffer().catch(() => undefined)
  }
}
function startLoad(): Promise<unknown> {
  loading = true
  const loops: Promise<void>[] = []
  for (let i = 0; i < 8; i++) loops.push(loop('interactive', 50 + i * 150, 64))
  for (let i = 0; i < 3; i++) loops.push(loop('batch', 1500, 256))
  return Promise.all(loops)
}

async function openPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage(1440, 900)
  await page.goto(`${adminUrl}/dashboard#token=${TOKEN}`)
  await page.until(`Number(document.body.dataset.refreshes) >= 1`)
  return page
}

/**
 * The gateway's CPU per GET /dashboard/data, over HTTP as the page asks it: `n` requests
 * back to back, less the CPU the same span costs with none (the idle rate just measured).
 */
async function perRequestMs(n: number, idleShare: number): Promise<number> {
  const c0 = await cpuSeconds()
  const t0 = performance.now()
  for (let i = 0; i < n; i++)
    await (await fetch(`${adminUrl}/dashboard/data`, { headers: auth })).arrayBuffer()
  const c1 = await cpuSeconds()
  const spanS = (performance.now() - t0) / 1000
  return ((c1 - c0 - idleShare * spanS) / n) * 1000
}

const rows: [string, number, number][] = []
const perRequest: [string, number][] = []
const browser = await Browser.launch()
try {
  await new Promise((r) => setTimeout(r, 2000)) // startup settles
  const idleClosed = await measure(seconds)
  let page = await openPage(browser)
  const idleOpen = await measure(seconds)
  const idleRefreshes = Number(await page.eval<string>('document.body.dataset.refreshes'))
  rows.push(['idle', idleClosed, idleOpen])
  perRequest.push(['idle', await perRequestMs(values.quick ? 200 : 1000, idleClosed)])
  await page.send('Page.close').catch(() => {})

  const load = startLoad()
  await new Promise((r) => setTimeout(r, 3000))
  const loadClosed = await measure(seconds)
  page = await openPage(browser)
  const loadOpen = await measure(seconds)
  rows.push(['mixed load', loadClosed, loadOpen])
  perRequest.push(['mixed load', await perRequestMs(values.quick ? 200 : 1000, loadClosed)])
  mkdirSync(join(ROOT, 'reports'), { recursive: true })
  const shot = join(ROOT, 'reports', 'dashboard-bench.png')
  writeFileSync(shot, await page.screenshot())
  if (values.screenshot !== undefined) copyFileSync(shot, values.screenshot)
  loading = false
  await load

  const pct = (v: number) => `${(v * 100).toFixed(2)}%`
  const md = [
    '# Dashboard cost',
    '',
    `The gateway's CPU (share of one core, from its process_cpu_seconds_total) over ${seconds} s with no page and with /dashboard open (${idleRefreshes} refreshes in the idle span).${values.quick ? ' Quick run.' : ''}`,
    '',
    'CPU per GET /dashboard/data (the request the page makes once a second), over HTTP, back to back, less the',
    "span's CPU without it; at one refresh a second, X ms per request is X/10 % of a core:",
    '',
    '| phase | CPU per request | share of a core at 1 refresh/s |',
    '|---|---|---|',
    ...perRequest.map(([name, ms]) => `| ${name} | ${ms.toFixed(2)} ms | ${(ms / 10).toFixed(2)}% |`),
    '',
    'The whole gateway with the page open and closed (this difference is within the noise of the simulator',
    'and the load, which share the two cores):',
    '',
    '| phase | page closed | page open | difference |',
    '|---|---|---|---|',
    ...rows.map(([name, a, b]) => `| ${name} | ${pct(a)} | ${pct(b)} | ${pct(b - a)} |`),
    '',
  ].join('\n')
  writeFileSync(join(ROOT, 'reports', 'dashboard.md'), md)
  process.stdout.write(md)
} finally {
  await browser.close()
  proc.child.kill('SIGTERM')
  await proc.exited
}
