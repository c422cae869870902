// @ts-check
// The sweep CLI's whole JavaScript (pyapp/sweep/driver.py): installed into the page before it
// loads (Playwright's add_init_script). It is only a relay for one long request: it sends a
// protocol message through the page's one entry point, window.lab.send (site/entry.js,
// docs/page.md), hands every event to Python (`__sweepEvent`, exposed by the driver: the
// event's text and the texts beside it, as Python wrote them) and keeps
// the reply in a slot Python polls, so that Python notices Ctrl-C, --timeout and a crashed page
// while the page works. It reads and clicks nothing and touches no other page global
// (tests/test_sweep_driver_js.py checks); everything else Python asks the page with one
// window.lab.send call (pyapp/sweep/panel.py).

/**
 * The relay's slot: the reply's JSON text once it came, or why the call failed.
 * @typedef {{ done: boolean, reply?: string, failure?: string }} Slot
 */
/**
 * @typedef {object} Relay
 * @property {Slot} [slot]
 * @property {(messageJson: string) => void} call
 * @property {() => boolean} callDone
 * @property {() => Slot | undefined} callResult
 */

/** @type {Relay} */
const relay = {
  // Send one protocol request (`{type, id, ...fields}`, pyapp/protocol/messages.py) as its
  // JSON text; `callDone()` / `callResult()` poll it. The slot holds the reply's JSON text.
  call(messageJson) {
    /** @type {Slot} */
    const slot = { done: false };
    this.slot = slot;
    Promise.resolve()
      .then(() => window.lab.send(messageJson, (text, texts) => window.__sweepEvent?.(text, texts ?? {})))
      .then(
        (reply) => {
          slot.reply = reply;
        },
        (/** @type {unknown} */ error) => {
          slot.failure = String(typeof error === "object" && error !== null && "message" in error ? error.message : error);
        },
      )
      .finally(() => {
        slot.done = true;
      });
  },

  callDone() {
    return Boolean(this.slot?.done);
  },

  callResult() {
    return this.slot;
  },
};

window.__sweep = relay;
