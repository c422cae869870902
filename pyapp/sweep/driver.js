// The sweep CLI's whole JavaScript (pyapp/sweep/driver.py): installed into the page before it
// loads (Playwright's add_init_script). Python calls these as `window.__sweep.NAME(...)`; every
// function reads or clicks what a user would, or calls the page's own experiment API
// (window.lab.experiment, docs/page.md). Nothing here decides anything about the protocol.

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

  modelState() {
    return window.lab.models.state ? window.lab.models.state() : window.lab.models.client.provenance();
  },

  hasExperiment() {
    return Boolean(window.lab && window.lab.experiment && typeof window.lab.experiment.start === "function");
  },

  hello() {
    return window.lab.request("hello");
  },

  // ---- the experiment ----------------------------------------------------------------------

  // Relay every event to Python (`__sweepEvent`, exposed by the driver) as the text Python
  // sent; once a stop is asked for, cancel right after a trial is done (before the next
  // one starts), so that no generation is cut short.
  listen() {
    window.lab.experiment.onEvent((event, text) => {
      window.__sweepEvent(text);
      if (event.type === "trial_done" && this.stopAsked) window.lab.experiment.cancel();
    });
  },

  stop() {
    this.stopAsked = true;
  },

  // Start `window.lab.experiment[method](...args)`; `callDone()` / `callResult()` poll it, so
  // that Python notices Ctrl-C, --timeout and a crashed page while the page works.
  call(method, args) {
    const slot = { done: false };
    this.slot = slot;
    Promise.resolve()
      .then(() => window.lab.experiment[method](...args))
      .then(
        (value) => {
          slot.ok = true;
          slot.value = value;
        },
        (error) => {
          slot.ok = false;
          slot.error = String(error?.message ?? error);
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
