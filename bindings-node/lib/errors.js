// Errors raised by the JS layer itself: plain `Error`s with API.md's `code`, the same shape as
// the native layer's (which adds `zkCode`, ZooKeeper's own code, where the server gave one).
'use strict';

const { ErrorCode } = require('./vocabulary');

function zkrError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

/** A `ZKR_INVALID_ARGUMENT` error. */
function invalid(message) {
  return zkrError(ErrorCode.INVALID_ARGUMENT, message);
}

/** A value, briefly, for a message. */
function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v);
  if (typeof v === 'object') return `an object (${v.constructor?.name ?? 'Object'})`;
  if (typeof v === 'function') return 'a function';
  return String(v);
}

module.exports = { zkrError, invalid, describe };
