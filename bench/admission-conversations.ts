/**
 * Prefix-sharing traffic for the admission bench: the interactive stream recast as chat
 * conversations whose prompts repeat, as real traffic does and as vLLM's (and the simulator's)
 * prefix cache serves from memory:
 *
 * - a shared system prompt heads every conversation;
 * - multi-turn conversations: a later turn's prompt is the whole history (system, the earlier
 *   user messages and the assistant's replies, each reply as long as that turn's output) plus a
 *   new user message, so everything before the newest reply is a prefix the server has seen;
 * - retried requests: a share of the requests repeat a recent request's prompt exactly.
 *
 * Pure and seeded: the structure is drawn per position in the class's sequence (its own
 * sub-stream), so request k is the same conversation turn at every load level; only the
 * drawn new-message length (the sequence's prompt length) and output length come from the
 * sequence itself.
 */
import { deriveSeed, Rng } from '../src/sim/rng.js'

/** One chat message; its text is made from the run's tag and `key` (equal keys, equal text). */
export interface MessagePart {
  readonly role: 'system' | 'user' | 'assistant'
  readonly key: string
  /** Content tokens by the simulator's rule (4 characters each); the message adds 4 more. */
  readonly tokens: number
}

export interface PrefixSpec {
  /** Content tokens of the system prompt every conversation shares. */
  readonly systemTokens: number
  /** Probability that a request opens a new conversation (else it continues an open one). */
  readonly newConversation: number
  /** A conversation closes after this many turns. */
  readonly maxTurns: number
  /** A conversation closes once its prompt would pass this many tokens. */
  readonly maxContextTokens: number
  /** Probability that a request is a retry of one of the last `retryWindow` requests. */
  readonly retry: number
  readonly retryWindow: number
}

/** What a request of the sequence brings: its new user message and output length. */
export interface TurnDraw {
  readonly promptTokens: number
  readonly outputTokens: number
}

export interface ShapedTurn {
  readonly messages: readonly MessagePart[]
  /** Σ content tokens + 4 per message: the simulator's count for the whole prompt. */
  readonly promptTokens: number
  readonly outputTokens: number
  /** Which conversation and turn (a retry repeats its original's). */
  readonly conversation: number
  readonly turn: number
  readonly retry: boolean
}

export const TOKENS_PER_MESSAGE = 4
/** Shortest message content, so its key fits in its text (see messageText). */
export const MIN_CONTENT_TOKENS = 16

export function promptTokensOf(messages: readonly MessagePart[]): number {
  return messages.reduce((a, m) => a + m.tokens + TOKENS_PER_MESSAGE, 0)
}

interface Open {
  readonly id: number
  readonly history: MessagePart[]
  turns: number
  /** Output tokens of its last turn: the length of the reply the next turn carries. */
  lastOutput: number
}

const STREAM_CONVERSATIONS = 3

/** Recasts a sequence of draws as conversation turns (see the file's comment). */
export function shapeConversations(draws: readonly TurnDraw[], p: PrefixSpec, seed: number): ShapedTurn[] {
  const rng = new Rng(deriveSeed(seed, STREAM_CONVERSATIONS))
  const system: MessagePart = {
    role: 'system',
    key: 'system',
    tokens: Math.max(MIN_CONTENT_TOKENS, p.systemTokens),
  }
  const open: Open[] = []
  const out: ShapedTurn[] = []
  let nextId = 0
  for (const [k, d] of draws.entries()) {
    const uRetry = rng.next()
    const uNew = rng.next()
    const uPick = rng.next()
    if (uRetry < p.retry && out.length > 0) {
      const back = Math.min(out.length, p.retryWindow)
      const original = out[out.length - 1 - Math.floor(uPick * back)] as ShapedTurn
      out.push({ ...original, retry: true })
      continue
    }
    const user: MessagePart = {
      role: 'user',
      key: `u${k}`,
      tokens: Math.max(MIN_CONTENT_TOKENS, d.promptTokens),
    }
    let conv: Open | undefined
    if (open.length > 0 && uNew >= p.newConversation) {
      const i = Math.floor(uPick * open.length)
      const c = open[i] as Open
      const reply: MessagePart = {
        role: 'assistant',
        key: `a${c.id}-${c.turns}`,
        tokens: Math.max(MIN_CONTENT_TOKENS, c.lastOutput),
      }
      const grown = promptTokensOf(c.history) + promptTokensOf([reply, user])
      if (c.turns >= p.maxTurns || grown > p.maxContextTokens) open.splice(i, 1)
      else {
        c.history.push(reply)
        conv = c
      }
    }
    if (conv === undefined) {
      conv = { id: nextId++, history: [system], turns: 0, lastOutput: 0 }
      open.push(conv)
    }
    conv.history.push(user)
    conv.turns++
    conv.lastOutput = d.outputTokens
    const messages = [...conv.history]
    out.push({
      messages,
      promptTokens: promptTokensOf(messages),
      outputTokens: d.outputTokens,
      conversation: conv.id,
      turn: conv.turns,
      retry: false,
    })
  }
  return out
}
