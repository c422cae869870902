// @ts-check
// The page's half of the model mailbox (site/common/model_mailbox.js): Python's generate requests
// reach the model worker without the main thread in their path, and the page still owns and
// supervises the worker. Used by site/model_client.js (one DirectCalls per client).
//
// - attach(buffer, debug): Python's mailbox ({model_mailbox: buffer}, posted by the Python
//   worker once); handed to the running model worker and to every worker spawned after it
//   (spawned), with the page's default generate `debug`; then `attached` = 1: Python calls
//   through it from then on (before: PyScript's sync channel, ModelClient.call).
// - the gate (`direct_until`): the model worker takes generation n itself while n is at most
//   the generation before the next fault hook, with a model loaded; 0 otherwise (loading,
//   unloaded, failed, none). Set at every state change of the client and after every
//   generation the page ran. Generation numbers come from the mailbox's shared counter.
// - the page takes a request the worker may not (compare-exchange request -> page) and answers
//   it with ModelClient.call: a pending load's wait, not_loaded and its reload, the fault
//   hooks, as before.
// - a request the worker took is supervised as the page's own are: the soft deadline
//   (interrupt), the hard stop (terminate after GRACE_MS, judged stalled or the model's
//   timeout), Cancel, a crash or termination (a failed reply). The page's reply and the
//   worker's race for the one `writing` claim: exactly one is written.

import { failedReply } from "./common/envelope.js";
import { Mailbox, PHASE, phaseOf, seqOf, stateOf } from "./common/model_mailbox.js";
import { MODEL_CHANNEL, MODEL_ERROR, MODEL_TYPE } from "./common/model_protocol.js";

/** @import { ModelClient } from "./model_client.js" */
/** @import { GenerateDebug } from "./common/model_types.js" */
/** @import { Reply } from "./page_types.js" */

const INT32_MAX = 0x7fffffff;

export class DirectCalls {
  /** @param {ModelClient} client */
  constructor(client) {
    this.client = client;
    /** @type {Mailbox | null} */
    this.mailbox = null;
    /** @type {GenerateDebug | undefined} */
    this.debug = undefined;
    /** @type {{ held: number, unwatch: () => void } | null} */
    this.supervised = null; // {held, unwatch} of a direct generation being watched
    this.taken = 0; // mailbox requests the page answered itself
  }

  /** The attached mailbox: every caller of this runs once one is (`attach`). */
  get box() {
    if (!this.mailbox) throw new Error("no model mailbox is attached");
    return this.mailbox;
  }

  /** @param {unknown} buffer @param {GenerateDebug} [debug] */
  attach(buffer, debug) {
    if (this.mailbox || !(buffer instanceof SharedArrayBuffer)) return false;
    this.mailbox = new Mailbox(buffer);
    this.debug = debug;
    this.mailbox.store("generations", this.client.counted);
    if (this.client.worker) this.spawned(this.client.worker);
    this.gate();
    this.mailbox.store("attached", 1);
    this.mailbox.watch((state) => this.onState(state));
    return true;
  }

  // A model worker the client started (or had): it gets the mailbox before anything else.
  /** @param {Worker} worker */
  spawned(worker) {
    if (this.mailbox) worker.postMessage({ model_mailbox: this.mailbox.buffer, debug: this.debug });
  }

  // The next generation number (the fault hooks count them), shared with the model worker.
  next() {
    return this.box.add("generations", 1) + 1;
  }

  // Open the gate up to the generation before the next fault hook while a model is loaded;
  // shut it otherwise, and take a request the worker may then no longer take.
  gate() {
    if (!this.mailbox) return;
    const client = this.client;
    const open = client.state === "loaded" && client.worker !== null;
    const until = open ? Math.min(INT32_MAX, client.faults.next(this.mailbox.load("generations")) - 1) : 0;
    this.mailbox.store("direct_until", until);
    this.onState(this.mailbox.state());
  }

  workerMayTake() {
    return this.box.load("generations") + 1 <= this.box.load("direct_until");
  }

  /** @param {number} state */
  onState(state) {
    const phase = phaseOf(state);
    if (this.supervised && (this.supervised.held !== state || phase !== PHASE.worker)) this.release();
    if (phase === PHASE.request && !this.workerMayTake()) this.take(state);
    else if (phase === PHASE.worker) this.supervise(state);
  }

  // A token event of generation `id` before the page saw the worker take it: supervised from
  // now on (true), so that no token goes uncounted.
  /** @param {number} id */
  heard(id) {
    const state = this.mailbox?.state();
    if (state === undefined || phaseOf(state) !== PHASE.worker || this.requestId() !== id) return false;
    this.onState(state);
    return this.client.current?.id === id;
  }

  // The page answers this request itself (ModelClient.call), unless the worker took it first.
  /** @param {number} state */
  async take(state) {
    const held = stateOf(seqOf(state), PHASE.page);
    if (!this.box.move(state, held)) return;
    this.taken += 1;
    let reply;
    try {
      reply = await this.client.call(this.box.text(), this.debug, { viaMailbox: true });
    } catch (error) {
      // a bug: still answer, so that Python never waits for ever
      reply = JSON.stringify(this.envelope(failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, this.requestId(), MODEL_ERROR.WORKER_ERROR, String(error))));
    }
    this.box.answer(held, reply);
    this.gate();
  }

  // A failed reply to the direct generation under way, if any (the worker was terminated or
  // crashed); nothing when the worker already answered.
  /** @param {string} code @param {string} message */
  fail(code, message) {
    const state = this.mailbox?.state();
    if (state === undefined || phaseOf(state) !== PHASE.worker) return;
    this.box.answer(state, () => JSON.stringify(this.envelope(failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, this.requestId(), code, message))));
  }

  requestId() {
    return this.box.load("request_id");
  }

  /** @param {Reply} reply @param {number | null} [since] @returns {Reply} */
  envelope(reply, since = null) {
    const clientMs = since === null ? 0 : performance.now() - since;
    return { ...reply, type: MODEL_TYPE.GENERATE, id: this.requestId(), timing: { worker_ms: null, client_ms: clientMs, load_wait_ms: 0 } };
  }

  // Watch the generation the worker took as ModelClient.generate watches its own (`watch`).
  /** @param {number} held */
  supervise(held) {
    if (this.supervised) return;
    const since = performance.now();
    /** @param {Reply} reply */
    const settle = (reply) => this.box.answer(held, () => JSON.stringify(this.envelope(reply, since)));
    const caps = { timeout_ms: this.box.load("timeout_ms") };
    this.supervised = { held, unwatch: this.client.watch(this.requestId(), caps, settle) };
  }

  release() {
    this.supervised?.unwatch();
    this.supervised = null;
  }

  // Python's generate calls so far: through PyScript's sync channel (`sync`), through the
  // mailbox answered by the page (`page`), and by the model worker directly (`direct`).
  /** @param {number} sync */
  counts(sync) {
    return { sync, page: this.taken, direct: this.mailbox ? this.mailbox.load("direct") : 0 };
  }
}
