// Test hook, never part of the site: tests/browser/test_accessibility.py and
// scripts/screenshots.py add it as an init script. While window.__gate is a pending promise,
// every message to the model worker waits for it, so a sweep stays in the running state
// (held by an event, not by timing) until window.__openGate() is called.
// window.__closeGateAtTrial(n) closes it once the sweep's trial `n` is done.
(() => {
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(url, options) {
      super(url, options);
      this.__model = String(url).includes("model_worker");
    }
    postMessage(...args) {
      if (this.__model && window.__gate) window.__gate.then(() => super.postMessage(...args));
      else super.postMessage(...args);
    }
  };
  window.__closeGateAtTrial = (after) => {
    const stop = window.lab.experiment.onEvent((event) => {
      if (event.type === "trial_done" && event.index === after) {
        stop();
        window.__closeGate();
      }
    });
  };
  window.__closeGate = () => {
    window.__gate = new Promise((open) => {
      window.__openGate = () => {
        window.__gate = null;
        open();
      };
    });
  };
})();
