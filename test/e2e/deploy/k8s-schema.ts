/**
 * Offline validation of rendered Kubernetes objects against the API's OpenAPI schemas, as
 * compiled by the `kubernetes-models` packages (a current Kubernetes release; the Prometheus
 * Operator's CRDs from `@kubernetes-models/prometheus-operator`).
 *
 * Two checks, both of which the API server makes (kubectl applies with
 * --validate=strict by default):
 * - types, formats, enums and required fields: the schema's own validator (ajv, compiled);
 *   it refuses `containerPort: "8080"`;
 * - unknown fields: the schemas do not say `additionalProperties: false`, so the validator
 *   runs on a Proxy that records every field it reads. A field it never read is one the
 *   schema does not have: `contianerPort`, or `sleep` in a preStop on a release without it.
 */
import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import { Deployment } from 'kubernetes-models/apps/v1'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1'

interface Validating {
  readonly prototype: { validate(): void }
}

/** apiVersion/kind -> the model whose schema validates it. A kind not here is refused. */
const MODELS: Readonly<Record<string, Validating>> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
}

export interface Manifest {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: { readonly name: string; readonly labels?: Readonly<Record<string, string>> }
  readonly [field: string]: unknown
}

/** Wraps `value` so that every own field read through it is added to `seen` as a path. */
function recording(value: unknown, path: string, seen: Set<string>): unknown {
  if (value === null || typeof value !== 'object') return value
  return new Proxy(value, {
    get(target, key, receiver) {
      const v: unknown = Reflect.get(target, key, receiver)
      if (typeof key !== 'string' || !Object.hasOwn(target, key)) return v
      const at = `${path}/${key}`
      seen.add(at)
      return recording(v, at, seen)
    },
  })
}

function fieldPaths(value: unknown, path: string, out: string[]): string[] {
  if (value === null || typeof value !== 'object') return out
  for (const [k, v] of Object.entries(value)) {
    out.push(`${path}/${k}`)
    fieldPaths(v, `${path}/${k}`, out)
  }
  return out
}

/**
 * kustomize wraps a Secret's base64 at 76 columns; the API server's decoder (Go's
 * encoding/base64) skips the newlines, the schema's `format: byte` does not.
 */
function asDecoded(obj: Manifest): Manifest {
  const data = obj.kind === 'Secret' ? obj.data : undefined
  if (data === null || typeof data !== 'object') return obj
  const joined = Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, typeof v === 'string' ? v.replace(/[\r\n]/g, '') : v]),
  )
  return { ...obj, data: joined }
}

interface AjvError {
  readonly instancePath?: string
  readonly message?: string
}

/** Every problem the API server would refuse `obj` for, as `path: message`; [] when none. */
export function schemaProblems(obj: Manifest): string[] {
  const key = `${obj.apiVersion}/${obj.kind}`
  const model = MODELS[key]
  if (model === undefined) return [`${key}: no schema for this kind in test/e2e/deploy/k8s-schema.ts`]
  const seen = new Set<string>()
  try {
    model.prototype.validate.call(recording(asDecoded(obj), '', seen))
  } catch (err) {
    const errors = (err as { errors?: readonly AjvError[] }).errors
    if (errors === undefined) throw err
    return errors.map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`)
  }
  // the outermost unknown field only, not every field under it
  const known = (p: string) => p === '' || seen.has(p)
  return fieldPaths(obj, '', [])
    .filter((p) => !seen.has(p) && known(p.slice(0, p.lastIndexOf('/'))))
    .map((p) => `${p}: unknown field (not in the ${obj.kind} schema)`)
}
