/**
 * deploy/k8s, offline: every overlay builds with kustomize v5 (`kubectl kustomize`), and
 * every object it renders validates against a current Kubernetes release's OpenAPI schemas
 * (kubernetes-models), unknown fields included. Without kubectl 1.27+ (or KUSTOMIZE=path
 * to a kustomize v5) these tests fail and say what to install (scripts/test-prereqs.mjs
 * installs Debian's kubernetes-client where it is new enough).
 */
import { describe, expect, it } from 'vitest'
import { type Manifest, schemaProblems } from './k8s-schema.js'
import { type Deployment, kustomize, named, OVERLAYS, render } from './render.js'

describe('deploy/k8s with kustomize', () => {
  it('has a kustomize v5: kubectl 1.27+ on PATH, or KUSTOMIZE=path', () => {
    expect('problem' in kustomize ? kustomize.problem : kustomize.label).not.toMatch(/too old|not found/)
  })

  it('has the overlays the README documents', () => {
    expect(OVERLAYS).toEqual(['autoscaling', 'front-door', 'redis', 'sidecar', 'sidecar-autoscaling'])
  })

  for (const overlay of ['base', ...OVERLAYS.map((o) => `overlays/${o}`)]) {
    describe(overlay, () => {
      it('builds', () => {
        const objects = render(overlay)
        expect(objects.length).toBeGreaterThan(3)
        const names = objects.map((o) => `${o.kind}/${o.metadata.name}`)
        expect(new Set(names).size, 'two objects of the same kind and name').toBe(names.length)
      })

      it('validates against the Kubernetes schemas, unknown fields included', () => {
        const problems = render(overlay).flatMap((o) =>
          schemaProblems(o).map((p) => `${o.kind}/${o.metadata.name}${p}`),
        )
        expect(problems).toEqual([])
      })
    })
  }
})

describe('the schema check', () => {
  const deployment = (): Deployment =>
    structuredClone(named<Deployment>(render('overlays/front-door'), 'Deployment', 'slo-gateway'))
  const gateway = (d: Deployment) => d.spec!.template.spec!.containers[0]!

  it('passes the rendered gateway Deployment', () => {
    expect(schemaProblems(deployment())).toEqual([])
  })

  it('refuses containerPort: "8080" (a string where the API wants an integer)', () => {
    const d = deployment()
    ;(gateway(d).ports![0] as { containerPort: unknown }).containerPort = '8080'
    expect(schemaProblems(d)).toEqual([
      '/spec/template/spec/containers/0/ports/0/containerPort: must be integer',
    ])
  })

  it('refuses a misspelt field, which the API server would refuse under --validate=strict', () => {
    const d = deployment()
    const c = gateway(d) as unknown as Record<string, unknown>
    c.readinesProbe = c.readinessProbe
    delete c.readinessProbe
    expect(schemaProblems(d)).toEqual([
      '/spec/template/spec/containers/0/readinesProbe: unknown field (not in the Deployment schema)',
    ])
  })

  it('refuses a missing required field and a kind it has no schema for', () => {
    const d = deployment() as unknown as { spec: Record<string, unknown> }
    delete d.spec.selector
    expect(schemaProblems(d as unknown as Manifest)).toEqual(['/spec: must have required property selector'])
    expect(schemaProblems({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual(
      ['example.com/v1/Widget: no schema for this kind in test/e2e/deploy/k8s-schema.ts'],
    )
  })
})
