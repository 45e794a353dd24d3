/**
 * Drain and disconnects on a real process (`slo-gateway serve` with its built-in
 * simulator). SIGTERM under a steady load of streams: zero lost (each stream completes, or
 * the request is refused with 503 draining, or its connection refused, before it was
 * accepted), and the process exits 0 within the grace period. A storm of 1,000 clients
 * that leave at random moments (queued, waiting for the first token, mid-stream): the
 * gateway stays up and serves, and nothing is held after (no request in flight or queued,
 * no lease, no prefill budget), and each request it received counted once (cancelled
 * when its client left before its answer).
 */
import { Agent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { startGatewayProcess } from '../../helpers/gateway-process.js'
import { settledResidue } from '../../helpers/residue.js'
import { sleep } from '../../helpers/upstream.js'
import { metricSum, streamOnce } from './load-wave.js'

const SIM = { enabled: true, replicas: 2, time_scale: 1 }

describe('SIGTERM under a steady load of streams', { timeout: 120_000 }, () => {
  it('loses nothing: each stream completes or was refused before it was accepted; exit 0 within the grace', async () => {
    const grace = 20_000
    const gw = await startGatewayProcess({
      simulator: SIM,
      auth: { anonymous: 'anon' },
      server: { shutdown_grace_ms: grace, probe_port: 0 },
      classes: { interactive: { slo: { ttft_ms: 5_000, tpot_ms: 500 }, max_queue_wait_ms: 10_000 } },
    })
    const readyz = async () => (await fetch(`${gw.probeUrl}/readyz`)).json() as Promise<{ status: string }>
    const endings: Promise<string>[] = []
    let sending = true
    // a steady load: a new stream of ~1-2 s every 40 ms, about 30-50 in flight
    const load = (async () => {
      while (sending) {
        endings.push(streamOnce(gw.url, { maxTokens: 96, timeoutMs: grace + 20_000 }))
        await sleep(40)
      }
    })()
    await sleep(3_000)
    expect((await readyz()).status).toBe('ready')
    const t0 = performance.now()
    gw.proc.child.kill('SIGTERM')
    // arrivals go on during the drain (1.5 s); the probe listener (its own thread) says it
    // drains while the streams in flight (1-2 s each) still finish
    await sleep(300)
    expect((await readyz()).status).toBe('draining')
    await sleep(1_200)
    sending = false
    await load
    const code = await gw.proc.exited
    const took = performance.now() - t0
    const all = await Promise.all(endings)
    const counts: Record<string, number> = {}
    for (const e of all) counts[e] = (counts[e] ?? 0) + 1
    console.log(`drain: ${JSON.stringify(counts)}; exit ${code} after ${Math.round(took)} ms`)
    expect(code).toBe(0)
    expect(took).toBeLessThan(grace + 5_000)
    expect(counts['error-event'] ?? 0).toBe(0)
    expect(counts.timeout ?? 0).toBe(0)
    expect(counts.complete ?? 0).toBeGreaterThan(5)
    // what did not complete was refused before it was accepted: 503 draining while the
    // listener was open, then connections refused once it closed; no stream was cut
    for (const k of Object.keys(counts)) expect(['complete', 'status 503', 'refused'], k).toContain(k)
    expect(counts['status 503'] ?? 0).toBeGreaterThan(0)
    const draining = gw.proc.stdout.split('\n').filter((l) => l.includes('GW_ERR_DRAINING')).length
    expect(draining).toBe(counts['status 503'] ?? 0)
  })
})

describe('a storm of 1,000 clients leaving at random moments', { timeout: 120_000 }, () => {
  it('stays up, holds nothing after, and counts every departure', async () => {
    const gw = await startGatewayProcess({
      simulator: SIM,
      auth: { anonymous: 'anon' },
      classes: { interactive: { slo: { ttft_ms: 5_000, tpot_ms: 500 }, max_queue_wait_ms: 20_000 } },
    })
    const agent = new Agent({ connections: 2_000, pipelining: 0, connect: { timeout: 30_000 } })
    let seed = 22
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    let left = 0
    const broken: string[] = []
    let finished = 0
    const one = async (i: number) => {
      // every other client leaves at a random moment in its first 3 s; the rest wait for the answer
      const ctl = new AbortController()
      const at = Math.floor(rand() * 3_000)
      const timer = i % 2 === 0 ? setTimeout(() => ctl.abort(), at) : undefined
      try {
        const res = await request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          dispatcher: agent,
          signal: ctl.signal,
          headers: {
            'content-type': 'application/json',
            'x-priority': i % 3 === 0 ? 'batch' : 'interactive',
          },
          body: JSON.stringify({
            model: 'meta-llama/Llama-3.1-8B-Instruct',
            stream: i % 4 !== 0,
            // a client that leaves asks for a long answer, so it is still waiting when it
            // leaves, however fast the others are served
            max_tokens: timer === undefined ? 16 : 2_000,
            ignore_eos: true,
            messages: [{ role: 'user', content: `${i} ${'word '.repeat(50 + (i % 200))}` }],
          }),
        })
        await res.body.text()
        finished++
      } catch (err) {
        if (ctl.signal.aborted) left++
        else broken.push(String((err as { code?: string }).code ?? err))
      } finally {
        clearTimeout(timer)
      }
    }
    await Promise.all(Array.from({ length: 1_000 }, (_, i) => sleep(i * 3).then(() => one(i))))
    await agent.close()
    console.log(
      `storm: ${left} left early, ${finished} answered, ${broken.length} broken ${broken.slice(0, 3)}`,
    )
    // a client that stays gets its answer, whatever the others do
    expect(broken).toEqual([])
    expect(left).toBeGreaterThan(200)
    expect(finished).toBeGreaterThan(200)
    expect((await fetch(`${gw.adminUrl}/healthz`)).status).toBe(200)
    expect(await settledResidue(gw.adminUrl, {}, 30_000)).toEqual([])
    const m = await (await fetch(`${gw.adminUrl}/metrics`)).text()
    const cancelled = metricSum(m, 'slo_gateway_requests_total', { outcome: 'cancelled' })
    const total = metricSum(m, 'slo_gateway_requests_total')
    // every request the gateway received is counted once, however it ended (a client that
    // left before its request was in is no request); each answered one, and the rest
    // counted as cancelled or refused, never lost from the count
    expect(total).toBeLessThanOrEqual(1_000)
    expect(total).toBeGreaterThanOrEqual(finished)
    expect(cancelled).toBeGreaterThan(0)
    expect(cancelled).toBeLessThanOrEqual(left)
    expect(total - cancelled).toBeGreaterThanOrEqual(finished)
    const ok = await streamOnce(gw.url, { maxTokens: 4 })
    expect(ok).toBe('complete')
    await gw.stop()
  })
})
