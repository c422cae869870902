// A fake clock for the tests' Node.js scripts that run site/model_client.js
// (tests/model_client_clock_node.mjs, tests/model_mailbox_node.mjs): setTimeout, clearTimeout
// and performance.now are virtual, so nothing waits for real time. Import it before the code
// under test (which the scripts import dynamically, after this module has run).

let now = 0;
let nextTimer = 1;
const timers = new Map(); // id -> {at, fn}
globalThis.setTimeout = (fn, ms = 0) => {
  const id = nextTimer++;
  timers.set(id, { at: now + Math.max(0, Number(ms) || 0), fn });
  return id;
};
globalThis.clearTimeout = (id) => timers.delete(id);
Object.defineProperty(globalThis, "performance", { value: { now: () => now }, configurable: true });
globalThis.location = { href: "http://127.0.0.1:8000/" };

const flush = () => new Promise((resolve) => setImmediate(resolve));

export const clock = {
  now: () => now,

  // One turn of the event loop (what settle does between timers).
  flush,

  // A new scenario: the clock at 0, no timer pending.
  reset() {
    now = 0;
    timers.clear();
  },

  // Run `promise` to its end, the clock jumping to each pending timer in time order. With
  // `together`, the timers due at the same instant fire together, in creation order, with no
  // turn of the event loop between them (so a reply and a hard stop can truly race); without
  // it, one timer fires per turn.
  async settle(promise, { together = false } = {}) {
    let done = false;
    let value;
    promise.then((v) => {
      done = true;
      value = v;
    });
    for (let guard = 0; guard < 100_000; guard++) {
      for (let i = 0; i < 5; i++) await flush();
      if (done) return value;
      const due = [...timers.entries()].sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
      if (!due.length) throw new Error("nothing left to run and the call has not ended");
      const at = due[0][1].at;
      now = Math.max(now, at);
      for (const [id, timer] of together ? due.filter(([, timer]) => timer.at === at) : due.slice(0, 1)) {
        timers.delete(id);
        timer.fn();
      }
    }
    throw new Error("too many timers");
  },
};
