/**
 * Overload of the gateway itself, on a real process: a flood of small requests on 1,000
 * connections at once, far above what the simulator behind it serves and more than the
 * process parses on time. Every request gets an answer (served, or a 503 that names its
 * reason: `overloaded` while the event loop is behind, before the body is read; the
 * admission refusals otherwise, and `no_backend` while the flood delays the scrapes past
 * staleness: fail closed), /healthz answers throughout, the memory stays bounded,
 * and when the flood stops the gateway recovers by itself: the lag falls, nothing is
 * held, and it serves.
 */
import { Agent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { startGatewayProcess } from '../../helpers/gateway-process.js'
import { settledResidue } from '../../helpers/residue.js'
import { startSimProcess } from '../../helpers/sim-process.js'
import { sleep } from '../../helpers/upstream.js'
import { metricSum, streamOnce } from './load-wave.js'

const FLOOD = 6_000
// low enough that this flood puts the loop past it on this machine even when the gateway is fast: with the body
// path that forwards bytes as received, 200 ms was not always reached (no `overloaded` at all)
const SHED_MS = 50

describe('a flood above what the gateway can parse', { timeout: 120_000 }, () => {
  it('answers everything, sheds with fast 503s, keeps /healthz, bounds memory, recovers', async () => {
    // the simulator in its own process: only the gateway is flooded
    const sim = await startSimProcess()
    const gw = await startGatewayProcess({
      backends: { pools: [{ name: 'sim', models: ['*'], endpoints: [sim.url] }] },
      auth: { anonymous: 'anon' },
      server: { shed_event_loop_delay_ms: SHED_MS, probe_port: 0 },
    })
    const agent = new Agent({ connections: 1_000, pipelining: 1, connect: { timeout: 60_000 } })
    const statuses: Record<string, number> = {}
    const note = (k: string) => {
      statuses[k] = (statuses[k] ?? 0) + 1
    }
    let flooding = true
    // both listeners' /healthz: the admin one (the flooded event loop) and the probe thread's
    const health: number[] = []
    const probeHealth: number[] = []
    const watch = (url: string, out: number[]) =>
      (async () => {
        while (flooding) {
          const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(20_000) }).catch(
            () => undefined,
          )
          out.push(r?.status ?? 0)
          await sleep(200)
        }
      })()
    const probers = [watch(gw.adminUrl, health), watch(gw.probeUrl!, probeHealth)]
    const body = JSON.stringify({
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    })
    await Promise.all(
      Array.from({ length: FLOOD }, async () => {
        try {
          const res = await request(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            dispatcher: agent,
            headers: { 'content-type': 'application/json' },
            body,
          })
          await res.body.text()
          const reason = res.headers['x-gateway-reject-reason']
          note(res.statusCode === 503 ? `503 ${String(reason)}` : String(res.statusCode))
        } catch (err) {
          note(`error ${String((err as { code?: string }).code)}`)
        }
      }),
    )
    flooding = false
    await Promise.all(probers)
    await agent.close()
    console.log(
      `flood: ${JSON.stringify(statuses)}; /healthz ${health.length} probes (admin), ${probeHealth.length} (probe listener)`,
    )
    for (const k of Object.keys(statuses))
      expect(k).toMatch(
        /^(200|503 (overloaded|queue_full|ttft_slo|queue_timeout|ttft_unreachable|no_backend))$/,
      )
    expect(statuses['503 overloaded'] ?? 0).toBeGreaterThan(0)
    expect(health.length).toBeGreaterThan(0)
    expect(health.every((s) => s === 200)).toBe(true)
    expect(probeHealth.length).toBeGreaterThan(0)
    expect(probeHealth.every((s) => s === 200)).toBe(true)
    const m = await (await fetch(`${gw.adminUrl}/metrics`)).text()
    const rss = metricSum(m, 'process_resident_memory_bytes')
    console.log(`flood: gateway RSS after ${Math.round(rss / 2 ** 20)} MB`)
    expect(rss).toBeLessThan(600 * 2 ** 20)
    expect(metricSum(m, 'slo_gateway_rejected_total', { reason: 'overloaded' })).toBe(
      statuses['503 overloaded'] ?? 0,
    )
    // recovered: the lag is back under the threshold, nothing is held, and it serves
    let lag = Number.POSITIVE_INFINITY
    for (let i = 0; i < 100 && lag > SHED_MS; i++) {
      lag = ((await (await fetch(`${gw.adminUrl}/admin/state`)).json()) as { eventLoopLagMs: number })
        .eventLoopLagMs
      if (lag > SHED_MS) await sleep(100)
    }
    expect(lag).toBeLessThanOrEqual(SHED_MS)
    expect(await settledResidue(gw.adminUrl, {}, 30_000)).toEqual([])
    // and it serves: a lag spike from elsewhere on the machine (the rest of the suite runs
    // beside this test) may still shed one with `overloaded`, as it should; any other refusal fails
    const endings: string[] = []
    for (let i = 0; i < 10 && endings.at(-1) !== 'complete'; i++) {
      if (i > 0) await sleep(200)
      endings.push(await streamOnce(gw.url, { maxTokens: 4, reason: true }))
    }
    expect(endings.at(-1), endings.join(', ')).toBe('complete')
    for (const e of endings.slice(0, -1)) expect(e).toBe('status 503 overloaded')
    await gw.stop()
    await sim.stop()
  })
})
