// The sweep CLI's whole JavaScript (pyapp/sweep/driver.py): installed into the page before it
// loads (Playwright's add_init_script). Python calls these as `window.__sweep.NAME(...)`; every
// function reads or clicks what a user would, or sends a protocol message through the page's
// one entry point, window.lab.send (site/entry.js, docs/page.md) — no other page global is
// touched (tests/test_sweep_driver_js.py checks). Nothing here decides anything about the protocol.

window.__sweep = {
  // ---- page state ------------------------------------------------------------------------

  // #app's data-state once the boot has ended (ready, done or error), else null.
  bootState() {
    const state = document.querySelector("#app")?.dataset.state;
    return ["ready", "done", "error"].includes(state) ? state : null;
  },

  // The Models panel has its catalogue and has checked the backends.
  modelsReady() {
    const choice = document.querySelector("#model-choice");
    const backend = document.querySelector("#backend-status");
    return Boolean(choice && choice.options.length > 1 && backend && !backend.textContent.startsWith("Checking"));
  },

  // The dtypes the Models panel offers for the chosen model and backend.
  dtypes() {
    return [...document.querySelectorAll("#model-dtype option")].map((option) => option.value);
  },

  consentOpen() {
    return document.querySelector("#consent-dialog").open;
  },

  // The consent dialog is open, or the load has already started or ended.
  consentOrLoad() {
    return this.consentOpen() || ["failed", "loading", "loaded"].includes(document.querySelector("#models").dataset.state);
  },

  loadEnded() {
    return ["failed", "loaded"].includes(document.querySelector("#models").dataset.state);
  },

  // The page's one entry point for drivers is there (site/entry.js).
  hasEntryPoint() {
    return typeof window.lab?.send === "function";
  },

  // ---- the experiment ----------------------------------------------------------------------

  // Once a stop is asked for, cancel right after a trial is done (before the next one starts),
  // so that no generation is cut short: the page's Cancel button, as a user would.
  stop() {
    this.stopAsked = true;
  },

  // Send one protocol request (`{type, id, ...fields}`, pyapp/protocol/messages.py) through
  // window.lab.send, relaying every event to Python (`__sweepEvent`, exposed by the driver) as
  // the text Python sent; `callDone()` / `callResult()` poll it, so that Python notices Ctrl-C,
  // --timeout and a crashed page while the page works. The slot holds the reply's JSON text.
  call(messageJson) {
    const slot = { done: false };
    this.slot = slot;
    const relay = (text) => {
      window.__sweepEvent(text);
      if (this.stopAsked && JSON.parse(text).type === "trial_done") document.querySelector("#sweep-cancel").click();
    };
    Promise.resolve()
      .then(() => window.lab.send(messageJson, relay))
      .then(
        (reply) => {
          slot.reply = reply;
        },
        (error) => {
          slot.failure = String(error?.message ?? error);
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
