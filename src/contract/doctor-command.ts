/**
 * `slo-gateway doctor [--config FILE] [--json] ...`: parses the flags, loads the config
 * (as serve does) and prints the report. Exit code 1 when a finding is an error.
 */
import { parseFlags, UsageError } from '../cli-flags.js'
import { loadConfig } from '../config/load.js'
import { loadWorkload } from '../loadgen/workload-load.js'
import { doctorExitCode, runDoctor } from './doctor.js'
import { doctorText } from './doctor-text.js'
import { typicalByClass } from './workload-classes.js'

export const DOCTOR_USAGE = `Usage: slo-gateway doctor [--config FILE] [--json] [options]

Judges a config against its engines: reads the config and, when the servers answer, each
endpoint's facts (/metrics: KV blocks and block size; /v1/models: max_model_len), and reports
each risky combination with its severity, its numbers, why it matters and the fix; then the
serving contract per pool and class (docs/contract.md). check-config is the syntax check;
doctor is the judgment.

Options:
  --config FILE              config file (default: config/gateway.yaml; env SLO_GATEWAY_CONFIG)
  --set PATH=VALUE           override a config value, as serve takes it; repeatable
  --json                     the report as JSON (stable; docs/contract.md)
  --offline                  do not contact the servers (config and profiles only)
  --profile NAME|FILE        the simulator profile whose step model and limits describe the
                             servers (default: the simulator's, or the one matching the model)
  --workload FILE            a bench workload: the typical prompt and output of each class
                             (default: 512 tokens in, 512 out)
  --max-request-share X      one request may hold at most this share of the KV cache (default 0.25)
  --timeout-ms N             how long to wait for each server (default 2000)
  -h, --help                 this help

Exit codes: 0 no error-level finding, 1 an error-level finding (or a bad config), 2 a usage error.
`

function positive(
  name: string,
  v: string | undefined,
  fallback: number,
  max = Number.POSITIVE_INFINITY,
): number {
  if (v === undefined) return fallback
  const n = Number(v)
  if (!Number.isFinite(n) || n <= 0 || n > max)
    throw new UsageError(`${name}: expected a number in (0, ${max}], got '${v}'`, DOCTOR_USAGE, 'doctor')
  return n
}

export async function doctorCommand(argv: string[]): Promise<number> {
  const { values } = parseFlags('doctor', DOCTOR_USAGE, argv, {
    config: { type: 'string' },
    set: { type: 'string', multiple: true },
    json: { type: 'boolean' },
    offline: { type: 'boolean' },
    profile: { type: 'string' },
    workload: { type: 'string' },
    'max-request-share': { type: 'string' },
    'timeout-ms': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  })
  if (values.help) {
    process.stdout.write(DOCTOR_USAGE)
    return 0
  }
  const maxRequestKvShare = positive('--max-request-share', values['max-request-share'], 0.25, 1)
  const timeoutMs = positive('--timeout-ms', values['timeout-ms'], 2000)
  const { config, file } = loadConfig(values.config, values.set ? { sets: values.set } : {}, process.env)
  const typical = values.workload === undefined ? undefined : typicalByClass(loadWorkload(values.workload))
  const report = await runDoctor(config, file, {
    offline: values.offline === true,
    profile: values.profile,
    timeoutMs,
    maxRequestKvShare,
    typical,
  })
  process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : doctorText(report))
  return doctorExitCode(report)
}
