import { describe, expect, it } from 'vitest'
import { SlotMap } from '../../src/slot-map.js'

const key = (id: number) => ({ id, slot: -1 })

describe('SlotMap', () => {
  it('sets, finds and deletes keys in any order, each key keeping its own slot', () => {
    const m = new SlotMap<{ id: number; slot: number }, string>()
    const ks = [key(0), key(1), key(2), key(3)]
    for (const k of ks) m.set(k, `v${k.id}`)
    expect(m.size).toBe(4)
    expect(m.delete(ks[1]!)).toBe(true) // from the middle: the last one takes its slot
    expect(ks[1]!.slot).toBe(-1)
    expect(m.has(ks[1]!)).toBe(false)
    expect(m.delete(ks[1]!)).toBe(false)
    expect(m.has(ks[3]!)).toBe(true)
    expect(m.values().sort()).toEqual(['v0', 'v2', 'v3'])
    expect(m.delete(ks[3]!)).toBe(true) // the moved one is still found by its new slot
    expect(m.delete(ks[0]!)).toBe(true)
    expect([...m]).toEqual(['v2'])
    m.set(ks[2]!, 'again') // setting a key twice replaces its value
    expect(m.size).toBe(1)
    expect([...m]).toEqual(['again'])
  })

  it('does not take a key of another map for one of its own', () => {
    const a = new SlotMap<{ id: number; slot: number }, number>()
    const b = new SlotMap<{ id: number; slot: number }, number>()
    const k = key(7)
    const other = key(8)
    a.set(other, 8)
    a.set(k, 7)
    // b has a member at slot 0 too, but not `k`
    b.set(key(9), 9)
    expect(b.has(k)).toBe(false)
    expect(b.delete(k)).toBe(false)
    expect(a.has(k)).toBe(true)
  })

  it('values() is a copy: deleting while iterating it visits every member once', () => {
    const m = new SlotMap<{ id: number; slot: number }, { id: number; slot: number }>()
    const ks = Array.from({ length: 10 }, (_, i) => key(i))
    for (const k of ks) m.set(k, k)
    const seen: number[] = []
    for (const k of m.values()) {
      seen.push(k.id)
      m.delete(k)
    }
    expect(seen.sort((x, y) => x - y)).toEqual(ks.map((k) => k.id))
    expect(m.size).toBe(0)
  })
})
