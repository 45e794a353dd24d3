/** Polls `check` every `everyMs` until it returns a value other than undefined/false; throws after `timeoutMs`. */
export async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  what = 'condition',
  everyMs = 10,
): Promise<T> {
  const start = performance.now()
  for (;;) {
    const v = await check()
    if (v !== undefined && v !== false) return v
    if (performance.now() - start > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
