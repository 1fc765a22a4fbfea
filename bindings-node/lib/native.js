// The native addon (`zkrecipes.node`, built from src/ with napi-rs) and the core's vocabulary
// it reports. Every other module reaches the native side through this one.
'use strict';

const path = require('node:path');

function load() {
  const file = process.env.ZKRECIPES_NATIVE || path.join(__dirname, '..', 'zkrecipes.node');
  try {
    return require(file);
  } catch (cause) {
    const err = new Error(
      `zkrecipes: cannot load the native addon ${file} (${cause.message}). ` +
        'Build it with `npm run build` in bindings-node (needs Rust), or reinstall the package.',
      { cause },
    );
    err.code = 'ZKR_NATIVE_MISSING';
    throw err;
  }
}

const native = load();

/**
 * Defines read-only properties `names` on `cls`'s prototype that read the same-named property
 * of the object's native half (`nativeOf(object)`): the plain getters of the public classes.
 */
function nativeGetters(cls, nativeOf, names) {
  for (const name of names) {
    Object.defineProperty(cls.prototype, name, {
      get() {
        return nativeOf(this)[name];
      },
      configurable: true,
    });
  }
}

module.exports = { native, nativeGetters };
