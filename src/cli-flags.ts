/**
 * Command-line flags for the subcommands: node's parseArgs, with its errors turned into one
 * line naming the flag (and the nearest known one for a misspelling), then the command's usage.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { nearest } from './config/suggest.js'

/** A mistake on the command line: the message, then the usage of `command` (exit 2). */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
    /** The subcommand whose usage it is, named in the message. */
    readonly command?: string,
  ) {
    super(message)
  }
}

export type Options = NonNullable<ParseArgsConfig['options']>

/** parseArgs, with its errors turned into one line naming the flag, and the command's usage. */
export function parseFlags<O extends Options>(
  command: string,
  usage: string,
  args: string[],
  options: O,
  positionals = false,
) {
  try {
    return parseArgs({ args, options, allowPositionals: positionals, strict: true })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const named = /'([^']+)'/.exec((err as Error).message)?.[1] ?? ''
    const flag = named.split(' ')[0] ?? named
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const known = Object.keys(options).map((o) => `--${o}`)
      const near = nearest(flag, known)
      throw new UsageError(
        `unknown option '${flag}'${near === undefined ? '' : `: did you mean ${near}?`}`,
        usage,
        command,
      )
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
      throw new UsageError(`option '${flag}' needs a value`, usage, command)
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      throw new UsageError(`unexpected argument '${flag}'`, usage, command)
    throw err
  }
}
