import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  loadWorkload,
  parseLengths,
  WorkloadError,
  workloadKeyPaths,
} from '../../../src/loadgen/workload-load.js'

const dir = mkdtempSync(join(tmpdir(), 'workload-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const WORKLOADS = join(import.meta.dirname, '..', '..', '..', 'config', 'workloads')

function write(name: string, text: string): string {
  const file = join(dir, name)
  writeFileSync(file, text)
  return file
}

/** The problems loading `text` reports, without the file name. */
function problems(text: string, name = 'w.yaml'): string[] {
  const file = write(name, text)
  try {
    loadWorkload(file)
  } catch (err) {
    expect(err).toBeInstanceOf(WorkloadError)
    return (err as WorkloadError).problems.map((p) => {
      expect(p.startsWith(`${file}: `)).toBe(true)
      return p.slice(file.length + 2)
    })
  }
  throw new Error('no problem reported')
}

const CLASS = `
  - name: interactive
    prompt_tokens: 100
    output_tokens: { dist: uniform, min: 10, max: 20 }`

describe('workload files', () => {
  it('a minimal file gets its defaults: poisson, seed 1, a bare number is a fixed length', () => {
    const { workload } = loadWorkload(write('ok.yaml', `classes:${CLASS}\n`))
    expect(workload.arrival).toEqual({ process: 'poisson', burstiness: 1 })
    expect(workload.seed).toBe(1)
    expect(workload.api).toBe('chat')
    expect(workload.classes[0]!.prompt_tokens).toEqual({ dist: 'fixed', value: 100 })
    expect(workload.classes[0]!.slo).toEqual({})
  })

  it('reports every mistake at once, in file order, each with its path', () => {
    const got = problems(`
rate: fast
arrival: { process: gama, burstiness: 0 }
classes:
  - name: interactive
    prompt_token: 100
    output_tokens: { dist: lognormal, median: 100, sigma: -1 }
  - name: interactive
    prompt_tokens: { dist: uniform, min: 50, max: 10 }
    output_tokens: { dist: normal, mean: 4 }
    slo: { ttft: 500 }
`)
    expect(got).toEqual([
      "rate: expected a number, got 'fast'",
      'arrival.process: expected one of "poisson", "gamma", got \'gama\': did you mean \'gamma\'?',
      'arrival.burstiness: expected a positive number, got 0',
      'classes[0].prompt_tokens: missing, expected a length (a number, or a mapping with dist: fixed, uniform, lognormal, file or mixture)',
      "classes[0]: unknown key 'prompt_token': did you mean 'prompt_tokens'?",
      'classes[0].output_tokens.sigma: expected a positive number, got -1',
      'classes[1].prompt_tokens.max: expected a number >= min',
      'classes[1].output_tokens.dist: expected one of "fixed", "uniform", "lognormal", "file", "mixture", got \'normal\'',
      "classes[1].slo: unknown key 'ttft': did you mean 'ttft_ms'?",
    ])
  })

  it('checks names across the file: duplicate classes, tenants sending unknown classes', () => {
    const got = problems(`
tenants:
  - { name: acme, api_key: k1, classes: [interactve] }
classes:${CLASS}${CLASS}
`)
    expect(got).toContain("classes[1].name: duplicate class 'interactive'")
    expect(got).toContain("tenants[0].classes[0]: no class 'interactve' (classes: interactive)")
    expect(got).toContain("classes[0]: no tenant sends class 'interactive'")
  })

  it('an unknown key names what the mapping takes when nothing is close', () => {
    expect(problems(`classes:${CLASS}\n    xyzzy: 1\n`)).toEqual([
      "classes[0]: unknown key 'xyzzy' (it takes: name, share, priority, service_tier, headers, prompt_tokens, output_tokens, system_prompt_tokens, shared_prefix, conversation, slo)",
    ])
  })

  it('a YAML syntax error is one line with the file', () => {
    const got = problems('classes: [\n')
    expect(got).toHaveLength(1)
  })

  it('reads JSONL lengths relative to the workload file; a bad line names its file and line', () => {
    writeFileSync(
      join(dir, 'lengths.jsonl'),
      '{"input": 120, "output": 30}\n\n{"input": 800, "output": 12}\n',
    )
    const ok = loadWorkload(
      write(
        'file.yaml',
        `classes:
  - name: trace
    prompt_tokens: { dist: file, path: lengths.jsonl, field: input, order: sequential }
    output_tokens: { dist: file, path: lengths.jsonl, field: output, order: sequential }
`,
      ),
    )
    expect([...ok.tables.values()]).toEqual([
      [120, 800],
      [30, 12],
    ])
    writeFileSync(join(dir, 'bad.jsonl'), '5\n"six"\n')
    expect(
      problems(`classes:
  - name: trace
    prompt_tokens: { dist: file, path: bad.jsonl }
    output_tokens: { dist: file, path: missing.jsonl }
`),
    ).toEqual([
      `classes[0].prompt_tokens.path: bad.jsonl:2: expected a positive integer, got "six"`,
      "classes[0].output_tokens.path: cannot read 'missing.jsonl' (ENOENT)",
    ])
  })

  it('parseLengths: a number per line, or the field of an object', () => {
    expect(parseLengths('1\n2\n', 'f', undefined)).toEqual([1, 2])
    expect(() => parseLengths('{"a": 1}\n', 'f', 'b')).toThrow(
      "f:1: expected a positive integer in 'b', got nothing",
    )
    expect(() => parseLengths('\n', 'f', undefined)).toThrow('f: no lengths in it')
  })

  it('every shipped workload in config/workloads/ is valid', () => {
    const files = readdirSync(WORKLOADS).filter((f) => f.endsWith('.yaml') && f !== 'admission.yaml')
    expect(files.length).toBeGreaterThanOrEqual(5)
    for (const f of files) expect(() => loadWorkload(join(WORKLOADS, f)), f).not.toThrow()
  })
})

describe('docs/workloads.md', () => {
  const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'workloads.md'), 'utf8')
  const documented = new Set([...doc.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]))

  it('documents every key of the workload schema, and none it lacks', () => {
    const keys = workloadKeyPaths()
    expect(keys.filter((k) => !documented.has(k))).toEqual([])
    expect([...documented].filter((k) => k !== undefined && !keys.includes(k))).toEqual([])
  })
})
