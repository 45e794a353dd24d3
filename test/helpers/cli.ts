/**
 * Runs the real CLI in a child process (through tsx, so no build is needed), with its
 * output collected and its JSON log lines parsed.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'

const ROOT = join(import.meta.dirname, '..', '..')

export interface CliProcess {
  readonly child: ChildProcess
  stdout: string
  stderr: string
  readonly exited: Promise<number | null>
  /** Resolves with the first JSON log line for which `match` is true. */
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>
}

export function runCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const proc: CliProcess = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    waitForLog: (match, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching log line; stdout:\n${proc.stdout}\nstderr:\n${proc.stderr}`)),
          timeoutMs,
        )
        const check = () => {
          for (const line of proc.stdout.split('\n')) {
            if (!line.startsWith('{')) continue
            const parsed = JSON.parse(line) as Record<string, unknown>
            if (match(parsed)) {
              clearTimeout(timer)
              child.stdout?.off('data', check)
              resolve(parsed)
              return
            }
          }
        }
        child.stdout?.on('data', check)
        check()
      }),
  }
  child.stdout?.on('data', (c: Buffer) => {
    proc.stdout += c.toString()
  })
  child.stderr?.on('data', (c: Buffer) => {
    proc.stderr += c.toString()
  })
  return proc
}
