/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // tsconfig.json sets isolatedModules: ts-jest transpiles each file alone (type errors are `npm run
  // typecheck`'s, which CI runs first), about half the suite's start-up time on a fresh clone.
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  setupFiles: ['<rootDir>/test/support/setup-env.ts'],
  testTimeout: 30000,
  maxWorkers: 2,
};
