/**
 * Starts one of the admission bench's child processes (bench/admission-child.ts under tsx)
 * and waits for the line that says where it listens.
 */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { READY_PREFIX } from './admission-child.js'
import { type Child, start } from './processes.js'

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'admission-child.ts')
// tsx's loader as a file URL, found from here (bench/node_modules or the root's, where npm
// workspaces hoist it), so the child finds it whatever its working directory
const TSX = import.meta.resolve('tsx')

/** Node's flags that profile a child's CPU into `dir` (none without a dir). */
export const cpuProfFlags = (dir: string | undefined): string[] =>
  dir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', dir]

/** `stopping()` true: the bench stops it itself, so its exit is not news. */
export async function spawnChild(
  name: string,
  args: readonly string[],
  log: (s: string) => void,
  stopping: () => boolean,
  nodeFlags: readonly string[] = [],
): Promise<{ child: Child; info: Record<string, string> }> {
  const child = start(name, process.execPath, [...nodeFlags, '--import', TSX, CHILD, ...args])
  const info = await new Promise<Record<string, string>>((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`${name} not ready in 60 s:\n${child.output()}`)), 60_000)
    child.proc.stdout?.on('data', (b: Buffer) => {
      buf += b.toString()
      const line = buf.split('\n').find((l) => l.startsWith(READY_PREFIX))
      if (line !== undefined) {
        clearTimeout(timer)
        resolve(JSON.parse(line.slice(READY_PREFIX.length)) as Record<string, string>)
      }
    })
    child.proc.once('exit', (code, signal) => {
      clearTimeout(timer)
      const msg = `${name} exited (${code ?? signal}):\n${child.output()}`
      reject(new Error(msg))
      if (!stopping()) log(msg) // after it was ready: say so at once, the runs will show errors
    })
  })
  return { child, info }
}
