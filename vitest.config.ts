import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests start real servers and time-scaled simulators; running every
    // file at once on a 2-core machine turns timing assertions into CPU-contention noise.
    maxWorkers: 2,
    reporters: ['default'],
  },
})
