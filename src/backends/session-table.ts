/**
 * Session affinity's memory: which endpoint each session (`x-session-id`) was last sent to,
 * bounded (the least recently used session forgotten first), O(1) per request. A Map keeps
 * insertion order: deleting and re-inserting a key makes it the most recent.
 */
export class SessionTable {
  private readonly map = new Map<string, string>()

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.map.size
  }

  /** The endpoint the session was last sent to, if remembered (does not change the order). */
  endpointOf(session: string): string | undefined {
    return this.map.get(session)
  }

  sent(session: string, endpoint: string): void {
    this.map.delete(session)
    this.map.set(session, endpoint)
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next()
      if (oldest.done !== true) this.map.delete(oldest.value)
    }
  }
}
