/**
 * Autoscaling on the gateway's signals, checked link by link: each HPA metric is a gauge the
 * gateway exports (src/telemetry/names.ts), a prometheus-adapter rule
 * (deploy/k8s/prometheus-adapter/values.yaml) serves it under that name for the object kind
 * the HPA asks about, a ServiceMonitor scrapes the gateway's admin port where the series
 * come from, and the HPA owns the replica count of a Deployment in the render.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor'
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { exportedSeriesNames, HISTOGRAMS } from '../../../src/telemetry/index.js'
import { podGatewayConfig } from './pod-config.js'
import {
  containerPort,
  type Deployment,
  gatewayContainer,
  K8S,
  named,
  OVERLAYS,
  ofKind,
  podLabels,
  render,
  type Service,
  selects,
} from './render.js'

interface AdapterRule {
  seriesQuery: string
  resources?: { overrides?: Record<string, { resource?: string }>; template?: string }
  name?: { matches?: string; as?: string }
  metricsQuery: string
}

const adapter = parse(readFileSync(join(K8S, 'prometheus-adapter', 'values.yaml'), 'utf8')) as {
  rules: { default: boolean; custom: AdapterRule[] }
}

/** The labels prometheus-operator puts on every series a ServiceMonitor scrapes. */
const TARGET_LABELS = new Set(['namespace', 'service', 'pod', 'container', 'endpoint', 'job'])

function seriesOf(rule: AdapterRule): string {
  const m = /^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(rule.seriesQuery)
  if (m === null) throw new Error(`seriesQuery ${rule.seriesQuery}: no metric name`)
  return m[1]!
}

/** The name the adapter serves a series under (its Go regexp rename, `${1}` as `$1`). */
function servedName(rule: AdapterRule, series: string): string | undefined {
  const re = new RegExp(rule.name?.matches ?? '^(.*)$')
  if (!re.test(series)) return undefined
  const as = rule.name?.as ?? (re.source.includes('(') ? '$1' : '$0')
  return series.replace(re, as.replace(/\$\{(\d+)\}/g, '$$$1').replace('$0', '$&'))
}

const HPA_OVERLAYS = OVERLAYS.filter((o) => o.includes('autoscaling')).map((o) => `overlays/${o}`)

describe('the prometheus-adapter rules', () => {
  const exported = exportedSeriesNames()

  it('map only series the gateway exports, per namespace and pod or Service, with the label matchers', () => {
    expect(adapter.rules.custom.length).toBeGreaterThan(0)
    for (const rule of adapter.rules.custom) {
      const series = seriesOf(rule)
      expect(exported.has(series), `${series} is not a series the gateway exports`).toBe(true)
      const overrides = rule.resources?.overrides ?? {}
      for (const label of Object.keys(overrides)) expect(TARGET_LABELS.has(label), label).toBe(true)
      expect(overrides.namespace?.resource).toBe('namespace')
      expect(overrides.pod?.resource).toBe('pod')
      for (const part of ['<<.Series>>', '<<.LabelMatchers>>', '<<.GroupBy>>'])
        expect(rule.metricsQuery).toContain(part)
    }
  })
})

describe.each(HPA_OVERLAYS)('%s', (overlay) => {
  const objects = () => render(overlay)
  const hpas = () => {
    const found = ofKind<IHorizontalPodAutoscaler>(objects(), 'HorizontalPodAutoscaler')
    expect(found.length).toBeGreaterThan(0)
    return found
  }
  const gateway = () => ofKind<Deployment>(objects(), 'Deployment').find((d) => gatewayContainer(d))!

  /** A ServiceMonitor scrapes `svc` on a port that reaches the gateway's admin listener. */
  const expectScraped = (svc: Service) => {
    const adminPort = podGatewayConfig(objects(), gateway()).config.server.admin_port
    const monitors = ofKind<IServiceMonitor>(objects(), 'ServiceMonitor').filter((m) =>
      selects(m.spec.selector.matchLabels, svc.metadata.labels),
    )
    expect(monitors.length, `no ServiceMonitor selects Service ${svc.metadata.name}`).toBeGreaterThan(0)
    const gw = gatewayContainer(gateway())!
    for (const m of monitors)
      for (const e of m.spec.endpoints ?? []) {
        const port = svc.spec?.ports?.find((p) => p.name === e.port)
        expect(port, `ServiceMonitor port ${e.port}`).toBeDefined()
        expect(containerPort(gw, port!.targetPort ?? port!.port)).toBe(adminPort)
        expect(e.path ?? '/metrics').toBe('/metrics')
      }
  }

  it('scales a Deployment of the render and owns its replica count', () => {
    for (const h of hpas()) {
      const ref = h.spec?.scaleTargetRef
      expect(ref?.kind).toBe('Deployment')
      const target = named<Deployment>(objects(), 'Deployment', ref!.name)
      expect(target.spec?.replicas, `${ref!.name}: spec.replicas would fight the HPA on every apply`).toBe(
        undefined,
      )
      expect(h.spec!.minReplicas).toBeGreaterThanOrEqual(2)
      expect(h.spec!.maxReplicas).toBeGreaterThan(h.spec!.minReplicas!)
    }
  })

  it("scales on gauges the gateway exports, served under their names by an adapter rule, from the gateway's admin port", () => {
    const exported = exportedSeriesNames()
    const histogramSeries = HISTOGRAMS.flatMap((h) => [`${h}_bucket`, `${h}_sum`, `${h}_count`])
    for (const h of hpas()) {
      const metrics = h.spec?.metrics ?? []
      expect(metrics.length).toBeGreaterThan(0)
      for (const m of metrics) {
        expect(['Pods', 'Object'], 'custom metrics, not CPU').toContain(m.type)
        const name = (m.pods ?? m.object)!.metric.name
        expect(exported.has(name), `${name}: not exported by the gateway`).toBe(true)
        expect(name.endsWith('_total') || histogramSeries.includes(name), `${name}: not a gauge`).toBe(false)
        const kind = m.type === 'Pods' ? 'pod' : m.object!.describedObject.kind.toLowerCase()
        const rules = adapter.rules.custom.filter((r) => servedName(r, seriesOf(r)) === name)
        expect(rules.length, `no adapter rule serves ${name}`).toBe(1)
        expect(rules[0]!.resources?.overrides?.[kind]?.resource, `${name} for a ${kind}`).toBe(kind)
        if (m.type === 'Object') {
          const ref = m.object!.describedObject
          expect(ref.kind).toBe('Service')
          const svc = named<Service>(objects(), 'Service', ref.name)
          expect(selects(svc.spec?.selector, podLabels(gateway()))).toBe(true)
          expectScraped(svc)
        } else {
          // the scaled pods are the gateway's own: their series are the metric
          const target = named<Deployment>(objects(), 'Deployment', h.spec!.scaleTargetRef.name)
          expect(gatewayContainer(target), `${target.metadata.name} pods do not export ${name}`).toBeDefined()
          const svcs = ofKind<Service>(objects(), 'Service').filter(
            (s) => selects(s.spec?.selector, podLabels(target)) && s.spec?.clusterIP === 'None',
          )
          expect(svcs.length).toBe(1)
          expectScraped(svcs[0]!)
        }
      }
    }
  })
})
