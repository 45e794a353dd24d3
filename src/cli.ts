#!/usr/bin/env node
/**
 * slo-gateway serve | check-config | doctor | plan | hash-key | sim | bench | help | --version
 *
 * Exit codes: 0 done, 1 a bad config or a failure (a port in use), 2 a usage error (an
 * unknown command or flag: the command's usage is printed).
 */
import { readFileSync } from 'node:fs'
import { parseFlags, UsageError } from './cli-flags.js'
import { ConfigError, type ConfigOverrides, loadConfig } from './config/load.js'
import { ENGINES } from './config/schema.js'
import { tuneGc } from './gc-tuning.js'
import { checkPorts, ListenError, listen } from './listeners.js'
import { createLogger } from './logger.js'
import { ConfigReloader } from './reload.js'
import { createRuntime } from './runtime.js'
import { hashKey } from './tenants/directory.js'

const USAGE = `slo-gateway: an SLO-aware admission-control gateway for OpenAI-compatible model servers

Usage:
  slo-gateway serve [options]          run the gateway
  slo-gateway check-config FILE        validate a config file and print every problem
  slo-gateway doctor [--config FILE] [--json]
                                       judge a config against its engines: risky settings, with
                                       the numbers, why and the fix; the serving contract
  slo-gateway plan --profile P --workload W [--target-rate R] [--gpu-cost-per-hour C]
                                       max goodput per replica, replicas and cost, from the
                                       simulator in virtual time, with and without admission
  slo-gateway hash-key [KEY]           the SHA-256 hex of an API key (or of stdin), for tenants[].api_keys
  slo-gateway sim [options]            run the built-in model-server simulator
  slo-gateway bench --target URL --workload FILE [--rate R | --concurrency C]
                    [--duration S | --requests N] [--seed N] [--out DIR]
                                       measure a server (or the gateway) with a workload: TTFT, TPOT,
                                       goodput and SLO attainment per class
  slo-gateway <command> --help         options of one command
  slo-gateway --version                the version
`

const SERVE_USAGE = `Usage: slo-gateway serve [options]

Options:
  --config FILE        config file (default: config/gateway.yaml; env SLO_GATEWAY_CONFIG)
  --port N             public port (default 8080; env SLO_GATEWAY_PORT)
  --admin-port N       admin port for /metrics, /healthz, /readyz, /admin/state (default 9464;
                       env SLO_GATEWAY_ADMIN_PORT). It listens on 127.0.0.1 unless
                       --set server.admin_host=0.0.0.0 (e.g. for Prometheus in a cluster)
                       --set server.probe_port=N serves /healthz and /readyz from a thread of
                       their own as well, answering while a flood keeps the event loop behind
  --upstream URL       a model server; repeat for several. Replaces the configured pools with one
                       pool 'default' serving every model (env SLO_GATEWAY_UPSTREAM, comma-separated)
  --engine NAME        the engine of the --upstream servers, whose /metrics the gateway reads:
                       ${ENGINES.join(', ')} (default vllm; env SLO_GATEWAY_ENGINE)
  --set PATH=VALUE     override any config value, e.g. --set server.body_limit_bytes=1048576
                       or --set 'classes.interactive.slo.ttft_ms=300'; repeatable
  -h, --help           this help

Tenants (auth, tenants: keys, limits, classes, weights) reload without a restart when the
config file changes or on SIGHUP; a file with errors is refused and the running config stays.
`

const CHECK_USAGE = `Usage: slo-gateway check-config FILE [--set PATH=VALUE ...]

Validates FILE against the schema (docs/config.md) and the checks of what would fail at run
time (no pool, a pool without servers, a fallback model no pool serves), and prints every
problem with its path, in file order. Exits 0 when the config is valid, 1 otherwise.
`

const HASH_USAGE = `Usage: slo-gateway hash-key [KEY]

Prints the SHA-256 hex digest of KEY, or of standard input when no KEY is given (one
trailing newline dropped, so \`echo "$KEY" | slo-gateway hash-key\` works), for a tenant's
api_keys in the config. Reading stdin keeps the key out of the shell history and ps.
`

function version(): string {
  // package.json is one level above both src/cli.ts and dist/cli.js
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version?: unknown
  }
  return String(pkg.version)
}

function intFlag(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  if (!/^\d+$/.test(v))
    throw new UsageError(`${name}: expected a port number, got '${v}'`, SERVE_USAGE, 'serve')
  return Number(v)
}

async function serve(argv: string[]): Promise<number> {
  const { values } = parseFlags('serve', SERVE_USAGE, argv, {
    config: { type: 'string' },
    port: { type: 'string' },
    'admin-port': { type: 'string' },
    upstream: { type: 'string', multiple: true },
    engine: { type: 'string' },
    set: { type: 'string', multiple: true },
    help: { type: 'boolean', short: 'h' },
  })
  if (values.help) {
    process.stdout.write(SERVE_USAGE)
    return 0
  }
  const overrides: ConfigOverrides = {
    ...(values.upstream ? { upstreams: values.upstream } : {}),
    ...(values.engine !== undefined ? { engine: values.engine } : {}),
    ...(values.set ? { sets: values.set } : {}),
  }
  const port = intFlag('--port', values.port)
  const adminPort = intFlag('--admin-port', values['admin-port'])
  if (port !== undefined) overrides.port = port
  if (adminPort !== undefined) overrides.adminPort = adminPort
  const { config, file, notes } = loadConfig(values.config, overrides, process.env)
  const logger = createLogger(config.log.level)
  for (const note of notes) logger.info({ config: file }, note)
  const gcFlag = tuneGc()
  if (gcFlag !== undefined)
    logger.info(
      { v8: gcFlag },
      'fewer than two cores: the young generation is scavenged on the main thread alone',
    )
  // before the simulator starts: a port in use is one line, not a simulator started for nothing
  await checkPorts(config.server)
  const runtime = await createRuntime(config, logger)
  let running: Awaited<ReturnType<typeof listen>>
  try {
    running = await listen(runtime.apps, { onClose: () => runtime.close() })
  } catch (err) {
    await runtime.close()
    throw err
  }
  const reloader = new ConfigReloader({
    target: runtime,
    load: () => loadConfig(values.config, overrides, process.env).config,
    file,
    logger,
    registry: runtime.registry,
  })
  reloader.watch()
  const onHup = () => reloader.reload('SIGHUP')
  process.on('SIGHUP', onHup)
  const { server } = runtime.config
  logger.info(
    {
      config: file,
      port: running.port,
      adminPort: running.adminPort,
      adminHost: server.admin_host,
      ...(running.probePort !== undefined ? { probePort: running.probePort } : {}),
      pools: runtime.config.backends.pools.length,
    },
    `slo-gateway listening on ${server.host}:${running.port} (admin ${server.admin_host}:${running.adminPort}${running.probePort !== undefined ? `, probes ${server.admin_host}:${running.probePort}` : ''})`,
  )
  return new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal, inflight: runtime.apps.pipeline.inFlight }, 'shutting down')
      reloader.close()
      process.off('SIGHUP', onHup)
      running.shutdown().then(
        (clean) => resolve(clean ? 0 : 1),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed')
          resolve(1)
        },
      )
    }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
}

function checkConfig(argv: string[]): number {
  const { values, positionals } = parseFlags(
    'check-config',
    CHECK_USAGE,
    argv,
    { set: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
    true,
  )
  if (values.help) {
    process.stdout.write(CHECK_USAGE)
    return 0
  }
  const file = positionals[0]
  if (file === undefined || positionals.length > 1)
    throw new UsageError('check-config takes exactly one FILE', CHECK_USAGE, 'check-config')
  const { config, notes } = loadConfig(file, values.set ? { sets: values.set } : {})
  for (const note of notes) process.stdout.write(`${note}\n`)
  process.stdout.write(
    `${file}: ok (${config.backends.pools.length} pool(s), classes: ${Object.keys(config.classes).join(', ')})\n`,
  )
  return 0
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

async function hashKeyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    'hash-key',
    HASH_USAGE,
    argv,
    { help: { type: 'boolean', short: 'h' } },
    true,
  )
  if (values.help) {
    process.stdout.write(HASH_USAGE)
    return 0
  }
  if (positionals.length > 1) throw new UsageError('hash-key takes at most one KEY', HASH_USAGE, 'hash-key')
  const key = positionals[0] ?? (await readStdin()).replace(/\r?\n$/, '')
  if (key === '') throw new UsageError('the key is empty', HASH_USAGE, 'hash-key')
  process.stdout.write(`${hashKey(key)}\n`)
  return 0
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case 'serve':
        return await serve(rest)
      case 'check-config':
        return checkConfig(rest)
      case 'hash-key':
        return await hashKeyCommand(rest)
      case 'doctor': {
        const { doctorCommand } = await import('./contract/doctor-command.js')
        return await doctorCommand(rest)
      }
      case 'plan': {
        const { planCommand } = await import('./contract/plan/plan-command.js')
        return await planCommand(rest)
      }
      case 'sim': {
        const { runSimCli } = await import('./sim/index.js')
        return await runSimCli(rest)
      }
      case 'bench': {
        const { BENCH_USAGE, parseBenchArgs, runBenchCommand } = await import('./loadgen/index.js')
        const opts = parseBenchArgs(rest)
        if (opts === 'help') {
          process.stdout.write(BENCH_USAGE)
          return 0
        }
        return await runBenchCommand(opts)
      }
      case '--version':
      case '-v':
      case 'version':
        process.stdout.write(`${version()}\n`)
        return 0
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE)
        return command === undefined ? 2 : 0
      default:
        throw new UsageError(`unknown command '${command}'`, USAGE)
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`slo-gateway: ${err.message}\n`)
      return 1
    }
    if (err instanceof Error && (err.name === 'ProfileError' || err.name === 'PlanError')) {
      process.stderr.write(`slo-gateway ${command}: ${err.message}\n`)
      return 1
    }
    if (err instanceof Error && (err.name === 'WorkloadError' || err.name === 'BenchError')) {
      process.stderr.write(`slo-gateway ${command}: ${err.message}\n`)
      return 1
    }
    if (err instanceof ListenError) {
      process.stderr.write(`slo-gateway: ${err.message}\n`)
      return 1
    }
    if (err instanceof UsageError) {
      const who = err.command === undefined ? 'slo-gateway' : `slo-gateway ${err.command}`
      process.stderr.write(`${who}: ${err.message}\n\n${err.usage}`)
      return 2
    }
    process.stderr.write(`slo-gateway: ${(err as Error).stack ?? String(err)}\n`)
    return 1
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`slo-gateway: ${String(err)}\n`)
    process.exitCode = 1
  },
)
