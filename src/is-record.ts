import { LazyText } from './openai/lazy-text.js'

/**
 * True for a plain JSON object (not null, not an array, not a JSON string left in the body's
 * bytes): the one check for untrusted JSON.
 */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LazyText)
}
