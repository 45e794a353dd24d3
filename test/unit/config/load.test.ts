import { describe, expect, it } from 'vitest'
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../../src/config/load.js'
import { fixture, problems } from './helpers.js'

describe('loadConfig', () => {
  it('reports every mistake with the file, the path and what was expected', () => {
    const file = fixture('three-mistakes.yaml')
    const p = problems(() => loadConfig(file))
    expect(p).toEqual([
      `${file}: server.port: expected a number, got 'eighty'`,
      `${file}: backends.pools[0].endpoints[1]: expected an http(s) URL, got 'localhost'`,
      `${file}: backends.pools[0]: unknown key 'scrape_intervall_ms': did you mean 'scrape_interval_ms'?`,
    ])
  })

  it('loads the embedded default with its named defaults', () => {
    const { config, file } = loadConfig(undefined)
    expect(file).toBe(DEFAULT_CONFIG_FILE)
    expect(config.server.port).toBe(8080)
    expect(config.server.admin_port).toBe(9464)
    // /admin/state shows upstream URLs and the config: loopback unless opened
    expect(config.server.admin_host).toBe('127.0.0.1')
    expect(config.server.host).toBe('0.0.0.0')
    expect(config.server.body_limit_bytes).toBe(8 * 1024 * 1024)
    expect(config.server.shutdown_grace_ms).toBe(30_000)
    expect(config.classes.interactive?.slo.ttft_ms).toBe(500)
    expect(config.classes.batch?.max_kv_usage).toBe(0.7)
  })

  it('applies environment, flags and --set in that order, with YAML-typed values', () => {
    const { config } = loadConfig(
      undefined,
      {
        port: 9000,
        sets: ['server.body_limit_bytes=1024', 'classes.interactive.slo.ttft_ms=300', 'log.level=warn'],
      },
      { SLO_GATEWAY_PORT: '7000', SLO_GATEWAY_ADMIN_PORT: '7001' },
    )
    expect(config.server.port).toBe(9000)
    expect(config.server.admin_port).toBe(7001)
    expect(config.server.body_limit_bytes).toBe(1024)
    expect(config.classes.interactive?.slo).toEqual({ ttft_ms: 300, tpot_ms: 50 })
    expect(config.log.level).toBe('warn')
  })

  it('takes the admin token from SLO_GATEWAY_ADMIN_TOKEN, and refuses a short one without echoing it', () => {
    const token = 'a-long-enough-admin-token'
    expect(loadConfig(undefined, {}, { SLO_GATEWAY_ADMIN_TOKEN: token }).config.server.admin_token).toBe(
      token,
    )
    expect(loadConfig(undefined, {}, {}).config.server.admin_token).toBeUndefined()
    const msg = problems(() => loadConfig(undefined, {}, { SLO_GATEWAY_ADMIN_TOKEN: 'short-secret' })).join(
      '\n',
    )
    expect(msg).toContain('server.admin_token')
    expect(msg).toContain('at least 16 characters')
    expect(msg).not.toContain('short-secret')
  })

  it('takes the admin token or its digest, not both', () => {
    const digest = 'ab'.repeat(32)
    expect(
      loadConfig(undefined, { sets: [`server.admin_token_sha256=${digest}`] }).config.server
        .admin_token_sha256,
    ).toBe(digest)
    const msg = problems(() =>
      loadConfig(
        undefined,
        { sets: [`server.admin_token_sha256=${digest}`] },
        { SLO_GATEWAY_ADMIN_TOKEN: 'a-long-enough-admin-token' },
      ),
    ).join('\n')
    expect(msg).toContain('set either admin_token or admin_token_sha256')
  })

  it('turns --upstream (or SLO_GATEWAY_UPSTREAM) into one default pool and turns the simulator off', () => {
    const a = loadConfig(undefined, { upstreams: ['http://h1:8000', 'http://h2:8000'] }).config
    expect(a.simulator.enabled).toBe(false)
    expect(a.backends.pools).toHaveLength(1)
    expect(a.backends.pools[0]).toMatchObject({
      name: 'default',
      models: ['*'],
      endpoints: ['http://h1:8000', 'http://h2:8000'],
    })
    const b = loadConfig(undefined, {}, { SLO_GATEWAY_UPSTREAM: 'http://h3:8000,http://h4:8000' }).config
    expect(b.backends.pools[0]?.endpoints).toEqual(['http://h3:8000', 'http://h4:8000'])
  })

  it('sets list items by index, in both spellings', () => {
    const { config } = loadConfig(undefined, {
      upstreams: ['http://h1:8000'],
      sets: ['backends.pools[0].scrape_interval_ms=250', 'backends.pools.0.fail_open=true'],
    })
    expect(config.backends.pools[0]?.scrape_interval_ms).toBe(250)
    expect(config.backends.pools[0]?.fail_open).toBe(true)
  })

  it('rejects bad --set, unreadable files and a YAML syntax error clearly', () => {
    expect(problems(() => loadConfig(undefined, { sets: ['server.port'] }))[0]).toMatch(
      /--set server.port: expected path=value/,
    )
    expect(problems(() => loadConfig(undefined, { sets: ['server.nope=1'] }))[0]).toBe(
      "--set server.nope=1: server: unknown key 'nope' (server takes: host, port, admin_host, admin_port, probe_port, probe_stall_ms, admin_token, body_limit_bytes, shutdown_grace_ms, headers_timeout_ms, request_timeout_ms, max_connections, shed_event_loop_delay_ms, admin_token_sha256)",
    )
    expect(problems(() => loadConfig('/nonexistent.yaml'))[0]).toMatch(
      /nonexistent.yaml: cannot read the file \(ENOENT\)/,
    )
  })

  it('gives batch a floor of 0.05 and interactive none; refuses shares summing past 1', () => {
    const { config } = loadConfig(undefined)
    expect(config.classes.batch?.min_share).toBe(0.05)
    expect(config.classes.interactive?.min_share).toBe(0)
    expect(config.admission.min_share_window_ms).toBe(5_000)
    const bulk = ['priority=2', 'slo={}', 'max_kv_usage=0.5', 'reject_on_ttft=false', 'min_share=0.96']
    expect(problems(() => loadConfig(undefined, { sets: bulk.map((s) => `classes.bulk.${s}`) }))).toEqual([
      "--set classes.bulk.min_share=0.96: classes: the classes' min_share sum to 1.01 (batch 0.05, bulk 0.96): expected at most 1; lower them",
    ])
    const sets = ['classes.interactive.min_share=0.7', 'classes.batch.min_share=0.3']
    expect(loadConfig(undefined, { sets }).config.classes.batch?.min_share).toBe(0.3) // exactly 1 is fine
  })

  it('refuses admission.aging_ms, naming what replaced it', () => {
    expect(problems(() => loadConfig(undefined, { sets: ['admission.aging_ms=10000'] }))).toEqual([
      "--set admission.aging_ms=10000: admission: 'aging_ms' was replaced by classes.<name>.min_share, the share (0..1) of the prompt tokens a pool dispatches that a class gets while it has requests queued (batch: 0.05 by default); remove aging_ms",
    ])
  })

  it('refuses duplicate pool names, a model served twice and equal ports', () => {
    const p = problems(() =>
      loadConfig(undefined, {
        sets: [
          'simulator.enabled=false',
          'backends.pools=[{name: a, models: [m]}, {name: a, models: [m]}]',
          'server.admin_port=8080',
        ],
      }),
    )
    expect(p.join('\n')).toMatch(/backends.pools\[1\].name: duplicate pool name 'a'/)
    expect(p.join('\n')).toMatch(
      /backends.pools\[1\].models: model 'm' is already served by backends.pools\[0\]/,
    )
    expect(p.join('\n')).toMatch(/server.admin_port: must differ from server.port/)
  })

  it('merges a user class over the built-in of that name and adds new classes', () => {
    const { config } = loadConfig(undefined, {
      sets: [
        'classes.interactive.max_kv_usage=0.9',
        'classes.gold={priority: 0, slo: {ttft_ms: 200}, max_kv_usage: 0.85, reject_on_ttft: true}',
      ],
    })
    expect(config.classes.interactive?.max_kv_usage).toBe(0.9)
    expect(config.classes.interactive?.slo.ttft_ms).toBe(500)
    expect(config.classes.gold?.slo.ttft_ms).toBe(200)
    expect(Object.keys(config.classes).sort()).toEqual(['batch', 'gold', 'interactive'])
  })
})
