/**
 * The rendered manifests, read for what breaks in production: a probe on a path or port the
 * gateway does not serve, a grace period shorter than the drain, a root container, a
 * sidecar whose upstream is not localhost or whose Service bypasses the gateway, a pool
 * that discovers no Service, an HPA metric that nothing exports or maps.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import type { IContainer } from 'kubernetes-models/v1/Container'
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec'
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLOSE_WAIT_MS } from '../../../src/listeners.js'
import { HEARTBEAT_MS, type ProbeThread, startProbeThread } from '../../../src/probe-thread.js'
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

/** The probe listener, real (its own thread, a real socket), with sources that are ready (or draining). */
let probes: ProbeThread
let draining = false
beforeAll(async () => {
  probes = await startProbeThread(
    { host: '127.0.0.1', port: 0, stallMs: 10_000 },
    { ready: () => true, draining: () => draining, lagMs: () => 0 },
  )
})
afterAll(() => probes.close())

async function probeStatus(path: string, drain = false): Promise<number> {
  draining = drain
  // the probe thread reads the flags at the main thread's next heartbeat
  await new Promise((r) => setTimeout(r, 2 * HEARTBEAT_MS))
  return (await fetch(`http://127.0.0.1:${probes.port}${path}`)).status
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
    "probe /readyz and /healthz on the probe listener's port (its own thread), which listens beyond loopback",
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
        expect(config.server.probe_port, 'server.probe_port: the probes answer under a flood').toBeDefined()
        expect(containerPort(c, get!.port), `${what} probe port ${get!.port}`).toBe(config.server.probe_port)
        expect(await probeStatus(get!.path!), `${what} ${get!.path} on the probe listener`).toBe(200)
      }
      // readiness turns false as the drain begins
      expect(await probeStatus('/readyz', true)).toBe(503)
      expect(await probeStatus('/healthz', true)).toBe(200)
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
