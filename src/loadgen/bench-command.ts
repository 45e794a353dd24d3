/**
 * `slo-gateway bench`: the workload, then the run against the target (any
 * OpenAI-compatible server, with or without the gateway in front), then the report: printed,
 * and written to --out as bench.json (every request), summary.md and ttft-cdf.svg.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type BenchOptions, runLimits, usage } from './bench-args.js'
import { cdfSeries, outDir, roundedJson } from './bench-files.js'
import { benchMarkdown, type RunInfo } from './bench-markdown.js'
import { ProgressLine } from './bench-progress.js'
import type { LoopMode, RunResult } from './bench-run.js'
import { BenchSession } from './bench-session.js'
import type { BenchSummary } from './bench-summary.js'
import { runLoadCurveCommand } from './sweep-command.js'
import { ttftCdfSvg } from './ttft-cdf-svg.js'
import type { Workload } from './workload-schema.js'

interface RunShape {
  readonly mode: LoopMode
  readonly durationS?: number
  readonly requests?: number
}

/** The flags over the workload's defaults; 60 s when neither sets a limit. */
function runShape(o: BenchOptions, w: Workload): RunShape {
  const mode: LoopMode | undefined =
    o.mode ??
    (w.rate !== undefined
      ? { rate: w.rate }
      : w.concurrency !== undefined
        ? { concurrency: w.concurrency }
        : undefined)
  if (mode === undefined)
    throw usage('set --rate or --concurrency (or rate: or concurrency: in the workload)')
  return { mode, ...runLimits(o, w) }
}

/** bench.json (every request), summary.md and ttft-cdf.svg in `out`; returns their paths. */
function writeOutputs(
  out: string,
  info: RunInfo,
  w: Workload,
  result: RunResult,
  summary: BenchSummary,
  markdown: string,
): string[] {
  mkdirSync(out, { recursive: true })
  const files = ['bench.json', 'summary.md', 'ttft-cdf.svg'].map((f) => join(out, f))
  const { sendLagMs: _lag, ...run } = info
  writeFileSync(files[0]!, roundedJson({ run, workload: w, summary, requests: result.records }))
  writeFileSync(files[1]!, markdown)
  writeFileSync(files[2]!, ttftCdfSvg(cdfSeries(w, result)))
  return files
}

/** Runs the bench (one load, a sweep, or the search for the highest rate within SLO); returns the exit code. */
export async function runBenchCommand(o: BenchOptions): Promise<number> {
  if (o.sweep !== undefined || o.findMaxGoodput === true) return runLoadCurveCommand(o)
  const session = await BenchSession.open({
    target: o.target,
    workload: o.workload,
    ...(o.model === undefined ? {} : { model: o.model }),
    ...(o.seed === undefined ? {} : { seed: o.seed }),
  })
  try {
    const w = session.workload
    const shape = runShape(o, w)
    const tty = process.stderr.isTTY === true
    const progress = new ProgressLine(shape.durationS, shape.requests)
    const { result, summary, info } = await session.run({
      mode: shape.mode,
      ...(shape.durationS === undefined ? {} : { durationS: shape.durationS }),
      ...(shape.requests === undefined ? {} : { requests: shape.requests }),
      ...(o.quiet
        ? {}
        : {
            onProgress: (p) =>
              process.stderr.write(tty ? `\r\x1b[K${progress.line(p)}` : `${progress.line(p)}\n`),
          }),
    })
    if (!o.quiet && tty) process.stderr.write('\n')
    const markdown = benchMarkdown({ ...info, workload: o.workload }, summary, session.slos)
    const files = writeOutputs(outDir(o, result.startedAt), info, w, result, summary, markdown)
    process.stdout.write(`${markdown}\nWrote ${files.join(', ')}\n`)
    return 0
  } finally {
    await session.close()
  }
}
