/**
 * The built-in simulator (`simulator.enabled`, `npm start`) runs on a worker thread of its
 * own: it keeps its engine's time while the gateway's event loop is busy, as a model server
 * would; it starts and closes with the runtime, and bad options are refused at startup.
 */
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { SimOptionError } from '../../../src/sim/sim-options.js'
import { type SimThread, startSimThread } from '../../../src/sim/sim-thread.js'

/** Blocks this thread (the gateway's event loop, in the gateway) for `ms`. */
function block(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

async function generatedTokens(url: string): Promise<number> {
  const res = await request(`${url}/metrics`)
  const text = await res.body.text()
  const m = /^vllm:generation_tokens_total\{[^}]*\} (\d+)/m.exec(text)
  if (m?.[1] === undefined) throw new Error(`no vllm:generation_tokens_total in:\n${text.slice(0, 500)}`)
  return Number(m[1])
}

describe('the built-in simulator on its own thread', () => {
  let sim: SimThread | undefined
  afterEach(async () => {
    await sim?.close()
    sim = undefined
  })

  it('generates a stream while the thread that started it is blocked', async () => {
    sim = await startSimThread({ profile: 'llama-3.1-8b-h100', replicas: 1, port: 0 })
    const url = sim.replicas[0]?.url as string
    expect(sim.modelName).toBe('meta-llama/Llama-3.1-8B-Instruct')
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: sim.modelName,
        stream: true,
        max_tokens: 40,
        ignore_eos: true,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    })
    expect(res.statusCode).toBe(200)
    const before = await generatedTokens(url)
    expect(before).toBeLessThan(40)
    // 40 tokens take ~0.3 s of engine steps; this thread does nothing for 1 s. In this
    // thread's event loop the engine could not step until it turned again.
    block(1000)
    expect(await generatedTokens(url)).toBe(40)
    const body = await res.body.text()
    expect(body.trim().endsWith('data: [DONE]')).toBe(true)
  })

  it('closes its servers with close()', async () => {
    sim = await startSimThread({ profile: 'tiny', replicas: 2, port: 0 })
    const urls = sim.replicas.map((r) => r.url)
    expect(urls).toHaveLength(2)
    expect((await request(`${urls[1]}/health`)).statusCode).toBe(200)
    await sim.close()
    sim = undefined
    await expect(request(`${urls[0]}/health`)).rejects.toThrow(/ECONNREFUSED/)
  })

  it('refuses bad options at startup, as startSim does', async () => {
    // by the name the CLI tells a bad profile by (exit 1 with its message, no stack)
    await expect(startSimThread({ profile: 'no-such-profile', port: 0 })).rejects.toMatchObject({
      name: 'ProfileError',
      message: expect.stringMatching(/no-such-profile/),
    })
    await expect(startSimThread({ replicas: 0, port: 0 })).rejects.toBeInstanceOf(SimOptionError)
  })
})
