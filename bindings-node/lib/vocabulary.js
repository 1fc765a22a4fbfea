// The words every face shares, from the core (DESIGN.md: one vocabulary): error codes, create
// modes, watch event types, connection states, leadership cancel reasons, the kinds of a lost
// lease, log levels. Nothing here is spelled by hand; index.d.ts spells the same lists for
// TypeScript, and a test checks that the two agree.
'use strict';

const { native } = require('./native');

const words = native.vocabulary();

const byName = (names) => Object.freeze(Object.fromEntries(names.map((n) => [n, n])));

/** `err.code` of every error zkrecipes raises, by kind name: `ErrorCode.NO_NODE === 'ZKR_NO_NODE'`. */
const ErrorCode = Object.freeze(Object.fromEntries(words.errorKinds.map(({ name }) => [name, `ZKR_${name}`])));

/** Node types for `client.create(path, data, { mode })`. */
const CreateMode = byName(words.createModes);

/** What a one-shot watch saw (`watch({ type, path })`). */
const WatchedEventType = byName(words.nodeEventTypes);

/** Curator's connection states (`client.on('state', fn)`). */
const ConnectionState = byName(words.connectionStates);

/** Why a LeaderSelector's leadership was cancelled (`ctx.cancelReason`). */
const CancelReason = byName(words.cancelReasons.map((r) => r.name));

/** Why a semaphore's lease was lost (`(await lease.waitLost()).reason`). */
const LeaseLostReason = byName(words.leaseLostReasons);

/** Log levels, most severe first (`setLogger(fn, level)`). */
const LogLevel = byName(words.logLevels);

module.exports = { ErrorCode, CreateMode, WatchedEventType, ConnectionState, CancelReason, LeaseLostReason, LogLevel };
