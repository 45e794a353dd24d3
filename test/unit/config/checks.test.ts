import { describe, expect, it } from 'vitest'
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../../src/config/load.js'
import { editDistance, nearest } from '../../../src/config/suggest.js'
import { fixture, problems } from './helpers.js'

const noSim = 'simulator.enabled=false'

describe('check-config: what breaks at run time', () => {
  it('a fallback_model no pool serves, with the nearest model', () => {
    const p = problems(() =>
      loadConfig(undefined, {
        sets: [
          noSim,
          'backends.pools=[{name: big, models: [llama-70b], endpoints: ["http://h:1"]}, {name: small, models: [llama-8b], endpoints: ["http://h:2"]}]',
          'classes.interactive.degrade=[{action: fallback_model, model: llama-8c}]',
        ],
      }),
    )
    expect(p).toEqual([
      "--set classes.interactive.degrade=[{action: fallback_model, model: llama-8c}]: classes.interactive.degrade[0].model: no pool serves model 'llama-8c': did you mean 'llama-8b'? (the pools serve 'llama-70b', 'llama-8b')",
    ])
  })

  it('a fallback model that only a * pool would take is a note, not an error', () => {
    const { notes } = loadConfig(undefined, {
      upstreams: ['http://h:1'],
      sets: ['classes.interactive.degrade=[{action: fallback_model, model: small}]'],
    })
    expect(notes.join('\n')).toContain(
      "classes.interactive.degrade[0].model: note: no pool names model 'small': it goes to pool 'default'",
    )
  })

  it('a pool with neither endpoints nor discovery', () => {
    const p = problems(() =>
      loadConfig(undefined, { sets: [noSim, 'backends.pools=[{name: a, models: [m]}]'] }),
    )
    expect(p).toEqual([
      "--set backends.pools=[{name: a, models: [m]}]: backends.pools[0]: pool 'a' has no servers: set endpoints (a list of http://host:port) or discovery",
    ])
  })

  it('no pool at all is an error, unless the simulator adds one: then a note', () => {
    expect(problems(() => loadConfig(undefined, { sets: [noSim] }))).toEqual([
      `${DEFAULT_CONFIG_FILE}: backends.pools: no pool configured: every request would fail (no_backend); add a pool, or pass --upstream URL, or set simulator.enabled: true`,
    ])
    const { notes } = loadConfig(undefined)
    expect(notes).toEqual([
      `${DEFAULT_CONFIG_FILE}: backends.pools: note: none configured: the built-in simulator (simulator.enabled) adds pool 'sim' serving every model`,
    ])
  })
})

describe('check-config: every problem in one pass, in file order, by the rule', () => {
  it('an upper-case class name hides neither the next class nor the cross checks', () => {
    const file = fixture('hidden-errors.yaml')
    expect(problems(() => loadConfig(file))).toEqual(
      [
        "server: unknown key 'admin_prot': did you mean 'admin_port'?",
        'classes.Gold: class names are lower-case letters, digits, _ and -, starting with a letter',
        'classes.silver.priority: expected a number >= 0, got -1',
        'classes.silver.max_kv_usage: expected at most 1, got 2',
        "classes.silver.reject_on_ttft: expected true or false, got 'no'",
        "classes.silver.degrade[0].model: no pool serves model 'llama-8c': did you mean 'llama-8b'? (the pools serve 'llama-8b', 'llama-70b')",
        "backends.pools[1]: pool 'main' has no servers: set endpoints (a list of http://host:port) or discovery",
        "backends.pools[1].name: duplicate pool name 'main'",
      ].map((m) => `${file}: ${m}`),
    )
  })

  it('names the rule for pool names and suggests the nearest value of an enum', () => {
    const p = problems(() =>
      loadConfig(undefined, { upstreams: ['http://h:1'], sets: ['backends.pools[0].name=a b'] }),
    )
    expect(p).toEqual([
      "--set backends.pools[0].name=a b: backends.pools[0].name: pool names are letters, digits, _ . and -, got 'a b'",
    ])
    expect(problems(() => loadConfig(undefined, { upstreams: ['http://h:1'], engine: 'SGLang' }))).toEqual([
      `--engine SGLang: backends.pools[0].engine: expected one of "vllm", "vllm-v0", "sglang", "tgi", "llamacpp", "trtllm", got 'SGLang': did you mean 'sglang'?`,
    ])
  })
})

describe('check-config: where a value came from', () => {
  it('--set, --upstream and environment values are named as given, after the file', () => {
    const p = problems(() =>
      loadConfig(
        fixture('three-mistakes.yaml'),
        { sets: ['classes.interactive.slo.ttft_ms=abc'] },
        { SLO_GATEWAY_ADMIN_PORT: 'x' },
      ),
    )
    expect(p.slice(-2)).toEqual([
      "SLO_GATEWAY_ADMIN_PORT=x: server.admin_port: expected a number, got 'x'",
      "--set classes.interactive.slo.ttft_ms=abc: classes.interactive.slo.ttft_ms: expected a number, got 'abc'",
    ])
    expect(problems(() => loadConfig(undefined, { upstreams: ['http://h:1', 'localhost:8000'] }))).toEqual([
      "--upstream localhost:8000: backends.pools[0].endpoints[1]: expected an http(s) URL, got 'localhost:8000'",
    ])
  })

  it('--engine sets the engine of the --upstream pool, and is refused without one', () => {
    const { config } = loadConfig(undefined, { upstreams: ['http://h:1'], engine: 'sglang' })
    expect(config.backends.pools[0]?.engine).toBe('sglang')
    expect(problems(() => loadConfig(undefined, { engine: 'sglang' }))[0]).toMatch(
      /^--engine sglang: sets the engine of the pool made from --upstream/,
    )
  })
})

describe('nearest', () => {
  it('counts a transposition as one edit and finds slips, not strangers', () => {
    expect(editDistance('admin_prot', 'admin_port')).toBe(1)
    expect(editDistance('kitten', 'sitting')).toBe(3)
    expect(nearest('admin_prot', ['host', 'port', 'admin_host', 'admin_port'])).toBe('admin_port')
    expect(nearest('nope', ['host', 'port', 'admin_host'])).toBeUndefined()
    expect(nearest('fallback', ['cap_max_tokens', 'fallback_model'])).toBe('fallback_model')
  })
})
