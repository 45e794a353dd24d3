/**
 * The peer proxies come from Debian's packages: found on the PATH (or /usr/sbin), else installed
 * with apt-get when the bench runs as root on a Debian-like machine, else a clear error saying
 * how to install them.
 */
import { execFileSync } from 'node:child_process'
import { which } from './processes.js'

const PACKAGE: Record<string, string> = { nginx: 'nginx', haproxy: 'haproxy' }

function aptInstall(pkg: string): void {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg], { env, stdio: 'pipe' })
  try {
    install()
  } catch {
    // a fresh machine has no package lists yet
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: 'pipe' })
    install()
  }
}

/** The binary's path; installs its package when it is missing and that is possible. */
export function ensureBinary(bin: string): string {
  const found = which(bin)
  if (found !== undefined) return found
  const pkg = PACKAGE[bin] ?? bin
  const root = process.getuid?.() === 0
  if (!root || which('apt-get') === undefined)
    throw new Error(`${bin} not found; install it (apt-get install ${pkg}) and run again`)
  try {
    aptInstall(pkg)
  } catch (err) {
    const out = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message)
    throw new Error(`${bin} not found and apt-get install ${pkg} failed: ${out.trim().split('\n').at(-1)}`)
  }
  const installed = which(bin)
  if (installed === undefined) throw new Error(`${bin} still not found after apt-get install ${pkg}`)
  return installed
}
