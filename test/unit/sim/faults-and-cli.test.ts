import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.js'
import { parseSimArgs } from '../../../src/sim/cli-args.js'
import { parseFaultSpec } from '../../../src/sim/fault-spec.js'
import { FaultState } from '../../../src/sim/fault-state.js'
import { Rng } from '../../../src/sim/rng.js'

describe('fault spec', () => {
  it('accepts every documented field', () => {
    const r = parseFaultSpec({
      errorRate: 0.5,
      errorStatus: 503,
      hang: false,
      slowdown: 2,
      crashAfter: 3,
      crash: false,
      metrics: 'stale',
      startupDelayMs: 100,
    })
    expect(r.ok).toBe(true)
  })

  it.each([
    [{ errorRate: 2 }, 'errorRate'],
    [{ errorStatus: 404 }, 'errorStatus'],
    [{ slowdown: 0 }, 'slowdown'],
    [{ crashAfter: 1.5 }, 'crashAfter'],
    [{ metrics: 'broken' }, 'metrics'],
    [{ bogus: 1 }, 'bogus'],
    [[1], '(body)'],
  ])('rejects %j naming %s', (raw, field) => {
    const r = parseFaultSpec(raw)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.message).toContain(field)
  })
})

describe('FaultState', () => {
  it('is not ready during the startup delay, counted from when it is applied', () => {
    const clock = new ManualClock()
    const f = new FaultState(clock, new Rng(1))
    f.apply({ startupDelayMs: 50 })
    expect(f.ready).toBe(false)
    expect(f.admit().kind).toBe('not-ready')
    clock.advance(50)
    expect(f.ready).toBe(true)
    expect(f.admit().kind).toBe('serve')
  })

  it('crashes on request N+1 after crashAfter N', () => {
    const f = new FaultState(new ManualClock(), new Rng(1))
    f.apply({ crashAfter: 2 })
    expect([f.admit().kind, f.admit().kind, f.admit().kind]).toEqual(['serve', 'serve', 'crash'])
  })

  it('fails about errorRate of requests, deterministically per seed', () => {
    const run = () => {
      const f = new FaultState(new ManualClock(), new Rng(7))
      f.apply({ errorRate: 0.25, errorStatus: 503 })
      return Array.from({ length: 2000 }, () => f.admit())
    }
    const a = run()
    const errors = a.filter((x) => x.kind === 'error')
    expect(errors.length / a.length).toBeGreaterThan(0.2)
    expect(errors.length / a.length).toBeLessThan(0.3)
    expect(errors[0]).toEqual({ kind: 'error', status: 503 })
    expect(run().map((x) => x.kind)).toEqual(a.map((x) => x.kind))
  })
})

describe('sim CLI flags', () => {
  it('parses every flag, in both --flag value and --flag=value forms', () => {
    const r = parseSimArgs([
      'sim',
      '--profile',
      'tiny',
      '--port=0',
      '--replicas',
      '2',
      '--time-scale',
      '4',
      '--metrics-format',
      'sglang',
      '--seed',
      '9',
      '--model',
      'my-model',
      '--host',
      '0.0.0.0',
      '--fault',
      '{"errorRate":0.1}',
    ])
    expect(r).toEqual({
      kind: 'run',
      opts: {
        profile: 'tiny',
        port: 0,
        replicas: 2,
        timeScale: 4,
        metricsFormat: 'sglang',
        seed: 9,
        modelName: 'my-model',
        host: '0.0.0.0',
        faults: { errorRate: 0.1 },
      },
    })
  })

  it.each([
    [['--bogus'], 'unknown option --bogus'],
    [['--port', 'abc'], '--port'],
    [['--port'], 'needs a value'],
    [['--replicas', '0'], '--replicas'],
    [['--time-scale', '-1'], '--time-scale'],
    [['--metrics-format', 'x'], '--metrics-format'],
    [['--fault', '{nope'], 'not valid JSON'],
    [['--fault', '{"errorRate":3}'], 'errorRate'],
    [['stray'], 'unexpected argument'],
  ])('rejects %j with a clear message', (argv, text) => {
    const r = parseSimArgs(argv)
    expect(r.kind).toBe('error')
    if (r.kind === 'error') expect(r.message).toContain(text)
  })

  it('recognises --help', () => {
    expect(parseSimArgs(['--help']).kind).toBe('help')
    expect(parseSimArgs(['-h']).kind).toBe('help')
  })
})
