import { parseSimArgs, SIM_USAGE } from './cli-args.js'
import { startSimWith } from './start-sim.js'

/** Exit code of a replica's crash fault under the CLI (a dead server process). */
export const CRASH_EXIT_CODE = 1

/**
 * `slo-gateway sim ...`: starts the replicas, prints one line per replica, runs until SIGINT or
 * SIGTERM. Returns 0 after a clean stop, 1 when it cannot start, 2 on bad flags. Here the crash
 * fault exits the whole process (all its replicas), as a crashing model server would.
 */
export async function runSimCli(argv: string[]): Promise<number> {
  const parsed = parseSimArgs(argv)
  if (parsed.kind === 'help') {
    process.stdout.write(SIM_USAGE)
    return 0
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`slo-gateway sim: ${parsed.message}\n\n${SIM_USAGE}`)
    return 2
  }
  let handle: Awaited<ReturnType<typeof startSimWith>>
  try {
    handle = await startSimWith(parsed.opts, {
      onCrash: (r) => {
        process.stderr.write(`slo-gateway sim: ${r.name} crashed (fault injection); exiting\n`)
        process.exit(CRASH_EXIT_CODE)
      },
    })
  } catch (err) {
    process.stderr.write(`slo-gateway sim: ${err instanceof Error ? err.message : String(err)}\n`)
    return 1
  }
  const o = parsed.opts
  for (const r of handle.replicas) {
    process.stdout.write(
      `${r.name} listening on ${r.url} (profile ${o.profile ?? 'llama-3.1-8b-h100'}, model ${r.engine.profile.model}, metrics ${o.metricsFormat ?? 'vllm'}, time-scale ${o.timeScale ?? 1})\n`,
    )
  }
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  await handle.close()
  return 0
}
