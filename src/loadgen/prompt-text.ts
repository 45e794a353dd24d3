/**
 * Prompt text of a given token length, without a tokenizer: words from a seeded corpus, four
 * characters a token (the simulator's rule, close to what BPE tokenizers make of English),
 * four tokens more per chat message. Each prompt begins with a tag unique to its request, so
 * no two share a prefix a server could cache, unless a shared prefix is asked for: then the
 * same text comes first and the tag after it.
 */
import { CHARS_PER_TOKEN, TOKENS_PER_MESSAGE } from '../sim/prompt-tokens.js'
import { Rng } from '../sim/rng.js'

const WORDS = (
  'the of and to in is for on that by this with you it not or be are from at as your all have new more an was ' +
  'we will can us about if page my has search free but our one other do no information time they site he up ' +
  'may what which their news out use any there see only so his when contact here business who web also now ' +
  'help get view online first am been would how were me some these click its like service than find price ' +
  'date back top people had list name just over state year day into email two health world next used go work'
).split(' ')

/** A long text of seeded words that prompts are cut from. */
export class Corpus {
  private text = ''
  private readonly rng: Rng

  constructor(seed: number) {
    this.rng = new Rng(seed)
    this.grow(1 << 16)
  }

  private grow(chars: number): void {
    const parts: string[] = [this.text]
    let n = this.text.length
    while (n < chars) {
      const w = WORDS[Math.floor(this.rng.next() * WORDS.length)]!
      parts.push(w, ' ')
      n += w.length + 1
    }
    this.text = parts.join('')
  }

  /** `chars` characters from `offset` (wrapped); the corpus grows to twice the longest asked for. */
  slice(offset: number, chars: number): string {
    if (chars <= 0) return ''
    if (this.text.length < 2 * chars) this.grow(2 * chars)
    const start = Math.floor(offset * (this.text.length - chars))
    return this.text.slice(start, start + chars)
  }
}

/** Characters of a chat message's content that make `tokens` tokens (its 4 of overhead taken off). */
export function messageChars(tokens: number): number {
  return Math.max(1, tokens - TOKENS_PER_MESSAGE) * CHARS_PER_TOKEN
}

/** Characters of a completions prompt of `tokens` tokens. */
export function promptChars(tokens: number): number {
  return tokens * CHARS_PER_TOKEN
}

/**
 * A text of `chars` characters: `prefix` (cut to fit), then `tag`, then corpus words from a
 * random place. The tag makes it unique; the prefix, when given, is what it shares.
 */
export function promptText(corpus: Corpus, chars: number, tag: string, offset: number, prefix = ''): string {
  const head = prefix.slice(0, Math.max(0, chars - tag.length))
  const rest = chars - head.length - tag.length
  if (rest <= 0) return (head + tag).slice(0, Math.max(chars, tag.length))
  return head + tag + corpus.slice(offset, rest)
}
