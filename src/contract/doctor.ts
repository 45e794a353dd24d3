/**
 * `slo-gateway doctor`: the judgment of a config against its engines. It reads the config,
 * each pool's engine facts (subjects.ts), runs every check (findings/registry.ts) and
 * builds the contract (contract.ts). The report is what `doctor --json` prints: its shape
 * is versioned and documented in docs/contract.md.
 */
import type { GatewayConfig } from '../config/schema.js'
import { buildContract, type PoolContract } from './contract.js'
import type { CheckContext, DoctorOptions, Finding, Severity } from './finding.js'
import { CHECKS } from './findings/registry.js'
import { buildSubjects, type SubjectOptions } from './subjects.js'
import { DEFAULT_TYPICAL, type TypicalLengths } from './workload-classes.js'

/** Bumped when a field of the report changes meaning or goes away (adding one does not). */
export const DOCTOR_JSON_VERSION = 1

export interface DoctorReport {
  readonly version: number
  readonly config: string
  /** False when any finding is an error (exit code 1). */
  readonly ok: boolean
  readonly counts: Readonly<Record<Severity, number>>
  readonly findings: readonly Finding[]
  readonly contract: readonly PoolContract[]
}

export interface DoctorRunOptions extends SubjectOptions, DoctorOptions {
  /** Typical lengths per gateway class (from a workload); others get DEFAULT_TYPICAL. */
  readonly typical?: ReadonlyMap<string, TypicalLengths> | undefined
}

const ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2 }

export async function runDoctor(
  config: GatewayConfig,
  file: string,
  opts: DoctorRunOptions,
): Promise<DoctorReport> {
  const { pools, infos } = await buildSubjects(config, opts)
  const typical = (c: string) => opts.typical?.get(c) ?? DEFAULT_TYPICAL
  const ctx: CheckContext = { config, pools, typical, options: { maxRequestKvShare: opts.maxRequestKvShare } }
  const found = CHECKS.flatMap(({ check }) => check(ctx))
  // errors first, then warnings, then what could not be checked; the check order within each
  const findings = [...found, ...infos].sort((a, b) => ORDER[a.severity] - ORDER[b.severity])
  const counts = { error: 0, warning: 0, info: 0 }
  for (const f of findings) counts[f.severity]++
  return {
    version: DOCTOR_JSON_VERSION,
    config: file,
    ok: counts.error === 0,
    counts,
    findings,
    contract: buildContract(config, pools, typical),
  }
}

/** 1 when any finding is an error (CI gates a config change on it), else 0. */
export function doctorExitCode(report: DoctorReport): number {
  return report.ok ? 0 : 1
}
