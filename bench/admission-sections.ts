/**
 * The admission report's parts around the workloads: what the yardsticks were (versions, their
 * settings, the workloads and the time budget), and each workload's section: the comparison
 * with the yardsticks, admission quality, the estimator cold and steady, and the detailed
 * tables of the gateway's own targets, classes, floor, reference and calibration.
 */
import { spawnSync } from 'node:child_process'
import { fmt, type Report } from '../src/loadgen/report.js'
import { goodputTable, qualityTable } from './admission-compare.js'
import type { BenchFile } from './admission-config.js'
import {
  calibrationSection,
  diagnosisSection,
  engineFactsSection,
  estimatorSection,
  referenceSection,
} from './admission-diagnosis.js'
import { floorSection } from './admission-floor.js'
import type { WorkloadRun } from './admission-paths.js'
import { pct, resultsSection, targetsSection } from './admission-report.js'
import type { Workload } from './admission-workloads.js'
import { which } from './processes.js'

/** The first line a binary prints for `-v` (nginx on stderr, HAProxy on stdout). */
function version(bin: string): string {
  const path = which(bin)
  if (path === undefined) return `${bin}: not installed`
  const r = spawnSync(path, ['-v'], { encoding: 'utf8' })
  return `${r.stdout}${r.stderr}`.split('\n')[0]?.trim() || `${bin}: unknown version`
}

export function peerVersions(
  file: BenchFile,
  workloads: readonly Workload[],
  levels: readonly number[],
  paths: readonly string[],
  w: BenchFile['run']['full'],
): string {
  const p = file.peers
  return [
    `Node ${process.version}; ${version('haproxy')}; ${version('nginx')}. Paths: ${paths.join(', ')}; levels ${levels.map((l) => `${l}×`).join(', ')}.`,
    '',
    `**HAProxy** (bench/peers/haproxy-maxconn.cfg, Debian's package, 1 thread): \`maxconn\` per server at ${p.haproxy_maxconn.join(', ')}`,
    `(each run and reported, the best named per level), \`timeout queue ${p.queue_timeout_ms}ms\` (model time, × the time scale), \`balance leastconn\`;`,
    `batch (\`x-priority: batch\`) on a backend of its own with \`maxconn ${p.batch_maxconn}\` per server and a 30 min queue: the best a generic`,
    'proxy can do to isolate a flood. Its levels run back to back after a 1 s warm-up (its queue is bounded, so it is stable).',
    '**nginx** (bench/peers/nginx-pool.conf, 1 worker): a plain reverse proxy, round-robin, no limits; like the direct path, each',
    'level a run of its own from an idle simulator. Two replicas directly: the load generator sends round-robin to them.',
    `**slo-gateway**: a fresh process per workload with its defaults (time-scaled): its first segment, ${w.warmup_s} s at 1×, is the`,
    '*cold start*, whose estimator error is reported apart from the levels after it (steady state).',
    `**Windows** (model s): settle ${w.settle_s}, measured ${w.measure_s}${w.min_requests === undefined ? '' : ` or longer, until ${w.min_requests} interactive requests arrive in it`}, tail ${w.tail_s} per level.`,
    '',
    'Workloads (seed of the file, each its own simulator process):',
    ...workloads.map(
      (x) =>
        `- \`${x.name}\`: ${x.description} Profile \`${x.profile}\`, ${x.replicas} replica(s), time scale ${x.scale}, batch flood ${x.batchLoad}× batch saturation` +
        `${x.ttftPer1k === undefined ? '' : `, length-aware TTFT (+${x.ttftPer1k} ms per 1k prompt tokens, gateway and client alike)`}` +
        `${x.minRequests === undefined ? '' : `, measured windows until ${x.minRequests} interactive requests arrive`}.`,
    ),
  ].join('\n')
}

export interface WorkloadSectionInput {
  readonly workload: Workload
  readonly run: WorkloadRun
  readonly slo: { ttftMs: number; tpotMs: number }
}

export function workloadSection(report: Report, s: WorkloadSectionInput): void {
  const { workload: wl, run } = s
  const cap = run.capacity.cap
  report.heading(`Workload \`${wl.name}\``)
  report.paragraph(
    `${wl.description} 1× = ${fmt(cap.interactiveRps, 2)} interactive req/s (${wl.replicas > 1 ? `${wl.replicas} × one replica's, ` : ''}measured on virtual time); ` +
      `batch flood ${fmt(run.batchRate, 2)} req/s; time scale ${wl.scale} (simulator and SLOs scaled together; figures in model time).` +
      (run.skipped.length > 0 ? ` Skipped: ${run.skipped.join('; ')}.` : ''),
  )
  report.heading(`${wl.name}: interactive goodput against the yardsticks`, 3)
  goodputTable(report, run.levels)
  report.heading(`${wl.name}: admission quality at the client`, 3)
  qualityTable(report, run.levels)
  report.paragraph(
    `Estimator error at the client (|x-gateway-predicted-ttft-ms − client TTFT| / client TTFT, interactive): ` +
      `cold start p50 ${pct(run.cold.medianAbs)}, p90 ${pct(run.cold.p90Abs)} (n=${run.cold.count}); ` +
      `steady state p50 ${pct(run.steady.medianAbs)}, p90 ${pct(run.steady.p90Abs)} (n=${run.steady.count}).`,
  )
  const levels = run.levels
  if (levels.some((l) => l.runs.gateway !== undefined)) {
    report.heading(`${wl.name}: the gateway's own targets (issue 5)`, 3)
    targetsSection(report, levels, cap, s.slo, run.steady, run.batchAlone)
    diagnosisSection(report, levels, s.slo, wl.scale)
  }
  resultsSection(report, levels, cap)
  if (run.floors.length > 0)
    floorSection(
      report,
      run.floors,
      levels.map((l) => l.level),
    )
  if (run.reference.length > 0) referenceSection(report, run.reference, cap)
  estimatorSection(report, levels, wl.scale, cap.stepTime)
  if (run.stateAfter !== undefined) engineFactsSection(report, run.stateAfter, wl.scale, cap.stepTime)
  if (run.stateBefore !== undefined) calibrationSection(report, run.stateBefore, run.stateAfter)
}
