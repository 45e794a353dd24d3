import type { BlockHolder, CachedBlock } from './kv-block-manager.js'

export type FinishReason = 'stop' | 'length' | 'abort'

/** Receives a request's tokens as the engine produces them (one per step at most). */
export interface TokenSink {
  /**
   * Called at the end of the step that produced token number `req.numOutput` (1-based).
   * `finish` is set on the last token; after that the sink is never called again.
   */
  onToken(req: SimRequest, finish: FinishReason | null): void
}

export interface SimRequestInit {
  readonly id: string
  readonly promptTokens: number
  /** Output tokens this request will produce before it finishes. */
  readonly targetOutput: number
  /** Finish reason when it reaches `targetOutput`: 'length' when capped by max_tokens, else 'stop'. */
  readonly finishReason: 'stop' | 'length'
  /** Hashes of the prompt's full blocks (prefix caching), or empty. */
  readonly blockHashes: readonly string[]
  readonly sink: TokenSink
  /** Arrival time (ms, engine clock). */
  readonly arrival: number
}

export type RequestState = 'waiting' | 'running' | 'finished' | 'aborted'

/** One sequence in the engine, with the state vLLM's scheduler keeps per request. */
export class SimRequest implements BlockHolder {
  readonly id: string
  readonly promptTokens: number
  readonly targetOutput: number
  readonly finishReason: 'stop' | 'length'
  readonly blockHashes: readonly string[]
  readonly sink: TokenSink
  readonly arrival: number

  state: RequestState = 'waiting'
  /** Tokens whose KV is computed and cached. */
  numComputed = 0
  /** Output tokens produced (and sent) so far. */
  numOutput = 0
  numBlocks = 0
  cached: CachedBlock[] = []
  /** Prompt tokens found in the prefix cache when it was (last) admitted. */
  cachedPromptTokens = 0
  numPreemptions = 0
  /** Set when the client went away; the engine drops the request at its next step. */
  abortRequested = false

  firstScheduled = -1
  firstToken = -1
  lastToken = -1

  constructor(init: SimRequestInit) {
    this.id = init.id
    this.promptTokens = init.promptTokens
    this.targetOutput = init.targetOutput
    this.finishReason = init.finishReason
    this.blockHashes = init.blockHashes
    this.sink = init.sink
    this.arrival = init.arrival
  }

  /** Tokens the sequence holds right now: the prompt plus what it generated. */
  get numTokens(): number {
    return this.promptTokens + this.numOutput
  }

  /** True while the sequence still computes known tokens (prompt, or recomputation after preemption). */
  get inPrefill(): boolean {
    return this.numTokens - this.numComputed > 1 || this.numOutput === 0
  }
}
