/**
 * Each deployment mode, wired end to end in the render: the front door's DNS discovery finds
 * the model servers' headless Service; the sidecar's upstream is the vLLM beside it on
 * localhost and the pod's Service targets the gateway; the shared limits reach a Redis.
 */
import type { IContainer } from 'kubernetes-models/v1/Container'
import { describe, expect, it } from 'vitest'
import { CLOSE_WAIT_MS } from '../../../src/listeners.js'
import type { Manifest } from './k8s-schema.js'
import { podGatewayConfig } from './pod-config.js'
import {
  argAfter,
  containerPort,
  type Deployment,
  gatewayContainer,
  gatewayDeployments,
  ofKind,
  podLabels,
  podSpec,
  preStopSleepSeconds,
  render,
  type Service,
  selects,
} from './render.js'

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

/** CoreDNS's TTL for Service records (its kubernetes plugin's default). */
const DNS_TTL_MS = 5_000

/** The Service a cluster DNS name points at: `name`, `name.ns`, `name.ns.svc[.cluster.local]`. */
function serviceByDns(objects: readonly Manifest[], host: string): Service | undefined {
  const name = host.split('.')[0]
  return ofKind<Service>(objects, 'Service').find((s) => s.metadata.name === name)
}

/** The Deployments whose pods a Service selects. */
function backing(objects: readonly Manifest[], s: Service): Deployment[] {
  return ofKind<Deployment>(objects, 'Deployment').filter((d) => selects(s.spec?.selector, podLabels(d)))
}

function only<T>(items: readonly T[], what: string): T {
  expect(items.length, what).toBe(1)
  return items[0]!
}

describe.each(['overlays/front-door', 'overlays/redis', 'overlays/autoscaling'])(
  '%s: the front door',
  (overlay) => {
    const objects = () => render(overlay)
    const gateway = () =>
      only(
        gatewayDeployments(objects()).filter((d) => podSpec(d).containers.length === 1),
        'one gateway Deployment',
      )

    it("discovers every vLLM pod through a headless Service's DNS name, on the port they serve", () => {
      const { config } = podGatewayConfig(objects(), gateway())
      const pools = config.backends.pools.filter((p) => p.discovery !== undefined)
      expect(pools.length).toBeGreaterThan(0)
      for (const pool of pools) {
        const discovery = pool.discovery!
        const svc = serviceByDns(objects(), discovery.name)
        expect(svc, `pool ${pool.name}: no Service named ${discovery.name}`).toBeDefined()
        // a ClusterIP would answer with one virtual address: one endpoint for the whole fleet
        expect(svc!.spec?.clusterIP, `Service ${svc!.metadata.name} must be headless`).toBe('None')
        const port = svc!.spec?.ports?.find((p) => p.port === discovery.port)
        expect(port, `Service ${svc!.metadata.name} has no port ${discovery.port}`).toBeDefined()
        const servers = backing(objects(), svc!)
        expect(servers.length).toBeGreaterThan(0)
        for (const d of servers) {
          const c = podSpec(d).containers[0]!
          expect(
            gatewayContainer(d),
            'the headless Service selects model servers, not gateways',
          ).toBeUndefined()
          expect(containerPort(c, port!.targetPort ?? port!.port)).toBe(discovery.port)
          expect(c.readinessProbe, 'not-ready servers stay out of DNS').toBeDefined()
        }
      }
    })

    it('lets vLLM serve until the gateways have stopped sending to it (discovery interval + DNS TTL)', () => {
      const { config } = podGatewayConfig(objects(), gateway())
      for (const pool of config.backends.pools) {
        const svc = serviceByDns(objects(), pool.discovery!.name)!
        for (const d of backing(objects(), svc)) {
          const c = podSpec(d).containers[0]!
          const sleepMs = (preStopSleepSeconds(c) ?? 0) * 1000
          expect(sleepMs).toBeGreaterThan(pool.discovery!.interval_ms + DNS_TTL_MS + 10_000)
          expect((podSpec(d).terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(sleepMs)
        }
      }
    })
  },
)

describe('overlays/redis: shared limits', () => {
  const objects = () => render('overlays/redis')

  it('runs several gateways on one Redis store, whose URL comes from a Secret and names a Service here', () => {
    const d = only(gatewayDeployments(objects()), 'one gateway Deployment')
    expect(d.spec?.replicas).toBeGreaterThan(1)
    const { config, env } = podGatewayConfig(objects(), d)
    expect(config.limits.store).toBe('redis')
    expect(env.SLO_GATEWAY_REDIS_URL, 'SLO_GATEWAY_REDIS_URL from the Secret').toBeDefined()
    expect(config.limits.redis.url).toBe(env.SLO_GATEWAY_REDIS_URL)
    const url = new URL(config.limits.redis.url)
    const svc = serviceByDns(objects(), url.hostname)
    expect(svc, `no Service ${url.hostname}`).toBeDefined()
    const port = svc!.spec?.ports?.find((p) => p.port === Number(url.port || 6379))
    expect(port).toBeDefined()
    const redis = only(backing(objects(), svc!), 'one Redis Deployment')
    const c = podSpec(redis).containers[0]!
    expect(c.image).toMatch(/redis|valkey/)
    expect(containerPort(c, port!.targetPort ?? port!.port)).toBe(Number(url.port || 6379))
    expect(
      config.tenants.some((t) => t.limits !== undefined),
      'tenants with limits',
    ).toBe(true)
  })
})

describe.each(['overlays/sidecar', 'overlays/sidecar-autoscaling'])('%s: the sidecar', (overlay) => {
  const objects = () => render(overlay)
  const pod = () => only(gatewayDeployments(objects()), 'one Deployment')
  const vllm = (d: Deployment): IContainer =>
    only(
      podSpec(d).containers.filter((c) => c !== gatewayContainer(d)),
      'one model-server container beside the gateway',
    )

  it('forwards to localhost, to the port the vLLM beside it listens on (and only on loopback)', () => {
    const d = pod()
    const { config } = podGatewayConfig(objects(), d)
    const server = vllm(d)
    const port = Number(argAfter(server, '--port') ?? 8000)
    const host = argAfter(server, '--host')
    expect(
      host !== undefined && LOOPBACK.has(host),
      `vLLM --host ${host}: reachable around the gateway`,
    ).toBe(true)
    for (const pool of config.backends.pools) {
      expect(pool.discovery).toBeUndefined()
      expect(pool.endpoints.length).toBeGreaterThan(0)
      for (const e of pool.endpoints) {
        const url = new URL(e)
        expect(LOOPBACK.has(url.hostname), `${e} is not localhost`).toBe(true)
        expect(Number(url.port)).toBe(port)
      }
    }
  })

  it("has a Service that targets the gateway's port, never vLLM's", () => {
    const d = pod()
    const { config } = podGatewayConfig(objects(), d)
    const gw = gatewayContainer(d)!
    const services = ofKind<Service>(objects(), 'Service').filter((s) =>
      selects(s.spec?.selector, podLabels(d)),
    )
    const publicOnes = services.filter((s) => s.spec?.clusterIP !== 'None')
    expect(publicOnes.length).toBe(1)
    for (const p of publicOnes[0]!.spec?.ports ?? []) {
      expect(containerPort(gw, p.targetPort ?? p.port)).toBe(config.server.port)
    }
    for (const s of services)
      for (const p of s.spec?.ports ?? [])
        expect(containerPort(vllm(d), p.targetPort ?? p.port), `Service ${s.metadata.name}`).toBeUndefined()
  })

  it("keeps vLLM up until the gateway's drain is over, within the pod's grace period", () => {
    const d = pod()
    const { config } = podGatewayConfig(objects(), d)
    const gatewayDone =
      (preStopSleepSeconds(gatewayContainer(d)!) ?? 0) * 1000 +
      config.server.shutdown_grace_ms +
      CLOSE_WAIT_MS
    const vllmSleep = (preStopSleepSeconds(vllm(d)) ?? 0) * 1000
    expect(vllmSleep, 'vLLM preStop sleep vs the gateway preStop + drain + close').toBeGreaterThan(
      gatewayDone,
    )
    expect((podSpec(d).terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(vllmSleep)
    expect(vllm(d).livenessProbe, 'a wedged vLLM is restarted').toBeDefined()
    expect(vllm(d).startupProbe, 'liveness waits for the weights to load').toBeDefined()
  })
})
