#!/usr/bin/env node
/**
 * Run first by `npm test`: the system programs the tests need, present or installed.
 *
 * - promtool (Debian package `prometheus`): the e2e tests check /metrics and the alert rules.
 * - redis-server (Debian package `redis-server`): the limiter stores' integration tests.
 * - chromium (Debian package `chromium`): the dashboard's test loads /dashboard in it, headless.
 * - haproxy (Debian package `haproxy`): the bench's HAProxy yardstick config is checked by it (`haproxy -c`).
 * - kubectl with kustomize v5 (kubectl 1.27+; Debian package `kubernetes-client` where the
 *   release ships one that new): the deploy tests build deploy/k8s (kustomize-tool.mjs).
 *   Debian bookworm's is kubectl 1.20, too old: then it says what to install instead.
 *
 * All present: silent, a few milliseconds. Some missing: installed with apt-get when this
 * process may (root, or passwordless sudo) and apt-get exists, with one progress line;
 * otherwise it stops at once (exit 1) and prints the command to run.
 */
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { debianKubectlCandidate, findKustomize, MIN_KUBECTL_MINOR } from './kustomize-tool.mjs'

/** program on PATH -> the Debian package that provides it */
const NEEDED = [
  { program: 'promtool', debian: 'prometheus' },
  { program: 'redis-server', debian: 'redis-server' },
  { program: 'chromium', debian: 'chromium' },
  { program: 'haproxy', debian: 'haproxy' },
]

const say = (line) => process.stderr.write(`test-prereqs: ${line}\n`)

function onPath(program) {
  const exts = process.platform === 'win32' ? (process.env.PATHEXT ?? '.EXE').split(';') : ['']
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    for (const ext of exts) {
      try {
        accessSync(join(dir, program + ext), constants.X_OK)
        return true
      } catch {}
    }
  }
  return false
}

/** The prefix that makes apt-get run as root, or undefined when this process may not. */
function asRoot() {
  if (process.getuid?.() === 0) return []
  if (onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0)
    return ['sudo', '-n']
  return undefined
}

function run(argv) {
  const [cmd, ...args] = argv
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  if (r.status !== 0) {
    process.stderr.write(`${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? `${r.error.message}\n` : ''}`)
    say(`failed: ${argv.join(' ')}`)
    process.exit(1)
  }
}

const missing = NEEDED.filter((n) => !onPath(n.program))
const kustomizeProblem = () => {
  const k = findKustomize()
  return 'problem' in k ? k.problem : undefined
}
if (missing.length === 0 && kustomizeProblem() === undefined) process.exit(0)

const hasApt = onPath('apt-get')
const prefix = hasApt ? asRoot() : undefined
const env = prefix !== undefined && prefix.length > 0 ? ['env', 'DEBIAN_FRONTEND=noninteractive'] : []

// kubectl from Debian only when that release's is new enough for the overlays (bookworm's is
// 1.20): the lists may be empty on a fresh machine, so update them before deciding
const debianKubectlWorks = () => {
  const c = debianKubectlCandidate()
  return c !== undefined && (c[0] > 1 || c[1] >= MIN_KUBECTL_MINOR)
}
let updated = false
if (kustomizeProblem() !== undefined && !onPath('kubectl') && hasApt) {
  if (prefix !== undefined && !debianKubectlWorks()) {
    say('looking for a kubectl in apt (apt-get update) ...')
    run([...prefix, ...env, 'apt-get', 'update', '-qq'])
    updated = true
  }
  if (debianKubectlWorks()) missing.push({ program: 'kubectl', debian: 'kubernetes-client' })
}
if (missing.length === 0) {
  const c = hasApt ? debianKubectlCandidate() : undefined
  const debian =
    c === undefined ? '' : ` (Debian's kubernetes-client here is kubectl ${c.join('.')}: too old)`
  say(`${kustomizeProblem()}${debian}`)
  process.exit(1)
}

const programs = missing.map((n) => n.program).join(', ')
const packages = missing.map((n) => n.debian)

if (prefix === undefined) {
  say(`the tests need ${programs}, not found on PATH. Install, then run npm test again:`)
  if (hasApt) {
    const p = packages.join(' ')
    process.stderr.write(
      `\n  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${p}\n\n`,
    )
  } else if (process.platform === 'darwin') {
    const formula = {
      promtool: 'prometheus',
      'redis-server': 'redis',
      kubectl: 'kubectl',
      chromium: '--cask chromium',
      haproxy: 'haproxy',
    }
    const brew = missing.map((n) => formula[n.program]).join(' ')
    process.stderr.write(`\n  brew install ${brew}\n\n`)
  } else {
    process.stderr.write(
      `\n  (packages: ${packages.join(', ')} on Debian and Ubuntu; ${programs} must be on PATH)\n\n`,
    )
  }
  const problem = missing.some((n) => n.program === 'kubectl') ? undefined : kustomizeProblem()
  if (problem !== undefined) say(problem)
  process.exit(1)
}

say(`installing ${packages.join(' ')} with apt-get (${programs} not found) ...`)
if (!updated) run([...prefix, ...env, 'apt-get', 'update', '-qq'])
run([...prefix, ...env, 'apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...packages])
const still = missing.filter((n) => !onPath(n.program))
if (still.length > 0) {
  say(`installed ${packages.join(' ')}, but ${still.map((n) => n.program).join(', ')} still not on PATH`)
  process.exit(1)
}
const problem = kustomizeProblem()
if (problem !== undefined) {
  say(problem)
  process.exit(1)
}
