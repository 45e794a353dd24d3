import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { METRIC_FORMAT_NAMES, type MetricFormatName } from '../../../src/sim/metric-format.js'
import { getMetricFormat } from '../../../src/sim/metric-format-registry.js'
import { renderSimOwnMetrics } from '../../../src/sim/sim-own-metrics.js'
import { drive, promValue, testProfile } from './helpers.js'

function hasPromtool(): boolean {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Names the issue requires per format (plus the one every format must carry for KV usage). */
const REQUIRED: Record<MetricFormatName, readonly string[]> = {
  vllm: [
    'vllm:num_requests_running',
    'vllm:num_requests_waiting',
    'vllm:kv_cache_usage_perc',
    'vllm:num_preemptions_total',
    'vllm:prompt_tokens_total',
    'vllm:generation_tokens_total',
    'vllm:request_success_total',
    'vllm:prefix_cache_queries_total',
    'vllm:prefix_cache_hits_total',
    'vllm:cache_config_info',
    'vllm:time_to_first_token_seconds',
    'vllm:inter_token_latency_seconds',
    'vllm:e2e_request_latency_seconds',
    'vllm:request_queue_time_seconds',
  ],
  'vllm-v0': ['vllm:gpu_cache_usage_perc', 'vllm:num_requests_running', 'vllm:num_requests_waiting'],
  sglang: ['sglang:num_queue_reqs', 'sglang:num_running_reqs', 'sglang:token_usage'],
  tgi: ['tgi_queue_size', 'tgi_batch_current_size'],
  llamacpp: ['llamacpp:requests_processing', 'llamacpp:requests_deferred'],
  trtllm: ['trtllm_num_requests_waiting', 'trtllm_num_requests_running', 'trtllm_kv_cache_utilization'],
}

/**
 * promtool's linter also flags naming conventions the real engines break (":" in names, TGI's
 * counters without _total, vLLM's iteration_tokens_total histogram). Those are faithful, not errors;
 * anything else, and any parse error, fails.
 */
const ACCEPTED_LINT = [
  /metric names should not contain ':'/,
  /non-counter metrics should not have "_total" suffix/,
  /counter metrics should have "_total" suffix/,
  /non-histogram and non-summary metrics should not have "_count" suffix/,
]

function renderBusy(name: MetricFormatName): string {
  const format = getMetricFormat(name)
  const p = testProfile({ num_gpu_blocks: 24, max_model_len: 256, enable_prefix_caching: true })
  const d = drive(p, format.buckets(p))
  for (let i = 0; i < 10; i++) d.add(40 + i, 40, { hashes: ['p', `q${i}`] })
  d.run(60) // mid-run: running, waiting, preemptions and finished requests all present
  if (d.engine.numRunning === 0 || d.engine.stats.preemptions === 0 || d.engine.stats.finished.length === 0) {
    throw new Error('renderBusy: the engine is not in the mixed state the test needs')
  }
  const view = { modelName: 'meta-llama/Llama-3.1-8B-Instruct', engine: d.engine, nowMs: d.now }
  return (
    format.render(view) +
    renderSimOwnMetrics(d.engine, { replica: 'sim-0', profile: 'test', metricsFormat: name, timeScale: 1 })
  )
}

describe.each(METRIC_FORMAT_NAMES.map((n) => [n]))('metrics format %s', (name) => {
  const text = renderBusy(name)

  it('carries the required metric names, each with HELP and TYPE', () => {
    for (const metric of REQUIRED[name]) {
      expect(text).toContain(`# TYPE ${metric} `)
      expect(text).toContain(`# HELP ${metric} `)
    }
    expect(text).toContain('# TYPE sim_step_lag_seconds histogram')
  })

  // promtool is a test dependency (Debian: apt-get install prometheus; .ci/run installs it)
  it('is valid Prometheus text (promtool check metrics)', () => {
    expect(hasPromtool(), 'promtool not found: apt-get install prometheus').toBe(true)
    let out = ''
    let status = 0
    try {
      out = execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: 'pipe' })
    } catch (e) {
      const err = e as { status?: number; stdout?: string; stderr?: string }
      status = err.status ?? -1
      out = `${err.stdout ?? ''}${err.stderr ?? ''}`
    }
    expect(out).not.toMatch(/error while linting|parsing error/)
    expect([0, 3]).toContain(status) // 1 = cannot parse, 3 = lint findings only
    const findings = out.split('\n').filter((l) => l.trim() !== '')
    const unexpected = findings.filter((l) => !ACCEPTED_LINT.some((re) => re.test(l)))
    expect(unexpected).toEqual([])
  })
})

describe('vllm format details', () => {
  it("uses vLLM's labels (model_name, engine) and bucket bounds", () => {
    const text = renderBusy('vllm')
    expect(text).toContain(
      'vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0"}',
    )
    const ttftLe = [...text.matchAll(/vllm:time_to_first_token_seconds_bucket\{[^}]*le="([^"]+)"/g)].map(
      (m) => m[1],
    )
    expect(ttftLe).toEqual([
      '0.001',
      '0.005',
      '0.01',
      '0.02',
      '0.04',
      '0.06',
      '0.08',
      '0.1',
      '0.25',
      '0.5',
      '0.75',
      '1.0',
      '2.5',
      '5.0',
      '7.5',
      '10.0',
      '20.0',
      '40.0',
      '80.0',
      '160.0',
      '640.0',
      '2560.0',
      '+Inf',
    ])
    expect(text).toMatch(/vllm:request_success_total\{[^}]*finished_reason="length"\} /)
    expect(promValue(text, 'vllm:num_preemptions_total')).toBeGreaterThanOrEqual(0)
  })
})
