/**
 * The kustomize that builds deploy/k8s, for scripts/test-prereqs.mjs and the deploy tests.
 *
 * Looked for in this order: $KUSTOMIZE (a standalone kustomize, run as `kustomize build DIR`),
 * $KUBECTL, `kubectl` on PATH (`kubectl kustomize DIR`), `kustomize` on PATH. The overlays
 * use kustomize v5 (kubectl 1.27 or later): Debian bookworm's kubernetes-client is kubectl
 * 1.20, whose kustomize v2 cannot even take a directory under `resources`.
 */
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

export const MIN_KUSTOMIZE_MAJOR = 5
/** The kubectl release that embeds kustomize v5.0. */
export const MIN_KUBECTL_MINOR = 27

/** The path of `program` on PATH, or undefined. */
export function onPath(program, env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    const p = join(dir, program)
    try {
      accessSync(p, constants.X_OK)
      return p
    } catch {}
  }
  return undefined
}

function output(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 })
  if (r.error !== undefined || r.status !== 0) return undefined
  return `${r.stdout ?? ''}${r.stderr ?? ''}`
}

/** `v5.5.0` (or `{Version:kustomize/v4.5.7 ...}`) -> 5; undefined when there is none. */
function major(version) {
  const m = /v(\d+)\.\d+/.exec(version ?? '')
  return m === null ? undefined : Number(m[1])
}

function standalone(path) {
  const version = /v\d+\.\d+\.\d+/.exec(output(path, ['version']) ?? '')?.[0]
  return {
    path,
    version,
    build: (dir) => [path, 'build', dir],
    label: `kustomize ${version ?? '(unknown version)'}`,
  }
}

function kubectl(path) {
  let version
  let client
  try {
    const v = JSON.parse(output(path, ['version', '--client', '-o', 'json']) ?? '{}')
    version = v.kustomizeVersion
    client = v.clientVersion?.gitVersion
  } catch {}
  return {
    path,
    version,
    build: (dir) => [path, 'kustomize', dir],
    label: `kubectl ${client ?? '(unknown version)'} (kustomize ${version ?? 'v2 or older'})`,
  }
}

/**
 * The tool to use: `{ build(dir) -> argv, label }`, or `{ problem }`: a sentence that says what
 * is missing or too old and what to install.
 */
export function findKustomize(env = process.env) {
  const candidates = []
  if (env.KUSTOMIZE) candidates.push(standalone(env.KUSTOMIZE))
  if (env.KUBECTL) candidates.push(kubectl(env.KUBECTL))
  const k = onPath('kubectl', env)
  if (k !== undefined) candidates.push(kubectl(k))
  const s = onPath('kustomize', env)
  if (s !== undefined) candidates.push(standalone(s))
  const good = candidates.find((c) => (major(c.version) ?? 0) >= MIN_KUSTOMIZE_MAJOR)
  if (good !== undefined) return good
  const need =
    `deploy/k8s needs kustomize v${MIN_KUSTOMIZE_MAJOR} or later: kubectl 1.${MIN_KUBECTL_MINOR}+ ` +
    '(https://kubernetes.io/docs/tasks/tools/), or a standalone kustomize named by KUSTOMIZE=PATH'
  if (candidates.length === 0) return { problem: `kubectl not found on PATH; ${need}` }
  return { problem: `${candidates.map((c) => c.label).join(', ')}: too old; ${need}` }
}

/**
 * Debian's kubernetes-client candidate as [major, minor] (`1.20.5+really1.20.2-1` -> [1, 20]),
 * or undefined when apt knows none.
 */
export function debianKubectlCandidate() {
  const policy = output('apt-cache', ['policy', 'kubernetes-client']) ?? ''
  const candidate = /Candidate:\s*(\S+)/.exec(policy)?.[1]
  if (candidate === undefined || candidate === '(none)') return undefined
  const real = candidate.includes('really') ? candidate.slice(candidate.indexOf('really') + 6) : candidate
  const m = /(\d+)\.(\d+)/.exec(real.replace(/^\d+:/, ''))
  return m === null ? undefined : [Number(m[1]), Number(m[2])]
}
