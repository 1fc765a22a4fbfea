// Argument checks of the JS layer: TYPES only, so that a wrong type rejects with
// `ZKR_INVALID_ARGUMENT` instead of a napi type error, and option NAMES, so that a misspelled
// option is refused instead of silently ignored. Values (paths, timeouts, ranges, modes) are
// checked once, by the native layer and the core.
'use strict';

const { invalid, describe } = require('./errors');

// Levenshtein distance, case-insensitive: how far a misspelled option is from a valid one.
function distance(a, b) {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** The valid name nearest to `name`. */
function nearest(name, valid) {
  return valid.reduce((best, v) => (distance(name, v) < distance(name, best) ? v : best));
}

/**
 * An options object (`undefined`/`null`: `{}`) whose keys are all in `keys`; an unknown key is
 * refused, naming the nearest valid one (`{ sessionTimeout }`: did you mean sessionTimeoutMs?).
 */
function options(what, v, keys) {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw invalid(`${what} must be an options object, got ${describe(v)}`);
  }
  for (const key of Object.keys(v)) {
    if (!keys.includes(key)) {
      throw invalid(
        `${what}: unknown option ${JSON.stringify(key)} (did you mean ${nearest(key, keys)}?); ` +
          `valid options: ${keys.join(', ')}`,
      );
    }
  }
  return v;
}

function string(what, v) {
  if (typeof v !== 'string') throw invalid(`${what} must be a string, got ${describe(v)}`);
  return v;
}

/** A string, or `undefined` when omitted (`undefined`/`null`). */
function optionalString(what, v) {
  return v === undefined || v === null ? undefined : string(what, v);
}

/** A ZooKeeper path (the core applies ZooKeeper's path rules and names the path). */
const path = string;

function func(what, v) {
  if (typeof v !== 'function') throw invalid(`${what} must be a function, got ${describe(v)}`);
  return v;
}

function bool(what, v, dflt) {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw invalid(`${what} must be a boolean, got ${describe(v)}`);
  return v;
}

/**
 * Milliseconds, by the core's timeout contract: omitted (`undefined`/`null`) or `Infinity` is
 * no limit, 0 tries once; the native layer refuses negative values and NaN.
 */
function ms(what, v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number') throw invalid(`${what} must be a number of milliseconds, got ${describe(v)}`);
  return v;
}

/** The `timeoutMs` of an options object that takes nothing else (`{ timeoutMs }`). */
function timeoutOption(v) {
  return ms('timeoutMs', options('options', v, ['timeoutMs']).timeoutMs);
}

/** A required number of milliseconds. */
function requiredMs(what, v) {
  const m = ms(what, v);
  if (m === undefined) throw invalid(`${what} is required (a number of milliseconds)`);
  return m;
}

/** A number, or `undefined` when omitted (`undefined`/`null`); its value is checked natively. */
function number(what, v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number') throw invalid(`${what} must be a number, got ${describe(v)}`);
  return v;
}

function integer(what, v, min, max) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(`${what} must be an integer in ${min}..${max}, got ${describe(v)}`);
  }
  return v;
}

const int32 = (what, v, min = -2147483648) => integer(what, v, min, 2147483647);
const uint32 = (what, v) => integer(what, v, 0, 4294967295);

/** A required 32-bit integer. */
function requiredInt32(what, v) {
  const i = int32(what, v);
  if (i === undefined) throw invalid(`${what} is required (a 32-bit integer)`);
  return i;
}

/** A required unsigned 32-bit integer. */
function requiredUint32(what, v) {
  const i = uint32(what, v);
  if (i === undefined) throw invalid(`${what} is required (a non-negative integer)`);
  return i;
}

/** A 64-bit signed value: a BigInt, or a number that is a safe integer. */
function int64(what, v) {
  let b;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
  else throw invalid(`${what} must be a BigInt or a safe integer number, got ${describe(v)}`);
  if (b < -(2n ** 63n) || b >= 2n ** 63n) throw invalid(`${what} ${b} does not fit a signed 64-bit integer`);
  return b;
}

/** Node data: a Buffer, any Uint8Array, or a string (UTF-8); `undefined` when omitted. */
function buffer(what, v, { optional = true } = {}) {
  if (v === undefined || v === null) {
    if (optional) return undefined;
    throw invalid(`${what} is required`);
  }
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  throw invalid(`${what} must be a Buffer, Uint8Array or string, got ${describe(v)}`);
}

/** An instance of `cls`, or `undefined` when omitted. */
function instance(what, v, cls, hint = cls.name) {
  if (v === undefined || v === null) return undefined;
  if (!(v instanceof cls)) throw invalid(`${what} must be ${hint}, got ${describe(v)}`);
  return v;
}

/** An async method body: argument errors become rejections, never synchronous throws. */
function rejecting(fn) {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

module.exports = {
  options,
  string,
  optionalString,
  path,
  func,
  bool,
  ms,
  timeoutOption,
  requiredMs,
  number,
  int32,
  uint32,
  requiredInt32,
  requiredUint32,
  int64,
  buffer,
  instance,
  rejecting,
};
