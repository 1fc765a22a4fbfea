// Logging, opt-in: the core's log records (connection states, retries, session expiry, lost
// holds and leadership, corrupted nodes) delivered to a function, or to stderr when the
// environment says `ZKRECIPES_LOG=debug` (any level name; `off` turns it off).
'use strict';

const { native } = require('./native');
const args = require('./args');

/**
 * Sends zkrecipes' log records of `level` ('INFO' by default; see `LogLevel`) and more severe
 * to `sink({ level, target, message, fields })`, one at a time, in order, on this JS thread;
 * replaces an earlier sink (one per process: the last call wins, across worker threads).
 * `setLogger(null)` turns logging off. Records never keep the event loop alive.
 */
function setLogger(sink, level) {
  if (sink === undefined || sink === null) {
    native.setLogger(undefined, undefined);
    return;
  }
  args.func('sink', sink);
  native.setLogger((_name, record, fields) => {
    try {
      sink({ ...record, fields: Object.fromEntries(fields) });
    } catch (err) {
      process.emitWarning(`zkrecipes: the log sink threw: ${err?.stack ?? err}`, { code: 'ZKR_LOG_SINK_ERROR' });
    }
  }, args.optionalString('level', level));
}

/** The sink of `ZKRECIPES_LOG`: one line per record on stderr. */
function stderrSink({ level, target, message }) {
  process.stderr.write(`zkrecipes ${level} ${target}: ${message}\n`);
}

// `ZKRECIPES_LOG=warn` (any level name) logs to stderr from the start.
const fromEnv = process.env.ZKRECIPES_LOG;
if (fromEnv && fromEnv.toLowerCase() !== 'off') {
  try {
    setLogger(stderrSink, fromEnv);
  } catch (err) {
    process.emitWarning(`zkrecipes: ZKRECIPES_LOG=${fromEnv} ignored: ${err.message}`, { code: 'ZKR_LOG_ENV' });
  }
}

module.exports = { setLogger };
