import { describe, expect, it } from 'vitest'
import { gatewayConfig } from '../admission-child.js'
import { parseFloors } from '../admission-floor.js'

describe('bench:admission --floors', () => {
  it('parses the shares and refuses what is not one', () => {
    expect(parseFloors('0,0.05, 0.2')).toEqual([0, 0.05, 0.2])
    expect(() => parseFloors('0,1.5')).toThrow(/in \[0, 1\]/)
    expect(() => parseFloors('0,,0.2')).toThrow(/--floors/)
    expect(() => parseFloors('a')).toThrow(/--floors/)
  })

  it("sets batch's min_share in the gateway it starts, the shipped one otherwise", () => {
    expect(gatewayConfig('http://127.0.0.1:1', 'm', 2, 0.2).classes.batch?.min_share).toBe(0.2)
    expect(gatewayConfig('http://127.0.0.1:1', 'm', 2, 0).classes.batch?.min_share).toBe(0)
    expect(gatewayConfig('http://127.0.0.1:1', 'm', 2).classes.batch?.min_share).toBe(0.05)
  })
})
