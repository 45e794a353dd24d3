/**
 * The rendered manifests, read for what breaks in production: a probe on a path or port the
 * gateway does not serve, a grace period shorter than the drain, a root container, a
 * sidecar whose upstream is not localhost or whose Service bypasses the gateway, a pool
 * that discovers no Service, an HPA metric that nothing exports or maps.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import type { IContainer } from 'kubernetes-models/v1/Container'
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec'
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext'
import { Registry } from 'prom-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAdminRoutes } from '../../../src/admin.js'
import { CLOSE_WAIT_MS } from '../../../src/listeners.js'
import { podGatewayConfig } from './pod-config.js'
import {
  containerPort,
  type Deployment,
  gatewayContainer,
  gatewayDeployments,
  OVERLAYS,
  ofKind,
  podLabels,
  podSpec,
  preStopSleepSeconds,
  ROOT,
  render,
  type Service,
  selects,
} from './render.js'

const ALL = OVERLAYS.map((o) => `overlays/${o}`)
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

/** The admin listener's real routes, with sources that are ready (or draining). */
const admin = Fastify()
let draining = false
beforeAll(async () => {
  registerAdminRoutes(admin, {
    registry: new Registry(),
    ready: () => true,
    draining: () => draining,
    state: () => ({}),
  })
  await admin.ready()
})
afterAll(() => admin.close())

async function adminStatus(path: string, drain = false): Promise<number> {
  draining = drain
  return (await admin.inject({ method: 'GET', url: path })).statusCode
}

/** The container's security context over the pod's, as the kubelet applies them. */
function effectiveSecurity(pod: IPodSpec, c: IContainer): ISecurityContext {
  const p = pod.securityContext ?? {}
  return {
    runAsNonRoot: p.runAsNonRoot,
    runAsUser: p.runAsUser,
    runAsGroup: p.runAsGroup,
    seccompProfile: p.seccompProfile,
    ...c.securityContext,
  } as ISecurityContext
}

/** The image's USER, from the Dockerfile's last stage. */
function dockerfileUid(): number {
  const text = readFileSync(join(ROOT, 'deploy', 'docker', 'Dockerfile'), 'utf8')
  const users = [...text.matchAll(/^USER\s+(\d+)(?::\d+)?\s*$/gm)]
  const uid = users.at(-1)?.[1]
  if (uid === undefined) throw new Error('the Dockerfile sets no numeric USER')
  return Number(uid)
}

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version

describe.each(ALL)('%s: the gateway pods', (overlay) => {
  const objects = () => render(overlay)
  const gateways = () => {
    const found = gatewayDeployments(objects())
    expect(found.length, 'a Deployment running slo-gateway').toBeGreaterThan(0)
    return found
  }
  const each = (fn: (d: Deployment, c: IContainer) => void | Promise<void>) => async () => {
    for (const d of gateways()) await fn(d, gatewayContainer(d)!)
  }

  it(
    'run a config the gateway accepts (the ConfigMap, the Secrets, the args)',
    each((d) => {
      const { config } = podGatewayConfig(objects(), d)
      expect(config.backends.pools.length).toBeGreaterThan(0)
      expect(config.simulator.enabled).toBe(false)
      expect(config.tenants.length, 'tenants from the Secret').toBeGreaterThan(0)
    }),
  )

  it(
    "probe /readyz and /healthz on the admin listener's port, which listens beyond loopback",
    each(async (d, c) => {
      const { config } = podGatewayConfig(objects(), d)
      expect(LOOPBACK.has(config.server.admin_host), 'server.admin_host: the kubelet probes the pod IP').toBe(
        false,
      )
      const probes = { readiness: c.readinessProbe, liveness: c.livenessProbe }
      expect(probes.readiness?.httpGet?.path).toBe('/readyz')
      expect(probes.liveness?.httpGet?.path).toBe('/healthz')
      for (const [what, probe] of Object.entries(probes)) {
        const get = probe?.httpGet
        expect(get, `${what} probe: httpGet`).toBeDefined()
        expect(containerPort(c, get!.port), `${what} probe port ${get!.port}`).toBe(config.server.admin_port)
        expect(await adminStatus(get!.path!), `${what} ${get!.path} on the admin listener`).toBe(200)
      }
      // readiness turns false as the drain begins
      expect(await adminStatus('/readyz', true)).toBe(503)
      expect(await adminStatus('/healthz', true)).toBe(200)
      expect(containerPort(c, 'http')).toBe(config.server.port)
    }),
  )

  it(
    'outlast their drain: terminationGracePeriodSeconds > preStop sleep + shutdown_grace_ms + close',
    each((d, c) => {
      const { config } = podGatewayConfig(objects(), d)
      const preStop = preStopSleepSeconds(c)
      expect(preStop, 'a preStop sleep while endpoints update').toBeGreaterThanOrEqual(5)
      const grace = podSpec(d).terminationGracePeriodSeconds ?? 30
      const needMs = preStop! * 1000 + config.server.shutdown_grace_ms + CLOSE_WAIT_MS
      expect(grace * 1000, `grace ${grace} s vs ${needMs} ms`).toBeGreaterThan(needMs)
    }),
  )

  it(
    "run as the image's non-root user, read-only, without capabilities or privilege escalation",
    each((d, c) => {
      const pod = podSpec(d)
      const sc = effectiveSecurity(pod, c)
      expect(sc.runAsNonRoot).toBe(true)
      expect(sc.runAsUser).toBe(dockerfileUid())
      expect(sc.runAsUser).not.toBe(0)
      expect(sc.allowPrivilegeEscalation).toBe(false)
      expect(sc.readOnlyRootFilesystem).toBe(true)
      expect(sc.capabilities?.drop).toContain('ALL')
      expect(sc.seccompProfile?.type).toBe('RuntimeDefault')
      expect(pod.automountServiceAccountToken).toBe(false)
    }),
  )

  it(
    'have no service links (a Service named slo-gateway would set SLO_GATEWAY_PORT=tcp://...)',
    each((d) => expect(podSpec(d).enableServiceLinks).toBe(false)),
  )

  it(
    'mount the config as a directory, so a changed ConfigMap reaches the running gateway',
    each((d, c) => {
      const mount = c.volumeMounts?.find((m) => m.mountPath === '/etc/slo-gateway')
      expect(mount).toBeDefined()
      expect(mount!.subPath).toBeUndefined()
      expect(podSpec(d).volumes?.find((v) => v.name === mount!.name)?.configMap).toBeDefined()
    }),
  )

  it(
    `run the image of this version (slo-gateway:${VERSION}) with requests and a memory limit`,
    each((_d, c) => {
      expect(c.image).toMatch(new RegExp(`:${VERSION.replaceAll('.', '\\.')}$`))
      expect(c.resources?.requests?.cpu).toBeDefined()
      expect(c.resources?.requests?.memory).toBeDefined()
      expect(c.resources?.limits?.memory).toBeDefined()
    }),
  )

  it(
    'keep the admin port off every Service but the headless one for Prometheus',
    each((d, c) => {
      const { config } = podGatewayConfig(objects(), d)
      for (const s of ofKind<Service>(objects(), 'Service')) {
        if (!selects(s.spec?.selector, podLabels(d))) continue
        for (const p of s.spec?.ports ?? []) {
          const target = containerPort(c, p.targetPort ?? p.port)
          if (target !== config.server.admin_port) continue
          expect(s.spec?.clusterIP, `Service ${s.metadata.name} exposes the admin port`).toBe('None')
          expect(s.spec?.type ?? 'ClusterIP').toBe('ClusterIP')
        }
      }
    }),
  )

  it(
    'have a PodDisruptionBudget that lets a node drain take one at a time',
    each((d) => {
      const pdbs = ofKind<IPodDisruptionBudget>(objects(), 'PodDisruptionBudget').filter((p) =>
        selects(p.spec?.selector?.matchLabels, podLabels(d)),
      )
      expect(pdbs.length).toBe(1)
      expect(pdbs[0]!.spec?.maxUnavailable).toBe(1)
    }),
  )
})
