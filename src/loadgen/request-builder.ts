/**
 * Turns a planned request into the HTTP request sent: the body (chat or completions,
 * streamed with usage), the class as `x-priority` or `service_tier`, the tenant's key, and
 * for a conversation the history before its new turn. Conversations grow: the next arrival
 * of the class continues the oldest one whose last turn has been answered (with the text
 * the server streamed) and whose user has done thinking (the class's `think_ms` after the
 * answer), or starts a new one when none is waiting. A turn refused with a Retry-After goes
 * again, the same turn, once that time has passed, as often as the class's `retries` allow.
 */
import { chatPromptTokens, completionPromptTokens } from '../sim/prompt-tokens.js'
import { Corpus, messageChars, promptChars, promptText } from './prompt-text.js'
import type { PlannedRequest } from './request-plan.js'
import type { StreamRequest, StreamTiming } from './stream-client.js'
import type { Workload } from './workload-schema.js'

interface Message {
  readonly role: 'system' | 'user' | 'assistant'
  readonly content: string
}

export interface Conversation {
  readonly id: number
  readonly classIndex: number
  /** The turns so far, answered (without the system message). */
  readonly history: Message[]
  turn: number
  turnsLeft: number
  /** When its next turn may go (its user done thinking), on the builder's clock, ms. */
  readyAt: number
  /** A refused turn to send again (its new message and max_tokens), if any. */
  retry: { readonly text: string; readonly maxTokens: number } | undefined
  /** Times the turn in hand may still be sent again after a refusal. */
  retriesLeft: number
}

export interface BuiltRequest {
  readonly request: StreamRequest
  /** Prompt tokens sent, by the simulator's rule (4 characters a token, 4 a message), as the gateway estimates. */
  readonly promptTokens: number
  /** max_tokens sent (a retried turn keeps its first attempt's). */
  readonly maxTokens: number
  readonly conversation?: Conversation
  /** A conversation's turn sent again after a refusal. */
  readonly retry?: boolean
  /** The new user message of a conversation's turn (kept in its history when answered). */
  readonly turnText?: string
  /** Its user's think time after the answer, ms (wall: × the time scale). */
  readonly thinkMs?: number
}

export interface BuilderOptions {
  readonly workload: Workload
  readonly model: string
  /** `/v1` or the target's own prefix. */
  readonly pathPrefix: string
  /** Each tenant's API key, by index (undefined: none sent). */
  readonly tenantKeys: readonly (string | undefined)[]
  /** A key for requests of no tenant (OPENAI_API_KEY), if any. */
  readonly defaultKey?: string
  /** Differs between runs, so a second run with the same seed does not hit the first one's cache. */
  readonly runTag: string
  /** Wall ms per model ms: think times are stretched by it, as the bench stretches its objectives (default 1). */
  readonly timeScale?: number
  /** The clock think times run on, ms (default performance.now). */
  readonly now?: () => number
}

export class RequestBuilder {
  private readonly corpus: Corpus
  private readonly system: readonly (string | undefined)[]
  private readonly prefixes: readonly string[]
  private readonly ready: Conversation[][]
  private conversations = 0
  private readonly path: string
  private readonly now: () => number

  constructor(private readonly o: BuilderOptions) {
    this.now = o.now ?? (() => performance.now())
    const w = o.workload
    this.corpus = new Corpus(w.seed)
    this.path = `${o.pathPrefix}/${w.api === 'chat' ? 'chat/completions' : 'completions'}`
    // fixed texts of the class: cut from the corpus where no request's own text is likely to be
    this.system = w.classes.map((c, i) =>
      c.system_prompt_tokens === undefined
        ? undefined
        : `System ${i}. ${this.corpus.slice((i + 0.5) / w.classes.length, messageChars(c.system_prompt_tokens))}`,
    )
    this.prefixes = w.classes.map((c, i) =>
      c.shared_prefix === undefined
        ? ''
        : `Shared ${i}. ${this.corpus.slice((i + 0.25) / w.classes.length, promptChars(c.shared_prefix.tokens))}`,
    )
    this.ready = w.classes.map(() => [])
  }

  private headers(p: PlannedRequest): Record<string, string> {
    const cls = this.o.workload.classes[p.classIndex]!
    const h: Record<string, string> = { 'content-type': 'application/json', ...cls.headers }
    if (cls.priority !== undefined) h['x-priority'] = cls.priority
    const key = p.tenantIndex === undefined ? this.o.defaultKey : this.o.tenantKeys[p.tenantIndex]
    if (key !== undefined) h.authorization = `Bearer ${key}`
    return h
  }

  private conversation(p: PlannedRequest): Conversation {
    const ready = this.ready[p.classIndex]!
    // the oldest answered whose user is done thinking (answered in order, so mostly the first)
    const now = ready.length === 0 ? 0 : this.now()
    const i = ready.findIndex((c) => c.readyAt <= now)
    if (i >= 0) return ready.splice(i, 1)[0]!
    const id = this.conversations++
    const retriesLeft = this.retriesOf(p.classIndex)
    return {
      id,
      classIndex: p.classIndex,
      history: [],
      turn: 0,
      turnsLeft: Math.max(1, p.turns),
      readyAt: 0,
      retry: undefined,
      retriesLeft,
    }
  }

  /** Times a turn of the class's conversations may go again after a refusal. */
  private retriesOf(classIndex: number): number {
    return this.o.workload.classes[classIndex]!.conversation?.retries ?? 0
  }

  build(p: PlannedRequest): BuiltRequest {
    const w = this.o.workload
    const cls = w.classes[p.classIndex]!
    const tag = `[${this.o.runTag}-${p.index}] `
    const prefix = p.sharedPrefix ? this.prefixes[p.classIndex] : ''
    const conv = cls.conversation === undefined ? undefined : this.conversation(p)
    const retry = conv?.retry
    const maxTokens = retry?.maxTokens ?? p.outputTokens
    const common = {
      model: this.o.model,
      max_tokens: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
      ...(w.ignore_eos ? { ignore_eos: true } : {}),
      ...(cls.service_tier === undefined ? {} : { service_tier: cls.service_tier }),
    }
    const request = (body: object, keepText = false): StreamRequest => ({
      path: this.path,
      body: JSON.stringify(body),
      headers: this.headers(p),
      timeoutMs: w.request_timeout_s * 1000,
      keepText,
    })
    if (w.api === 'completions') {
      const prompt = promptText(this.corpus, promptChars(p.promptTokens), tag, p.textOffset, prefix)
      return {
        request: request({ ...common, prompt }),
        promptTokens: completionPromptTokens(prompt),
        maxTokens,
      }
    }
    const text =
      retry?.text ?? promptText(this.corpus, messageChars(p.promptTokens), tag, p.textOffset, prefix)
    const system = this.system[p.classIndex]
    const messages: Message[] = system === undefined ? [] : [{ role: 'system', content: system }]
    if (conv !== undefined) messages.push(...conv.history)
    messages.push({ role: 'user', content: text })
    const chars = messages.reduce((s, m) => s + m.content.length, 0)
    const promptTokens = chatPromptTokens(chars, messages.length)
    const built = { request: request({ ...common, messages }, conv !== undefined), promptTokens, maxTokens }
    if (conv === undefined) return built
    conv.retry = undefined
    const thinkMs = p.thinkMs * (this.o.timeScale ?? 1)
    return {
      ...built,
      conversation: conv,
      turnText: text,
      thinkMs,
      ...(retry === undefined ? {} : { retry: true }),
    }
  }

  /**
   * A turn answered: its conversation goes on (at the next arrival) or ends. A turn refused
   * with a Retry-After is sent again after it while the class's `retries` allow; any other
   * failure ends the conversation.
   */
  settle(built: BuiltRequest, t: StreamTiming): void {
    const conv = built.conversation
    if (conv === undefined || built.turnText === undefined) return
    if (t.status !== 200 || t.error !== undefined) {
      const afterMs = retryAfterMs(t)
      if (conv.retriesLeft <= 0 || afterMs === undefined) return
      conv.retriesLeft--
      conv.retry = { text: built.turnText, maxTokens: built.maxTokens }
      conv.readyAt = this.now() + afterMs
      this.ready[conv.classIndex]!.push(conv)
      return
    }
    conv.history.push({ role: 'user', content: built.turnText }, { role: 'assistant', content: t.text ?? '' })
    conv.turn++
    conv.turnsLeft--
    conv.retriesLeft = this.retriesOf(conv.classIndex)
    conv.readyAt = (built.thinkMs ?? 0) > 0 ? this.now() + built.thinkMs! : 0
    if (conv.turnsLeft > 0) this.ready[conv.classIndex]!.push(conv)
  }
}

/** A refusal's wait before a retry, ms: `retry-after-ms`, else `retry-after` in seconds (undefined: neither, or not a refusal). */
export function retryAfterMs(t: StreamTiming): number | undefined {
  if (t.status !== 429 && t.status !== 503) return undefined
  const ms = Number(t.headers['retry-after-ms'])
  if (t.headers['retry-after-ms'] !== undefined && Number.isFinite(ms) && ms >= 0) return ms
  const s = Number(t.headers['retry-after'])
  if (t.headers['retry-after'] !== undefined && Number.isFinite(s) && s >= 0) return s * 1000
  return undefined
}
