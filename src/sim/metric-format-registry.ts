import { METRIC_FORMAT_NAMES, type MetricFormat, type MetricFormatName } from './metric-format.js'
import { llamacppFormat } from './metric-formats/llamacpp.js'
import { sglangFormat } from './metric-formats/sglang.js'
import { tgiFormat } from './metric-formats/tgi.js'
import { trtllmFormat } from './metric-formats/trtllm.js'
import { vllmFormat } from './metric-formats/vllm.js'
import { vllmV0Format } from './metric-formats/vllm-v0.js'

const REGISTRY: Readonly<Record<MetricFormatName, MetricFormat>> = {
  vllm: vllmFormat,
  'vllm-v0': vllmV0Format,
  sglang: sglangFormat,
  tgi: tgiFormat,
  llamacpp: llamacppFormat,
  trtllm: trtllmFormat,
}

export function isMetricFormatName(name: string): name is MetricFormatName {
  return (METRIC_FORMAT_NAMES as readonly string[]).includes(name)
}

export function getMetricFormat(name: MetricFormatName): MetricFormat {
  return REGISTRY[name]
}
