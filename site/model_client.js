// @ts-check
// Main-thread owner of the model worker (site/model_worker/model_worker.js). No DOM here: the Models
// panel (site/models_panel.js) draws; this file loads, generates, enforces deadlines and keeps
// the provenance. Python reaches it through PyScript's sync channel (site/python_worker/lab_worker.py ->
// pyapp/browser/model.py -> `xworker.sync.model_call` -> `call`), and Python's generate
// calls, once the page attached the mailbox Python shares (`attachMailbox`), reach the model
// worker without this thread: ./model_direct.js supervises them here (the same deadlines,
// stall judgement, Cancel, crash and termination) and answers the ones the worker may not
// take (a fault hook's generation, a pending load, no model) with `call`, as before.
//
// Its messages are the records of pyapp/protocol/model_messages.py (names, codes and schema
// from the generated site/common/model_protocol.js; tables in docs/models.md). It answers Python's
// `provenance` itself and passes `generate` on to the worker, adding a wait for a pending
// (re)load, a hard deadline (terminate the worker `GRACE_MS` after caps.timeout_ms) and the
// reply's `timing` {worker_ms, client_ms}. It checks what it receives (site/common/model_check.js):
// Python's requests (`bad_request` / `unknown_type` replies), the worker's replies (one that
// does not fit its request's result record becomes a failed reply `bad_reply`) and events
// (a malformed one is dropped with a console warning). It checks what it sends too: its load
// request (built from the generated ModelSpec definition; one that does not fit is a refused
// load) and its events to the Models panel (`PANEL_EVENTS`: `progress`, `state`, `load_done`,
// tagged by `type`; one that does not fit is reported on the console, and still drawn).
// GRACE_MS and LOAD_TIMEOUT_MS are Python's (model_messages.py), generated into model_protocol.js.
//
// A terminated worker is unloaded: the client reloads the same model at once (no new
// consent in this session) and records that as a ModelLoad with reason
// `reload-after-terminate`, timed like any other load. So does a worker that crashed while
// a model was loaded (its pending requests fail with `worker_error`). A generate that finds
// the model unloaded after a failed reload answers `not_loaded` and starts another reload
// (reason `reload`), which the next generate waits for.
//
// A hard stop is judged by token progress (the worker's `first_token` / `tokens` events; a
// worker blocked in a forward pass cannot send anything): a generation that reported a token
// within the load's stall window before the hard stop was still generating, and answers the
// model's `timeout` (ok, finish `timeout`); one silent for longer than the window stalled:
// a failed reply `stalled` (infrastructure: the sweep keeps it as an interruption and tries
// again). Both carry the judgement (`hard_stop`: silence, window, its derivation). The window
// is max(STALL_FLOOR_MS, STALL_STEP_FACTOR x the slowest step of the load's warm-up, decode
// steps when there are any) — `stallWindow` — and is recorded with every load.
//
// A generate that finds a (re)load pending waits for it before the worker sees the request;
// that wait is reported apart (`timing.load_wait_ms`), never as the model's generation time.
//
// Fault-injection hooks (site/faults.js, page parameter `fault`) act here, counted over the
// generations of the page's life.

import { parseFaults } from "./faults.js";
import { checkEvent, checkPanelEvent, checkReply, checkRequest } from "./common/model_check.js";
import { DirectCalls } from "./model_direct.js";
import { messageOf } from "./common/errors.js";
import { channelEvent, failedReply, okReply } from "./common/envelope.js";
import {
  GRACE_MS,
  LOAD_TIMEOUT_MS,
  MODEL_CHANNEL,
  MODEL_ERROR,
  MODEL_SCHEMA_DEFS,
  MODEL_TYPE,
  STALL_FLOOR_MS,
  STALL_STEP_FACTOR,
} from "./common/model_protocol.js";

/** @import { Faults } from "./faults.js" */
/** @import { Caps, Generate, GenerateDebug, HardStop, LoadResult, ModelLoad, ModelProvenance, ModelSpec, PanelEvent } from "./common/model_types.js" */
/** @import { Backend, ChosenModel, ClientState, Current, Reply } from "./page_types.js" */





// The load request's `model`: the ModelSpec fields the generated definition names, taken from
// the consented catalogue entry (a field it leaves out is null, options `{}`).
const SPEC_FIELDS = Object.keys(MODEL_SCHEMA_DEFS.ModelSpec.properties);
/** @type {Readonly<Record<string, unknown>>} */
const SPEC_DEFAULTS = { chat_template_options: {} };
/** @param {ChosenModel} entry @returns {ModelSpec} checked against its generated definition before it is sent (`_load`) */
const modelSpec = (entry) =>
  /** @type {ModelSpec} */ (
    Object.fromEntries(SPEC_FIELDS.map((name) => [name, Reflect.get(entry, name) ?? SPEC_DEFAULTS[name] ?? null]))
  );

// The stall window of a load from its warm-up step times (ms): the slowest decode step (the
// steps after the first, whose time includes the warm-up prompt's prefill and lazy
// initialisation), or the first when the warm-up made one token; never below the floor.
/** @param {unknown} steps @returns {{ stepMs: number | null, windowMs: number }} */
export function stallWindow(steps) {
  const measured = Array.isArray(steps) ? steps.filter((ms) => Number.isFinite(ms) && ms >= 0) : [];
  const decode = measured.length > 1 ? measured.slice(1) : measured;
  const stepMs = decode.length ? Math.max(...decode) : null;
  return { stepMs, windowMs: Math.max(STALL_FLOOR_MS, stepMs === null ? 0 : STALL_STEP_FACTOR * stepMs) };
}

// A failed reply (./common/envelope.js: `type` and `id` echoed only when a request carries them).
/**
 * @param {unknown} type
 * @param {unknown} id
 * @param {string} code
 * @param {unknown} message
 * @param {Record<string, unknown>} [extras]
 * @returns {Reply}
 */
const failure = (type, id, code, message, extras) => failedReply(MODEL_CHANNEL, type, id, code, message, extras);

export class ModelClient {
  /** @param {{ workerUrl?: string, wasmBase?: string, onEvent?: (event: PanelEvent) => void, faults?: string }} [options] */
  constructor({ workerUrl = "./model_worker/model_worker.js", wasmBase = "./transformers/", onEvent = () => {}, faults = "" } = {}) {
    this.workerUrl = workerUrl;
    this.wasmBase = wasmBase;
    this.onEvent = onEvent; // a PANEL_EVENTS record: {type: "progress"|"state"|"load_done", ...}
    /** @type {Worker | null} */
    this.worker = null;
    this.nextId = 1;
    /** @type {Map<number, { resolve: (reply: Reply) => void, type: string }>} */
    this.pending = new Map(); // id -> {resolve, type}
    /** @type {ChosenModel | null} */
    this.spec = null; // the consented model {key, model_id, revision, dtype, source, ...}
    /** @type {Backend | null} */
    this.backend = null;
    /** @type {ModelLoad[]} */
    this.loads = []; // ModelLoad JSON, in order
    /** @type {LoadResult | null} */
    this.lastLoaded = null; // the worker's load result
    /** @type {ClientState} */
    this.state = "none"; // none | loading | loaded | unloaded | failed
    // Bumped with every state change: whatever provenance() reports (spec, loads, the load
    // result) changes only together with one, in the same task. The experiment's answer to
    // each of Python's events carries it, so Python asks the provenance again only after a
    // change (pyapp/browser/model.py, issue 22 §3).
    this.version = 0;
    /** @type {Promise<ModelLoad> | null} */
    this.ready = null; // promise of the current (re)load
    /** @type {Current | null} */
    this.current = null; // {id, stop: (reason) => void, firstToken: bool} of the running generate
    /** @type {Faults} */
    this.faults = parseFaults(faults); // {hooks, errors, at(kind, n)}
    this.counted = 0; // generate requests passed to a loaded worker, in the page's life (before the mailbox)
    this.syncGenerates = 0; // Python's generate requests through PyScript's sync channel (call)
    // Python's generate requests through the mailbox it shares (./model_direct.js): answered by
    // the model worker itself, the page supervising, or by the page where it must.
    this.direct = new DirectCalls(this);
    /** @type {string | null} */
    this.failNextLoad = null; // an injected reload failure (message), used once
  }

  // ---- plumbing --------------------------------------------------------------------------

  /** @param {Exclude<ClientState, "none">} state @param {Record<string, unknown>} [detail] */
  setState(state, detail = {}) {
    this.state = state;
    this.version += 1;
    this.direct.gate();
    this.emit(channelEvent(MODEL_CHANNEL, "panel", MODEL_TYPE.STATE, { state, ...detail }));
  }

  // The mailbox Python shares for its generate calls (./model_direct.js); `debug`: the
  // default added to generate requests without one, as `call` adds it.
  /** @param {SharedArrayBuffer} buffer @param {GenerateDebug} [debug] */
  attachMailbox(buffer, debug = undefined) {
    return this.direct.attach(buffer, debug);
  }

  // Generation numbers, counted over the page's life (the fault hooks count them).
  nextGeneration() {
    return this.direct.mailbox ? this.direct.next() : ++this.counted;
  }

  // Python's generate calls so far, by path: {sync, page, direct}.
  callCounts() {
    return this.direct.counts(this.syncGenerates);
  }

  // An event to the Models panel, checked against its generated record first.
  /** @param {object} event */
  emit(event) {
    const wrong = checkPanelEvent(event);
    if (wrong) console.error(`model client: an event to the panel does not fit the protocol (${wrong})`);
    this.onEvent(/** @type {PanelEvent} */ (event)); // drawn even when it does not fit (reported above)
  }

  spawn() {
    const worker = new Worker(this.workerUrl, { type: "module", name: "model-worker" });
    worker.onmessage = (/** @type {MessageEvent<unknown>} */ { data }) => this.receive(data);
    worker.onmessageerror = () => console.warn("model client: a message from the model worker could not be read");
    this.direct.spawned(worker);
    worker.onerror = (event) => {
      event.preventDefault?.();
      const message = `the model worker crashed: ${event.message || "unknown error"}`;
      if (this.state === "loaded") this.crash(message);
      else this.failAll(MODEL_ERROR.WORKER_ERROR, message);
    };
    return worker;
  }

  // One message from the worker: an event, or the reply to a pending request (checked
  // against that request's result record; one that does not fit fails it as `bad_reply`).
  /** @param {unknown} received */
  receive(received) {
    const data = /** @type {{ type?: unknown, id?: unknown, tokens?: number } | null} */ (
      typeof received === "object" ? received : null
    );
    if (data?.type === MODEL_TYPE.PROGRESS || data?.type === MODEL_TYPE.FIRST_TOKEN || data?.type === MODEL_TYPE.TOKENS) {
      const wrong = checkEvent(data);
      if (wrong) console.warn(`model client: dropped a malformed event (${wrong})`);
      else if (data.type === MODEL_TYPE.PROGRESS) this.emit(data);
      else if (typeof data.id === "number" && (this.current?.id === data.id || this.direct.heard(data.id)) && this.current) {
        // token progress: what a hard stop is judged by
        this.current.lastTokenAt = performance.now();
        this.current.tokens = Math.max(this.current.tokens, data.tokens ?? 1);
        if (data.type === MODEL_TYPE.FIRST_TOKEN) this.current.firstToken = true; // observable by tests
      }
      return;
    }
    const id = data?.id;
    const waiter = typeof id === "number" && Number.isInteger(id) ? this.pending.get(id) : undefined;
    if (id === undefined || !waiter) {
      console.warn(`model client: dropped a message that answers nothing pending (${JSON.stringify(data)?.slice(0, 80)})`);
      return;
    }
    this.pending.delete(/** @type {number} */ (id));
    const wrong = checkReply(waiter.type, data);
    waiter.resolve(
      wrong === null
        ? /** @type {Reply} */ (data) // it fits the reply to its request (checkReply)
        : failure(waiter.type, id, MODEL_ERROR.BAD_REPLY, `the model worker's reply does not fit the protocol: ${wrong}`),
    );
  }

  /** @param {string} type @param {Record<string, unknown>} [fields] @returns {{ id: number, promise: Promise<Reply> }} */
  send(type, fields = {}) {
    const id = this.nextId++;
    const message = { type, id, ...fields };
    /** @type {Promise<Reply>} */
    const promise = new Promise((resolve) => this.pending.set(id, { resolve, type }));
    this.worker?.postMessage(message);
    return { id, promise };
  }

  /** @param {string} code @param {string} message */
  failAll(code, message) {
    for (const [id, waiter] of this.pending) waiter.resolve(failure(waiter.type, id, code, message));
    this.pending.clear();
  }

  // The worker died under a loaded model: fail what was pending, reload the same model.
  /** @param {string} message */
  crash(message) {
    if (!this.worker) return;
    this.worker.terminate();
    this.worker = null;
    this.failAll(MODEL_ERROR.WORKER_ERROR, message);
    this.direct.fail(MODEL_ERROR.WORKER_ERROR, message);
    this.setState("unloaded", { why: message });
    this.reload("reload-after-terminate");
  }

  // The same model again (no new consent in this session).
  /** @param {"reload-after-terminate" | "reload"} reason */
  reload(reason) {
    if (this.spec && this.backend) this.load(this.spec, this.backend, reason);
  }

  /** @param {string} why */
  terminate(why) {
    if (!this.worker) return;
    this.worker.terminate();
    this.worker = null;
    this.failAll(MODEL_ERROR.TERMINATED, why);
    this.direct.fail(MODEL_ERROR.TERMINATED, why);
    this.setState("unloaded", { why });
  }

  // ---- loading ---------------------------------------------------------------------------

  // Load `spec` on `backend`. `reason` is "consent" (first load after the dialog),
  // "reload-after-terminate" or "reload". Resolves with the ModelLoad record (ok or not).
  /** @param {ChosenModel} spec @param {Backend} backend @param {ModelLoad["reason"]} [reason] */
  load(spec, backend, reason = "consent") {
    if (this.worker) this.terminate("replaced by a new load");
    this.spec = spec;
    this.backend = backend;
    this.ready = this._load(spec, backend, reason);
    return this.ready;
  }

  /** @param {ChosenModel} spec @param {Backend} backend @param {ModelLoad["reason"]} reason @returns {Promise<ModelLoad>} */
  async _load(spec, backend, reason) {
    if (this.failNextLoad) {
      const message = this.failNextLoad;
      this.failNextLoad = null;
      return this.refuse(spec, backend, MODEL_ERROR.LOAD_FAILED, message, reason);
    }
    const request = {
      model: modelSpec(spec),
      backend,
      wasm_base: new URL(this.wasmBase, location.href).href,
      threads: spec.threads ?? null,
    };
    const wrong = checkRequest({ type: MODEL_TYPE.LOAD, id: this.nextId, ...request });
    if (wrong) return this.refuse(spec, backend, wrong.code, `the load request does not fit: ${wrong.message}`, reason);
    const started = performance.now();
    this.setState("loading", { reason });
    this.worker = this.spawn();
    const { promise } = this.send(MODEL_TYPE.LOAD, request);
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    /** @type {Promise<Reply>} */
    const timeout = new Promise((resolve) => {
      timer = setTimeout(
        () => resolve(failure(MODEL_TYPE.LOAD, null, MODEL_ERROR.LOAD_TIMEOUT, `no answer after ${LOAD_TIMEOUT_MS / 1000} s`)),
        LOAD_TIMEOUT_MS,
      );
    });
    const answer = await Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
    const setupMs = performance.now() - started;
    const result = answer.ok ? /** @type {LoadResult} */ (answer.result) : null; // checked: checkReply
    const steps = result?.warmup_step_ms ?? null;
    /** @type {ModelLoad} */
    const record = {
      load_id: this.loads.length + 1,
      reason,
      ok: answer.ok === true,
      error_code: answer.ok ? null : (answer.error?.code ?? null),
      error_message: answer.ok ? null : (answer.error?.message ?? null),
      backend_requested: backend,
      backend_actual: result ? result.backend_actual : null,
      download_bytes: result ? result.download_bytes : null,
      download_ms: result ? result.download_ms : null,
      setup_ms: setupMs,
      compilation_ms: null,
      warmup_step_ms: steps,
      stall_window_ms: answer.ok ? stallWindow(steps).windowMs : null,
    };
    this.loads.push(record);
    if (answer.ok) {
      this.lastLoaded = result;
      this.setState("loaded", { record, result });
    } else {
      this.lastLoaded = null;
      if (this.worker) {
        this.worker.terminate(); // a failed worker holds nothing worth keeping
        this.worker = null;
      }
      this.setState("failed", { record });
    }
    this.emit(channelEvent(MODEL_CHANNEL, "panel", MODEL_TYPE.LOAD_DONE, { record, result }));
    return record;
  }

  // A load refused before any worker or download (e.g. WebGPU asked for where there is no
  // adapter): recorded like any failed load, so it is shown and exportable.
  /**
   * @param {ChosenModel} spec
   * @param {Backend} backend
   * @param {string} code
   * @param {string} message
   * @param {ModelLoad["reason"]} [reason]
   * @returns {ModelLoad}
   */
  refuse(spec, backend, code, message, reason = "consent") {
    if (this.worker) this.terminate("replaced by a refused load");
    this.spec = spec;
    this.backend = backend;
    /** @type {ModelLoad} */
    const record = {
      load_id: this.loads.length + 1,
      reason,
      ok: false,
      error_code: code,
      error_message: message,
      backend_requested: backend,
      backend_actual: null,
      download_bytes: 0,
      download_ms: null,
      setup_ms: null,
      compilation_ms: null,
    };
    this.loads.push(record);
    this.lastLoaded = null;
    this.setState("failed", { record });
    this.emit(channelEvent(MODEL_CHANNEL, "panel", MODEL_TYPE.LOAD_DONE, { record, result: null }));
    return record;
  }

  // ---- generation ------------------------------------------------------------------------

  // Generate; always resolves with a reply envelope {type, id, ok, result|error, timing}.
  /** @param {Omit<Generate, "type" | "id">} request @returns {Promise<Reply>} */
  async generate({ prompt, messages, caps, debug }) {
    const clientStart = performance.now();
    let loadWaitMs = 0; // waiting for a pending (re)load: reported apart, never generation time
    /** @param {Reply & { worker_ms?: number | null }} reply @returns {Reply} */
    const envelope = ({ worker_ms: workerMs = null, elapsed_ms: _, ...reply }) => ({
      ...reply,
      type: MODEL_TYPE.GENERATE,
      timing: { worker_ms: workerMs, client_ms: performance.now() - clientStart, load_wait_ms: loadWaitMs },
    });
    const wrong = checkRequest({ type: MODEL_TYPE.GENERATE, prompt, messages, caps, debug });
    if (wrong) return envelope(failure(MODEL_TYPE.GENERATE, null, wrong.code, wrong.message));
    if (this.state === "loading" && this.ready) {
      const waitStart = performance.now();
      await this.ready;
      loadWaitMs = performance.now() - waitStart;
    }
    if (this.state !== "loaded" || !this.worker) {
      const why = this.spec ? `the model is ${this.state}` : "no model has been loaded (consent first)";
      const lastLoad = this.loads.at(-1);
      if (this.spec && this.state === "failed" && lastLoad && lastLoad.reason !== "consent") {
        this.reload("reload"); // a failed reload: try again (no new consent)
      }
      return envelope(failure(MODEL_TYPE.GENERATE, null, MODEL_ERROR.NOT_LOADED, why));
    }
    const n = this.nextGeneration();
    /** @param {string} kind */
    const fault = (kind) => this.faults.at(kind, n);
    if (fault("hang")) debug = { ...(debug ?? {}), stall_ms: 2_000_000_000 }; // never yields
    const { id, promise } = this.send(MODEL_TYPE.GENERATE, { prompt, messages, caps, debug });
    if (fault("worker_crash")) this.crash(`the model worker died during generation ${n} (injected fault worker_crash@${n})`);
    /** @type {(reply: Reply) => void} */
    let settle = () => {};
    /** @type {Promise<Reply>} */
    const stopped = new Promise((resolve) => (settle = resolve));
    const unwatch = this.watch(id, caps, (reply) => settle(reply));
    let reply = await Promise.race([promise, stopped]);
    unwatch();
    if (fault("bad_reply") && reply.ok) reply = { ...reply, result: { text: 42, injected: `bad_reply@${n}` } };
    if (fault("reload_fail") && this.worker) {
      this.failNextLoad = `the reload after generation ${n} failed (injected fault reload_fail@${n})`;
      this.terminate(`replaced after generation ${n} (injected fault reload_fail@${n})`);
      this.reload("reload-after-terminate");
    }
    return envelope({ ...reply, worker_ms: reply.elapsed_ms ?? null });
  }

  // Supervise generation `id` (the page's own, or a direct one: ./model_direct.js) as
  // `current`: the worker stops itself at caps.timeout_ms (soft); the client interrupts too
  // and, if nothing comes back within GRACE_MS, terminates the worker (hard); Cancel takes the
  // same path (`current.stop`). `settle` answers the generation. Returns what ends the watch.
  /** @param {number} id @param {Pick<Caps, "timeout_ms">} caps @param {(reply: Reply) => unknown} settle @returns {() => void} */
  watch(id, caps, settle) {
    /** @type {Current} */
    const current = { id, stop: () => {}, firstToken: false, sentAt: performance.now(), lastTokenAt: null, tokens: 0, caps };
    const soft = setTimeout(() => this.interrupt(id, "timeout"), caps.timeout_ms);
    const hard = setTimeout(() => this.hardStop(id, "timeout", settle), caps.timeout_ms + GRACE_MS);
    current.stop = (reason) => {
      this.interrupt(id, reason);
      setTimeout(() => this.hardStop(id, reason, settle), GRACE_MS);
    };
    this.current = current;
    return () => {
      clearTimeout(soft);
      clearTimeout(hard);
      if (this.current === current) this.current = null;
    };
  }

  /** @param {number} target @param {"cancelled" | "timeout"} reason */
  interrupt(target, reason) {
    if (this.worker && this.current?.id === target) this.send(MODEL_TYPE.INTERRUPT, { target, reason });
  }

  // The user's Cancel: the same path as a deadline (interrupt, then terminate after grace).
  cancel() {
    if (!this.current) return false;
    this.current.stop("cancelled");
    return true;
  }

  // The stall decision: a hard stop past the deadline is judged by the time since the
  // worker's last token (or, before any, since the request was passed to it) against the
  // load's stall window: longer is `stalled` (infrastructure), shorter the model's `timeout`.
  /** @param {Current} current @returns {HardStop} */
  judgeStall(current) {
    const { stepMs, windowMs } = stallWindow(this.lastLoaded?.warmup_step_ms ?? null); // the load that ran it
    const silentMs = performance.now() - (current.lastTokenAt ?? current.sentAt);
    return {
      judged: silentMs > windowMs ? "stalled" : "timeout",
      silent_ms: silentMs,
      window_ms: windowMs,
      tokens: current.tokens,
      step_ms: stepMs,
      floor_ms: STALL_FLOOR_MS,
      step_factor: STALL_STEP_FACTOR,
      deadline_ms: current.caps.timeout_ms,
    };
  }

  // `settle` answers the generation; one answering a mailbox request (./model_direct.js)
  // returns false when the worker's reply won the race: then nothing is stopped.
  /** @param {number} id @param {"cancelled" | "timeout"} reason @param {(reply: Reply) => unknown} settle */
  hardStop(id, reason, settle) {
    if (this.current?.id !== id) return;
    const judgement = reason === "timeout" ? this.judgeStall(this.current) : null;
    const message =
      `the model worker did not stop within ${GRACE_MS} ms of the ${reason === "timeout" ? "deadline" : "cancel"}:` +
      " terminated; the model reloads (no new consent needed)";
    if (judgement?.judged === "stalled") {
      const stalled =
        `the model worker sent no token for ${Math.round(judgement.silent_ms)} ms, longer than the stall window of ` +
        `${Math.round(judgement.window_ms)} ms (${judgement.tokens} tokens before): an infrastructure stall, not the model's timeout; ` +
        "terminated; the model reloads (no new consent needed)";
      if (settle(failure(MODEL_TYPE.GENERATE, id, MODEL_ERROR.STALLED, stalled, { hard_stop: judgement })) === false) return;
    } else {
      const stopped = {
        text: "",
        finish_reason: reason,
        input_tokens: null,
        output_tokens: null,
        output_token_ids: null,
        generation_ms: null,
        time_to_first_token_ms: null,
        failure: { code: reason, message },
        input_text: null, // the worker was stopped before it answered
        input_sha256: null,
      };
      if (settle(okReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, id, stopped, judgement ? { hard_stop: judgement } : {})) === false) return;
    }
    this.terminate(message);
    this.reload("reload-after-terminate");
  }

  // ---- provenance ------------------------------------------------------------------------

  /** @returns {ModelProvenance} */
  provenance() {
    /** @type {Partial<ChosenModel>} */
    const spec = this.spec ?? {};
    const result = this.lastLoaded;
    return {
      model_id: spec.model_id ?? "none",
      revision: spec.revision ?? "none",
      revision_served: result?.revision_served ?? null,
      revision_served_note: result?.revision_served_note ?? null,
      dtype: spec.dtype ?? "none",
      chat_template_options: result?.chat_template_options ?? spec.chat_template_options ?? {},
      source: spec.source ?? "bundled-fixture",
      // The bundled fixture, or any download whose config.json is the fixture's: never model
      // evidence. The bundled reference subject: evidence about it, never about an LLM
      // (Python also relabels a subject served from elsewhere by its config.json digest).
      evidence:
        spec.source === "bundled-fixture" || result?.is_test_fixture === true
          ? "fixture"
          : spec.source === "bundled-subject"
            ? "reference-subject"
            : "model",
      backend_requested: this.backend ?? "wasm",
      backend_actual: result ? result.backend_actual : null,
      adapter: result ? result.adapter : null,
      transformers_js_version: result ? result.transformers_js_version : null,
      onnxruntime_version: result ? result.onnxruntime_version : null,
      threads: result ? result.threads : null,
      wasm: result?.wasm ?? null,
      cross_origin_isolated: window.crossOriginIsolated === true,
      user_agent: navigator.userAgent,
      flops: null,
      loads: this.loads.map((record) => ({ ...record })),
      config_sha256: result?.config_sha256 ?? null,
      // Filled in by Python (pyapp/browser/model.py parse_provenance) for the reference subject.
      subject_recipe: null,
    };
  }

  // The one function Python calls (through xworker.sync): a request JSON in, a reply JSON out,
  // for the requests Python sends (`provenance`, `generate`). `debug` (test hooks, see
  // GenerateDebug) is added to generate requests without one.
  /** @param {string} requestJson @param {GenerateDebug} [debug] @param {{ viaMailbox?: boolean }} [how] @returns {Promise<string>} */
  async call(requestJson, debug = undefined, { viaMailbox = false } = {}) {
    /** @type {unknown} */
    let parsed;
    try {
      parsed = /** @type {unknown} */ (JSON.parse(requestJson));
    } catch (error) {
      return JSON.stringify(failure(null, null, MODEL_ERROR.BAD_REQUEST, `the request is not JSON: ${messageOf(error)}`));
    }
    const wrong = checkRequest(parsed);
    if (wrong) {
      const { type, id } = /** @type {{ type?: unknown, id?: unknown } | null} */ (parsed) ?? {};
      return JSON.stringify(failure(type, id, wrong.code, wrong.message));
    }
    // it fits one of the channel's request records (checkRequest)
    const request = /** @type {Generate & { id: number } | { type: string, id: number }} */ (parsed);
    const { type, id } = request;
    if (type === MODEL_TYPE.PROVENANCE) return JSON.stringify(okReply(MODEL_CHANNEL, type, id, this.provenance()));
    if (type === MODEL_TYPE.GENERATE && "caps" in request) {
      if (!viaMailbox) this.syncGenerates += 1;
      const reply = await this.generate({ debug, ...request });
      return JSON.stringify({ ...reply, id });
    }
    const why = `${type} is the client's request to the model worker, not one it answers`;
    return JSON.stringify(failure(type, id, MODEL_ERROR.UNKNOWN_TYPE, why));
  }
}
