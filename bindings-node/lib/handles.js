// The native half behind a public object that another recipe takes as an argument (a counter
// for the cached counters, a SharedCount for the count-driven semaphore). Module-internal:
// index.js does not re-export it.
'use strict';

const { invalid, describe } = require('./errors');

const natives = new WeakMap();

/** Records `nativeObject` as the native half of `object`. */
function registerNative(object, nativeObject) {
  natives.set(object, nativeObject);
}

/** The native half of `object` if it is an instance of `cls` (else ZKR_INVALID_ARGUMENT naming `what`). */
function nativeOf(what, object, cls) {
  if (!(object instanceof cls)) throw invalid(`${what} must be a ${cls.name}, got ${describe(object)}`);
  return natives.get(object);
}

module.exports = { registerNative, nativeOf };
