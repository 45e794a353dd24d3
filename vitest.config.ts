import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        // the project's own benchmarks keep their unit tests beside them (bench/ never ships)
        extends: true,
        test: { name: 'bench', include: ['bench/test/**/*.test.ts'] },
      },
      {
        // Integration and e2e tests start real servers, time-scaled simulators and child
        // processes, and some check timing (a chunk relayed within 20 ms). On a 2-core
        // machine two such files at once turn those checks into CPU-contention noise, so
        // these files run one at a time.
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
})
