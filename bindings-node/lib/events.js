// Native events -> EventEmitter events.
//
// The threading guarantee (every face states it; DESIGN.md, zkrecipes::dispatch): the core
// delivers each object's events one at a time, in the order they happened, from its dispatcher;
// the native layer queues them on one threadsafe function per object, and they reach JS on the
// JS thread that made the object, in that order, never re-entrantly (a listener runs to its end,
// or to its first `await`, before the next event of the object is emitted). A listener may call
// any method, of that object too. Nothing is emitted once the object is collected or closed.
'use strict';

/**
 * The function the native side calls as `emit(name, payload, extra)`. It holds the target only
 * weakly (the native side holds this function, weakly for the event loop), so an unreachable
 * object can be collected. `translate(name, payload, extra)` gives the listener's arguments
 * (default: `[payload]`).
 */
function forwardTo(target, translate = (name, payload) => [payload]) {
  const ref = new WeakRef(target);
  return (name, payload, extra) => {
    ref.deref()?.emit(name, ...translate(name, payload, extra));
  };
}

/**
 * An async iterator over the events pushed to it from now on (`push(ev)`), registered in
 * `iterators` until it ends (`end()`, or the loop breaks); `onEnd()` runs once when it leaves
 * (to remove a listener of its own).
 */
function eventIterator(iterators, onEnd = () => {}) {
  const queue = [];
  let wake = null;
  let done = false;
  let left = false;
  const leave = () => {
    iterators.delete(it);
    if (!left) {
      left = true;
      onEnd();
    }
  };
  const it = {
    push(ev) {
      queue.push(ev);
      if (wake) {
        wake();
        wake = null;
      }
    },
    end() {
      done = true;
      if (wake) {
        wake();
        wake = null;
      }
    },
    async next() {
      while (queue.length === 0 && !done) await new Promise((resolve) => (wake = resolve));
      if (queue.length > 0) return { value: queue.shift(), done: false };
      leave();
      return { value: undefined, done: true };
    },
    async return() {
      done = true;
      queue.length = 0;
      leave();
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return it;
    },
  };
  iterators.add(it);
  return it;
}

module.exports = { forwardTo, eventIterator };
