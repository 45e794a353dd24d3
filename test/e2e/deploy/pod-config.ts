/**
 * The config a rendered gateway pod would run with: its container's environment (values,
 * Secrets and ConfigMaps of the render resolved), its args with `$(VAR)` expanded as the
 * kubelet does, and the config file it names read from the ConfigMap mounted there; loaded
 * by the gateway's own loadConfig, so every problem `serve` would refuse it for fails here.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment'
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap'
import type { IContainer } from 'kubernetes-models/v1/Container'
import type { ISecret } from 'kubernetes-models/v1/Secret'
import { type ConfigOverrides, loadConfig } from '../../../src/config/load.js'
import type { GatewayConfig } from '../../../src/config/schema.js'
import type { Manifest } from './k8s-schema.js'
import { gatewayContainer, named, podSpec } from './render.js'

function secretValue(objects: readonly Manifest[], name: string, key: string): string {
  const s = named<ISecret>(objects, 'Secret', name)
  const b64 = s.data?.[key]
  if (b64 !== undefined) return Buffer.from(b64, 'base64').toString('utf8')
  const plain = s.stringData?.[key]
  if (plain === undefined) throw new Error(`Secret ${name} has no key ${key}`)
  return plain
}

/** The container's environment as the kubelet builds it (no service links: checked apart). */
export function containerEnv(objects: readonly Manifest[], c: IContainer): Record<string, string> {
  const env: Record<string, string> = {}
  for (const e of c.env ?? []) {
    const from = e.valueFrom
    if (from?.secretKeyRef !== undefined) {
      const ref = from.secretKeyRef
      env[e.name] = secretValue(objects, ref.name ?? '', ref.key)
    } else if (from?.configMapKeyRef !== undefined) {
      const ref = from.configMapKeyRef
      const value = named<IConfigMap>(objects, 'ConfigMap', ref.name ?? '').data?.[ref.key]
      if (value === undefined) throw new Error(`ConfigMap ${ref.name} has no key ${ref.key}`)
      env[e.name] = value
    } else if (from === undefined) {
      env[e.name] = (e.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string) => env[v] ?? m)
    } else {
      throw new Error(`env ${e.name}: a valueFrom this test does not resolve`)
    }
  }
  return env
}

/** `$(VAR)` in an arg, expanded from the container's environment; `$$` escapes. */
function expand(arg: string, env: Readonly<Record<string, string>>): string {
  return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string | undefined) =>
    v === undefined ? '$' : (env[v] ?? m),
  )
}

/** The file at `path` inside the pod, from a ConfigMap volume mounted over it (no subPath). */
function mountedFile(objects: readonly Manifest[], d: IDeployment, c: IContainer, path: string): string {
  for (const m of c.volumeMounts ?? []) {
    const rel = relative(m.mountPath, path)
    if (rel.startsWith('..') || rel === '' || m.subPath !== undefined) continue
    const volume = podSpec(d).volumes?.find((v) => v.name === m.name)
    const cm = volume?.configMap?.name
    if (cm === undefined) continue
    const text = named<IConfigMap>(objects, 'ConfigMap', cm).data?.[rel]
    if (text !== undefined) return text
  }
  throw new Error(`${path}: no ConfigMap volume of the pod holds it`)
}

export interface PodGateway {
  readonly config: GatewayConfig
  /** The config file's text, as mounted. */
  readonly file: string
  readonly env: Readonly<Record<string, string>>
  readonly args: readonly string[]
}

/** Loads the gateway config of the Deployment's gateway container; throws ConfigError. */
export function podGatewayConfig(objects: readonly Manifest[], d: IDeployment): PodGateway {
  const c = gatewayContainer(d)
  if (c === undefined) throw new Error(`Deployment ${d.metadata?.name}: no slo-gateway container`)
  const env = containerEnv(objects, c)
  const args = (c.args ?? []).map((a) => expand(a, env))
  if (c.command !== undefined) throw new Error('the gateway container overrides the image entrypoint')
  if (args[0] !== 'serve') throw new Error(`the gateway container runs '${args[0]}', not serve`)
  const overrides: ConfigOverrides = {}
  const sets: string[] = []
  let configPath = env.SLO_GATEWAY_CONFIG
  for (let i = 1; i < args.length; i++) {
    const flag = args[i]
    const value = args[i + 1]
    if (value === undefined) throw new Error(`${flag}: no value`)
    if (flag === '--set') sets.push(value)
    else if (flag === '--config') configPath = value
    else throw new Error(`args: '${flag}' is not a flag this test understands`)
    i++
  }
  if (configPath === undefined) throw new Error('the pod names no config file (SLO_GATEWAY_CONFIG)')
  const file = mountedFile(objects, d, c, configPath)
  const local = join(mkdtempSync(join(tmpdir(), 'pod-config-')), basename(configPath))
  writeFileSync(local, file)
  if (sets.length > 0) overrides.sets = sets
  const { SLO_GATEWAY_CONFIG: _, ...rest } = env
  return { config: loadConfig(local, overrides, rest).config, file, env, args }
}
