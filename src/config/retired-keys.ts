/**
 * Keys the gateway once took and has replaced: a config that still sets one is refused
 * with what replaced it, not with "unknown key" and a list to guess from.
 */
import type { Path } from './format-issues.js'

/** By generalised path (`classes.<name>.x`, `backends.pools[].x`): what to write instead. */
const RETIRED: Readonly<Record<string, string>> = {
  'admission.aging_ms':
    'replaced by classes.<name>.min_share, the share (0..1) of the prompt tokens a pool dispatches ' +
    'that a class gets while it has requests queued (batch: 0.05 by default); remove aging_ms',
}

function generalise(path: Path): string {
  let out = ''
  path.forEach((seg, i) => {
    if (typeof seg === 'number') out += '[]'
    else if (i === 1 && path[0] === 'classes') out += '.<name>'
    else out += out === '' ? String(seg) : `.${String(seg)}`
  })
  return out
}

/** What replaced `key` under `path`, when it is a retired key. */
export function retiredKey(path: Path, key: string): string | undefined {
  return RETIRED[generalise([...path, key])]
}
