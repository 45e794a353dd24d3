#!/usr/bin/env node
/**
 * slo-gateway serve | check-config | sim | help
 */
import { parseArgs } from 'node:util'
import { ConfigError, type ConfigOverrides, loadConfig } from './config/load.js'
import { listen } from './listeners.js'
import { createLogger } from './logger.js'
import { createRuntime } from './runtime.js'

const USAGE = `slo-gateway: an SLO-aware admission-control gateway for OpenAI-compatible model servers

Usage:
  slo-gateway serve [options]          run the gateway
  slo-gateway check-config FILE        validate a config file and print every problem
  slo-gateway sim [options]            run the built-in model-server simulator
  slo-gateway <command> --help         options of one command
`

const SERVE_USAGE = `Usage: slo-gateway serve [options]

Options:
  --config FILE        config file (default: config/gateway.yaml; env SLO_GATEWAY_CONFIG)
  --port N             public port (default 8080; env SLO_GATEWAY_PORT)
  --admin-port N       admin port for /metrics, /healthz, /readyz (default 9464; env SLO_GATEWAY_ADMIN_PORT)
  --upstream URL       a model server; repeat for several. Replaces the configured pools with one
                       pool 'default' serving every model (env SLO_GATEWAY_UPSTREAM, comma-separated)
  --set PATH=VALUE     override any config value, e.g. --set server.body_limit_bytes=1048576
                       or --set 'classes.interactive.slo.ttft_ms=300'; repeatable
  -h, --help           this help
`

const CHECK_USAGE = `Usage: slo-gateway check-config FILE [--set PATH=VALUE ...]

Validates FILE against the schema (docs/config.md) and prints every problem with its path.
Exits 0 when the config is valid, 1 otherwise.
`

function intFlag(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  if (!/^\d+$/.test(v)) throw new UsageError(`${name}: expected a port number, got '${v}'`)
  return Number(v)
}

class UsageError extends Error {}

async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      'admin-port': { type: 'string' },
      upstream: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) {
    process.stdout.write(SERVE_USAGE)
    return 0
  }
  const overrides: ConfigOverrides = {
    ...(values.upstream ? { upstreams: values.upstream } : {}),
    ...(values.set ? { sets: values.set } : {}),
  }
  const port = intFlag('--port', values.port)
  const adminPort = intFlag('--admin-port', values['admin-port'])
  if (port !== undefined) overrides.port = port
  if (adminPort !== undefined) overrides.adminPort = adminPort
  const { config, file } = loadConfig(values.config, overrides, process.env)
  const logger = createLogger(config.log.level)
  const runtime = await createRuntime(config, logger)
  let running: Awaited<ReturnType<typeof listen>>
  try {
    running = await listen(runtime.apps, { onClose: () => runtime.close() })
  } catch (err) {
    await runtime.close()
    throw err
  }
  logger.info(
    {
      config: file,
      port: running.port,
      adminPort: running.adminPort,
      pools: runtime.config.backends.pools.length,
    },
    `slo-gateway listening on :${running.port} (admin :${running.adminPort})`,
  )
  return new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal, inflight: runtime.apps.pipeline.inFlight }, 'shutting down')
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
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { set: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
  })
  if (values.help) {
    process.stdout.write(CHECK_USAGE)
    return 0
  }
  const file = positionals[0]
  if (file === undefined || positionals.length > 1)
    throw new UsageError('check-config takes exactly one FILE')
  const { config } = loadConfig(file, values.set ? { sets: values.set } : {})
  process.stdout.write(
    `${file}: ok (${config.backends.pools.length} pool(s), classes: ${Object.keys(config.classes).join(', ')})\n`,
  )
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
      case 'sim': {
        const { runSimCli } = await import('./sim/index.js')
        return await runSimCli(rest)
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE)
        return command === undefined ? 2 : 0
      default:
        throw new UsageError(`unknown command '${command}'`)
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`slo-gateway: ${err.message}\n`)
      return 1
    }
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`slo-gateway: ${(err as Error).message}\n\n${USAGE}`)
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
