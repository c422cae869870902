// @ts-check
// The probe page (pyapp/host/serve.py write_probe_page: tests, bench): a page of its own, not the
// lab page, that starts one module worker (this script tag's data-worker) and gives the page
// window.probe.call(message): post one message, resolve with the worker's next reply (or
// {ok: false, error} when the worker fails).

/**
 * @typedef {object} Probe
 * @property {Worker} worker
 * @property {(message: unknown) => Promise<unknown>} call
 */

const workerUrl = String(document.currentScript?.dataset.worker);

window.probe = {
  worker: new Worker(workerUrl, { type: "module" }),
  /** @param {unknown} message */
  call(message) {
    return new Promise((done) => {
      this.worker.onmessage = (/** @type {MessageEvent<unknown>} */ { data }) => done(data);
      this.worker.onerror = (error) => done({ ok: false, error: `worker error: ${error.message}` });
      this.worker.postMessage(message);
    });
  },
};
