import { parseFaultSpec } from './fault-spec.js'
import { METRIC_FORMAT_NAMES } from './metric-format.js'
import { isMetricFormatName } from './metric-format-registry.js'
import type { SimOptions } from './sim-options.js'

export const SIM_USAGE = `Usage: slo-gateway sim [options]

Runs a simulated OpenAI-compatible model server (vLLM-like continuous batching, KV cache,
preemption, /metrics) on one or more consecutive ports, until SIGINT or SIGTERM.

Options:
  --profile NAME|FILE     profile in config/sim-profiles/ or a YAML file (default llama-3.1-8b-h100)
  --port N                first port; replica i listens on N+i; 0 = ephemeral ports (default 8000)
  --host HOST             listen address (default 127.0.0.1)
  --replicas N            number of replicas (default 1)
  --time-scale X          wall-clock multiplier; 4 = everything 4x slower (default 1)
  --metrics-format F      ${METRIC_FORMAT_NAMES.join(' | ')} (default vllm)
  --seed N                seed for output lengths and error faults (default 1)
  --model NAME            served model name (default: the profile's model)
  --fault JSON            initial faults, e.g. '{"errorRate":0.1,"errorStatus":503}'
  -h, --help              show this help
`

export type CliParse =
  | { readonly kind: 'help' }
  | { readonly kind: 'run'; readonly opts: SimOptions }
  | { readonly kind: 'error'; readonly message: string }

const VALUE_FLAGS = new Set([
  'profile',
  'port',
  'host',
  'replicas',
  'time-scale',
  'metrics-format',
  'seed',
  'model',
  'fault',
])

/** Parses the flags of `slo-gateway sim` (a leading "sim" is skipped). */
export function parseSimArgs(argv: readonly string[]): CliParse {
  const args = argv[0] === 'sim' ? argv.slice(1) : argv
  const opts: SimOptions = {}
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === '-h' || a === '--help') return { kind: 'help' }
    if (!a.startsWith('--')) return { kind: 'error', message: `unexpected argument "${a}"` }
    const eq = a.indexOf('=')
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq)
    if (!VALUE_FLAGS.has(name)) return { kind: 'error', message: `unknown option --${name}` }
    let value: string | undefined
    if (eq !== -1) value = a.slice(eq + 1)
    else {
      value = args[i + 1]
      i++
    }
    if (value === undefined) return { kind: 'error', message: `--${name} needs a value` }
    const err = setOption(opts, name, value)
    if (err !== null) return { kind: 'error', message: `--${name}: ${err}` }
  }
  return { kind: 'run', opts }
}

function setOption(o: SimOptions, name: string, v: string): string | null {
  const int = (min: number, max: number): number | string => {
    const n = Number(v)
    return /^-?\d+$/.test(v.trim()) && n >= min && n <= max
      ? n
      : `expected an integer ${min}..${max}, got "${v}"`
  }
  switch (name) {
    case 'profile':
    case 'host':
    case 'model':
      if (v === '') return 'must not be empty'
      if (name === 'profile') o.profile = v
      else if (name === 'host') o.host = v
      else o.modelName = v
      return null
    case 'port': {
      const n = int(0, 65535)
      if (typeof n === 'string') return n
      o.port = n
      return null
    }
    case 'replicas': {
      const n = int(1, 64)
      if (typeof n === 'string') return n
      o.replicas = n
      return null
    }
    case 'seed': {
      const n = int(-2147483648, 4294967295)
      if (typeof n === 'string') return n
      o.seed = n
      return null
    }
    case 'time-scale': {
      const n = Number(v)
      if (v.trim() === '' || !Number.isFinite(n) || n <= 0) return `expected a number > 0, got "${v}"`
      o.timeScale = n
      return null
    }
    case 'metrics-format':
      if (!isMetricFormatName(v)) return `expected one of ${METRIC_FORMAT_NAMES.join(', ')}, got "${v}"`
      o.metricsFormat = v
      return null
    case 'fault': {
      let raw: unknown
      try {
        raw = JSON.parse(v)
      } catch {
        return `not valid JSON: ${v}`
      }
      const f = parseFaultSpec(raw)
      if (!f.ok) return f.message
      o.faults = f.spec
      return null
    }
    default:
      return 'unknown option'
  }
}
