// @ts-check
// Test hook, never part of the site: tests/browser/test_accessibility.py and
// scripts/screenshots.py add it as an init script. While window.__gate is a pending promise,
// every message to the model worker waits for it, so a sweep stays in the running state
// (held by an event, not by timing) until window.__openGate() is called.
// window.__closeGateAtTrial(n) closes it once the sweep's trial `n` is done.
(() => {
  const Native = window.Worker;
  window.Worker = class extends Native {
    /**
     * @param {string | URL} url
     * @param {WorkerOptions} [options]
     */
    constructor(url, options) {
      super(url, options);
      this.__model = String(url).includes("model_worker");
    }
    /** @param {[unknown, (StructuredSerializeOptions | Transferable[])?]} args */
    postMessage(...args) {
      const [message, options] = args;
      const post = () => super.postMessage(message, /** @type {StructuredSerializeOptions} */ (options));
      if (this.__model && window.__gate) window.__gate.then(post);
      else post();
    }
  };
  window.__closeGateAtTrial = (after) => {
    const stop = window.lab.experiment.onEvent((event) => {
      if (event.type === "trial_done" && event.index === after) {
        stop();
        window.__closeGate?.();
      }
    });
  };
  window.__closeGate = () => {
    /** @type {Promise<void>} */
    window.__gate = new Promise((open) => {
      window.__openGate = () => {
        window.__gate = null;
        open();
      };
    });
  };
})();
