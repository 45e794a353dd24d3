import type { ServerResponse } from 'node:http'
import { fillerToken } from './filler.js'
import { type ResponseFrames, SSE_DONE } from './openai-chunks.js'
import type { FinishReason, SimRequest, TokenSink } from './sim-request.js'

/** Streams one SSE event per token; the last carries finish_reason, then usage (if asked) and [DONE]. */
export class StreamingSink implements TokenSink {
  constructor(
    private readonly res: ServerResponse,
    private readonly frames: ResponseFrames,
    private readonly includeUsage: boolean,
    private readonly onDone: () => void,
  ) {}

  onToken(req: SimRequest, finish: FinishReason | null): void {
    const n = req.numOutput
    const chunk = this.frames.chunk(fillerToken(n - 1), n === 1, finish)
    if (finish === null) {
      this.res.write(chunk)
      return
    }
    const tail =
      this.frames.streamEnd?.(req.promptTokens, n, finish) ??
      (this.includeUsage ? this.frames.usage(req.promptTokens, n) : '') + SSE_DONE
    this.onDone()
    this.res.end(chunk + tail)
  }
}

/** Answers once, when the last token is produced, with the whole completion and usage. */
export class BufferedSink implements TokenSink {
  constructor(
    private readonly res: ServerResponse,
    private readonly frames: ResponseFrames,
    private readonly onDone: () => void,
  ) {}

  onToken(req: SimRequest, finish: FinishReason | null): void {
    if (finish === null) return
    this.onDone()
    const body = this.frames.body(req.numOutput, finish, req.promptTokens)
    this.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    this.res.end(body)
  }
}
