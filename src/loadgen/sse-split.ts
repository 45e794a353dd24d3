/**
 * Splits a streamed text body into server-sent events on blank lines written as LF LF (as
 * vLLM, OpenAI, the simulator and the trivial upstream write them; not CRLF). Synchronous:
 * a reader stamps each piece as it arrives, and every event completed by it shares that stamp.
 */
export class SseSplitter {
  private carry = ''

  /** Adds a piece of the body; calls `onEvent` with the text of each event it completes. */
  push(piece: string, onEvent: (event: string) => void): void {
    this.carry += piece
    let end = this.carry.indexOf('\n\n')
    while (end >= 0) {
      const event = this.carry.slice(0, end)
      this.carry = this.carry.slice(end + 2)
      onEvent(event)
      end = this.carry.indexOf('\n\n')
    }
  }
}
