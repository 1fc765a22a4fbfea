// `import { TestingServer } from 'zkrecipes/testing'`: the same objects as the CommonJS entry.
export * from './testing.js';
export { default } from './testing.js';
