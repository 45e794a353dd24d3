import { readFileSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'
import { profileFileSchema, profileFromFile, type SimProfile } from './profile-schema.js'

/** config/sim-profiles/, found from this file both in src/sim (tsx) and in dist/sim (built). */
export const PROFILES_DIR = fileURLToPath(new URL('../../config/sim-profiles/', import.meta.url))

export const DEFAULT_PROFILE = 'llama-3.1-8b-h100'

export class ProfileError extends Error {
  override readonly name = 'ProfileError'
}

/** A name ("tiny") is looked up in config/sim-profiles/; anything with a slash or .yaml is a path. */
export function resolveProfilePath(nameOrPath: string): string {
  const looksLikePath = nameOrPath.includes('/') || nameOrPath.includes('\\') || /\.ya?ml$/i.test(nameOrPath)
  if (!looksLikePath) return resolve(PROFILES_DIR, `${nameOrPath}.yaml`)
  return isAbsolute(nameOrPath) ? nameOrPath : resolve(process.cwd(), nameOrPath)
}

/** Reads and validates a profile; errors name the file, the key path and what was expected. */
export function loadProfile(nameOrPath: string = DEFAULT_PROFILE): SimProfile {
  const file = resolveProfilePath(nameOrPath)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (cause) {
    throw new ProfileError(`sim profile "${nameOrPath}": cannot read ${file}`, { cause })
  }
  return parseProfileText(text, file)
}

export function parseProfileText(text: string, source: string): SimProfile {
  let raw: unknown
  try {
    raw = parseYaml(text)
  } catch (cause) {
    throw new ProfileError(`${source}: not valid YAML`, { cause })
  }
  const parsed = profileFileSchema.safeParse(raw)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`)
    throw new ProfileError(`${source}: invalid sim profile\n${lines.join('\n')}`)
  }
  return profileFromFile(parsed.data)
}
