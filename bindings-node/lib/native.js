// The native addon (`zkrecipes.node`, built from src/ with napi-rs) and the core's vocabulary
// it reports. Every other module reaches the native side through this one.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { platformName, prebuiltFile } = require('./platform');

/** ZKRECIPES_NATIVE, else a source build (`zkrecipes.node`), else this platform's prebuilt one. */
function addonFile() {
  if (process.env.ZKRECIPES_NATIVE) return process.env.ZKRECIPES_NATIVE;
  const built = path.join(__dirname, '..', 'zkrecipes.node');
  const prebuilt = path.join(__dirname, '..', prebuiltFile());
  return fs.existsSync(built) || !fs.existsSync(prebuilt) ? built : prebuilt;
}

function load() {
  const file = addonFile();
  try {
    return require(file);
  } catch (cause) {
    const err = new Error(
      `zkrecipes: cannot load the native addon ${file} (${cause.message}). ` +
        `This package has no prebuilt addon for ${platformName()}: build it with \`npm run build\` in ` +
        'bindings-node (needs Rust), or install a package built for this platform.',
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
