/**
 * deploy/k8s rendered as `kubectl kustomize` renders it (scripts/kustomize-tool.mjs picks the
 * tool: kubectl 1.27+ or a standalone kustomize v5), parsed into objects, and what the tests
 * look up in them. Without a usable kustomize every test that renders fails with what to
 * install: it never skips.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment'
import type { IContainer } from 'kubernetes-models/v1/Container'
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec'
import type { IService } from 'kubernetes-models/v1/Service'
import { parseAllDocuments } from 'yaml'
import { findKustomize } from '../../../scripts/kustomize-tool.mjs'
import type { Manifest } from './k8s-schema.js'

export const ROOT = join(import.meta.dirname, '..', '..', '..')
export const K8S = join(ROOT, 'deploy', 'k8s')
/** Every overlay: each is built, validated and checked. */
export const OVERLAYS: readonly string[] = readdirSync(join(K8S, 'overlays'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort()

export const kustomize = findKustomize()

const rendered = new Map<string, Manifest[]>()

/** The objects `kubectl kustomize deploy/k8s/<dir>` prints; throws with its error output. */
export function render(dir: string): Manifest[] {
  const cached = rendered.get(dir)
  if (cached !== undefined) return cached
  if ('problem' in kustomize) throw new Error(kustomize.problem)
  const [cmd, ...args] = kustomize.build(join(K8S, dir))
  const r = spawnSync(cmd!, args, { encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`${kustomize.label} on deploy/k8s/${dir} failed:\n${r.stderr}`)
  const objects = parseAllDocuments(r.stdout).map((d) => {
    if (d.errors.length > 0) throw new Error(`deploy/k8s/${dir}: ${d.errors[0]?.message}`)
    return d.toJS() as Manifest
  })
  rendered.set(dir, objects)
  return objects
}

export function ofKind<T>(objects: readonly Manifest[], kind: string): (T & Manifest)[] {
  return objects.filter((o) => o.kind === kind) as (T & Manifest)[]
}

export function named<T>(objects: readonly Manifest[], kind: string, name: string): T & Manifest {
  const found = ofKind<T>(objects, kind).find((o) => o.metadata.name === name)
  if (found === undefined) throw new Error(`no ${kind} named ${name} in the render`)
  return found
}

export type Deployment = IDeployment & Manifest
export type Service = IService & Manifest

export function podSpec(d: IDeployment): IPodSpec {
  const spec = d.spec?.template.spec
  if (spec === undefined) throw new Error(`Deployment ${d.metadata?.name}: no pod spec`)
  return spec
}

/** The container that runs slo-gateway: its image is the project's. */
export function gatewayContainer(d: IDeployment): IContainer | undefined {
  return podSpec(d).containers.find((c) => /(^|\/)slo-gateway(:|@|$)/.test(c.image ?? ''))
}

export function gatewayDeployments(objects: readonly Manifest[]): Deployment[] {
  return ofKind<IDeployment>(objects, 'Deployment').filter((d) => gatewayContainer(d) !== undefined)
}

/** A container port named or numbered `port`, in `container`. */
export function containerPort(container: IContainer, port: string | number): number | undefined {
  if (typeof port === 'number')
    return container.ports?.some((p) => p.containerPort === port) ? port : undefined
  return container.ports?.find((p) => p.name === port)?.containerPort
}

/** Whether `selector` selects pods labelled `labels`. */
export function selects(
  selector: Readonly<Record<string, string>> | undefined,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  if (selector === undefined || Object.keys(selector).length === 0) return false
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v)
}

export function podLabels(d: IDeployment): Readonly<Record<string, string>> {
  return d.spec?.template.metadata?.labels ?? {}
}

/** The seconds of a preStop `sleep` action (or `exec: [sleep, N]`); undefined without one. */
export function preStopSleepSeconds(c: IContainer): number | undefined {
  const pre = c.lifecycle?.preStop
  if (pre?.sleep !== undefined) return pre.sleep.seconds
  const cmd = pre?.exec?.command
  if (cmd?.[0] === 'sleep' && cmd[1] !== undefined) return Number(cmd[1])
  return undefined
}

/** The value that follows `flag` in a container's args (`--port 8000`). */
export function argAfter(c: IContainer, flag: string): string | undefined {
  const args = c.args ?? []
  const i = args.indexOf(flag)
  return i < 0 ? undefined : args[i + 1]
}
