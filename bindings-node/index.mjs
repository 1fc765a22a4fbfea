// ESM entry of zkrecipes: the same objects as `require('zkrecipes')` (one module instance, so
// owners and errors are shared between `import` and `require` in one process). The names come
// from index.js's export list, not from a copy here.
export * from './index.js';
export { default } from './index.js';
