// @ts-check
// Composition Lab model worker: one causal LM on transformers.js, in its own module worker.
// Started by the main thread's client (site/model_client.js) AFTER the user consented; one
// model per worker. Backend and model never change inside a worker: a new choice is a new
// worker.
//
// The messages it answers (`load`, `generate`, `interrupt`) and sends (the replies, the events
// `progress` and `first_token`) are the records of pyapp/protocol/model_messages.py; their
// names, error codes and schema come from the generated site/common/model_protocol.js, and the
// message tables are in docs/models.md. Every request is checked against that schema before
// anything runs (site/common/model_check.js): an unknown type is answered `unknown_type`, a
// malformed request `bad_request`, and the worker keeps serving.
//
// Generation semantics: greedy (site/model_worker/greedy.js: transformers.js's `do_sample: false`
// generate without its generic per-step work, checked token for token against it); the chat
// template from the model's tokenizer_config.json; the prompt's tokens are counted with the
// model's tokenizer BEFORE generating (over `max_input_tokens` -> no generation, finish null,
// failure `input_budget`); `max_new_tokens` from the caps; after every token a stop reason for
// the output bytes (finish `bytes`), one for the deadline (finish `timeout`) and an
// interruptible one (finish `cancelled`/`timeout`). The loop awaits a MessageChannel tick
// before a forward pass once 2 ms have passed since the last one or since the request came
// (before every step of a real model), so interrupts are handled between steps even on WASM. Finish reason, in
// order: interrupted/deadline -> its reason; last id is EOS -> `eos`; bytes cap -> `bytes`;
// `max_new_tokens` reached -> `length`; otherwise `error`. Test hooks in a generate's
// `debug`: `step_delay_ms` awaits N ms before every step; `stall_ms` blocks the worker N ms
// once (a step that never yields, to exercise terminate()). While generating it reports
// progress (`tokens`: with the first token, then at most every TOKENS_EVERY_MS), by which the
// client tells a model past its deadline from a hung worker.
//
// Python's generate requests also arrive through the model mailbox (site/common/model_mailbox.js,
// handed over by the page before the load): taken here when the page's gate lets them, and
// answered into the shared memory, Python waking at once (see serveMailbox below).
//
// What a load records about itself (the WebGPU adapter, the WASM features, the files fetched,
// config.json's digest, the commit the hub served) is measured by site/model_worker/load_provenance.js.

import {
  AutoConfig,
  AutoModelForCausalLM,
  AutoTokenizer,
  env,
} from "../transformers/transformers.min.js";
import { greedyGenerate } from "./greedy.js";
import { WorkerError, generate } from "./generation.js";
import { checkCachedConfig, keepServedRevision, measureWasm, watchFetches, webgpuAdapter } from "./load_provenance.js";
import { checkReply, checkRequest } from "../common/model_check.js";
import { channelEvent, failedReply, okReply } from "../common/envelope.js";
import { Mailbox, PHASE, phaseOf, seqOf, stateOf } from "../common/model_mailbox.js";
import { MODEL_CHANNEL, MODEL_ERROR, MODEL_TYPE, WARMUP_TOKENS } from "../common/model_protocol.js";
import { messageOf } from "../common/errors.js";

/** @import { CausalModel, Inputs } from "./greedy.js" */
/** @import { InnerTokenizer } from "./output_bytes.js" */
/** @import { Seen } from "./load_provenance.js" */
/** @import { AdapterInfo, ChatMessage, Generate, GenerateDebug, Interrupt, Load, LoadResult, ModelSpec } from "../common/model_types.js" */
/** @import { Envelope } from "../common/envelope.js" */

/**
 * What this worker uses of transformers.js's tokenizer (the pinned version's; `_tokenizer` an
 * internal, checked by tests/browser/test_greedy.py).
 * @typedef {object} TokenizerParts
 * @property {(messages: ChatMessage[], options: Record<string, unknown>) => string | Inputs} apply_chat_template
 * @property {(ids: number[], options: { skip_special_tokens: boolean }) => string} decode
 * @property {number | number[] | null} [eos_token_id]
 * @property {InnerTokenizer} [_tokenizer]
 */
/** @typedef {TokenizerParts & ((text: string, options: { add_special_tokens: boolean, return_tensor: boolean }) => Inputs)} Tokenizer */
/** @typedef {{ id: number | undefined, interrupt: { reason: Interrupt["reason"] } | null }} Job the running generation */
/** @typedef {Generate & { id?: number }} GenerateRequest a checked `generate` request */
/** @typedef {Load & { id?: number }} LoadRequest a checked `load` request */
/** @typedef {Interrupt & { id?: number }} InterruptRequest a checked `interrupt` request */

/** @type {Tokenizer | null} */
let tokenizer = null;
/** @type {CausalModel | null} */
let model = null;
/** @type {LoadResult | null} */
let loaded = null; // the load result, once ready
let loading = false;
/** @type {Job | null} */
let running = null; // {id, interrupt: {reason}|null}
/** @type {Record<string, boolean | number | string>} */
let templateOptions = {}; // the entry's chat-template options (e.g. {enable_thinking: false})

// ---- helpers -----------------------------------------------------------------------------

// Replies and events are built by the one envelope of both channels (../common/envelope.js).
/** @param {string} type @param {unknown} id @param {unknown} result @param {Record<string, unknown>} [extra] */
function reply(type, id, result, extra = {}) {
  self.postMessage(okReply(MODEL_CHANNEL, type, id, result, extra));
}

// A failed reply (the envelope echoes `type` and `id` only when a request carries them).
/** @param {unknown} type @param {unknown} id @param {string} code @param {string} message */
function replyError(type, id, code, message) {
  self.postMessage(failedReply(MODEL_CHANNEL, type, id, code, message));
}


// ---- load --------------------------------------------------------------------------------

// Backend first: never fetch a byte for a backend that cannot run, never fall back. Returns
// the WebGPU adapter's info (null on WASM).
/** @param {ModelSpec} spec @param {Load["backend"]} backend @returns {Promise<AdapterInfo | null>} */
async function checkBackend(spec, backend) {
  if (backend !== "webgpu") return null;
  const found = await webgpuAdapter();
  if (found.adapter === null) {
    throw new WorkerError(
      MODEL_ERROR.BACKEND_UNAVAILABLE,
      `WebGPU is not available in this browser (${found.why}). Nothing was downloaded and ` +
        "nothing will run on another backend; choose WASM explicitly to run on the CPU.",
    );
  }
  if (/f16/.test(spec.dtype) && !found.info.shader_f16) {
    throw new WorkerError(
      MODEL_ERROR.DTYPE_UNSUPPORTED,
      `dtype ${spec.dtype} needs the WebGPU feature shader-f16, which this adapter ` +
        `(${found.info.vendor ?? "unknown vendor"}) lacks. Choose a dtype without f16 ` +
        "(q4 or fp32) explicitly; nothing was downloaded.",
    );
  }
  return found.info;
}

// transformers.js settings: local ORT wasm, one model source, no silent remote fallback.
// Returns the URL of the ORT wasm folder.
/** @param {LoadRequest} request */
function configureRuntime(request) {
  const { model: spec, backend } = request;
  const wasmBase = new URL(request.wasm_base, self.location.href).href;
  const flavour = backend === "webgpu" ? "ort-wasm-simd-threaded.asyncify" : "ort-wasm-simd-threaded";
  const wasm = env.backends.onnx.wasm;
  if (!wasm) throw new WorkerError(MODEL_ERROR.LOAD_FAILED, "transformers.js has no ONNX wasm settings");
  wasm.wasmPaths = { mjs: `${wasmBase}${flavour}.mjs`, wasm: `${wasmBase}${flavour}.wasm` };
  // Threads: every core cross-origin isolation lets ORT use (SharedArrayBuffer), unless the
  // request names a count; ORT's own default, ceil(cores / 2), is 1 thread on 2 cores.
  const isolated = self.crossOriginIsolated === true;
  const cores = Math.max(1, navigator.hardwareConcurrency || 1);
  const threads = request.threads ?? 0;
  wasm.numThreads = Number.isInteger(threads) && threads > 0 ? threads : isolated ? cores : 1;
  if (spec.source === "hub") {
    env.allowLocalModels = false;
    env.allowRemoteModels = true; // the user consented to this one download
    env.remoteHost = spec.host ?? "";
    env.remotePathTemplate = "{model}/resolve/{revision}/";
  } else {
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = spec.local_path ?? ""; // a PATH: a full URL disables local lookup
  }
  return wasmBase;
}

/**
 * transformers.js's progress callback, sent on as `progress` events of the load `id`.
 * @param {number | undefined} id
 * @param {Seen} seen
 * @returns {(data: { file?: unknown, status?: unknown, loaded?: unknown, total?: unknown } | null) => void}
 */
function progressReporter(id, seen) {
  return (data) => {
    if (!data || !data.file) return;
    if (data.status === "done") seen.lastDone = performance.now();
    self.postMessage(
      channelEvent(MODEL_CHANNEL, "client", MODEL_TYPE.PROGRESS, {
        id,
        file: String(data.file),
        status: String(data.status),
        loaded: typeof data.loaded === "number" && Number.isFinite(data.loaded) ? data.loaded : null,
        total: typeof data.total === "number" && Number.isFinite(data.total) ? data.total : null,
      }),
    );
  };
}

/** @typedef {{ revision: string, progress_callback: ReturnType<typeof progressReporter> }} LoadOptions */

// config.json only, then refuse an architecture transformers.js cannot run (a free-text id).
/** @param {ModelSpec} spec @param {LoadOptions} options */
async function checkArchitecture(spec, options) {
  if (!Array.isArray(spec.supported_model_types)) return;
  const config = await AutoConfig.from_pretrained(spec.model_id, options);
  if (!spec.supported_model_types.includes(String(config.model_type))) {
    throw new WorkerError(
      MODEL_ERROR.ARCHITECTURE_UNSUPPORTED,
      `${spec.model_id} is a "${config.model_type}" model, which this transformers.js (${env.version}) ` +
        "cannot run as a causal LM; only its config.json was downloaded.",
    );
  }
}

// The tokenizer and the ONNX session (download included); a failure is download_failed or
// load_failed, and leaves nothing loaded.
/** @param {ModelSpec} spec @param {Load["backend"]} backend @param {LoadOptions} options */
async function createSession(spec, backend, options) {
  try {
    await checkArchitecture(spec, options);
    // transformers.js's classes, as this worker uses them (./greedy.js CausalModel, Tokenizer above)
    tokenizer = /** @type {Tokenizer} */ (/** @type {unknown} */ (await AutoTokenizer.from_pretrained(spec.model_id, options)));
    const dtype = /** @type {import("@huggingface/transformers").DataType} */ (spec.dtype); // the worker refuses none: the load fails
    const loadedModel = await AutoModelForCausalLM.from_pretrained(spec.model_id, { ...options, device: backend, dtype });
    model = /** @type {CausalModel} */ (/** @type {unknown} */ (loadedModel));
  } catch (error) {
    tokenizer = model = null;
    if (error instanceof WorkerError) throw error;
    const message = messageOf(error);
    const code = /fetch|not found|404|network|Failed to load|HTTP/i.test(message)
      ? MODEL_ERROR.DOWNLOAD_FAILED
      : MODEL_ERROR.LOAD_FAILED;
    throw new WorkerError(code, message);
  }
}

// Warm-up: a few tokens (WARMUP_TOKENS), so the first measured generation does not pay for
// lazy init, each step timed: the client derives this load's stall window from those step
// times. Returns {ms, steps}.
/** @param {Tokenizer} tokenizer @param {CausalModel} model @returns {Promise<{ ms: number, steps: number[] }>} */
async function warmUp(tokenizer, model) {
  const started = performance.now();
  const warm = tokenizer.apply_chat_template([{ role: "user", content: "Hi" }], {
    ...templateOptions,
    add_generation_prompt: true,
    return_dict: true,
  });
  if (typeof warm === "string") throw new WorkerError(MODEL_ERROR.LOAD_FAILED, "the chat template gave text, not tokens");
  /** @type {number[]} */
  const steps = [];
  let stepStart = 0;
  const timed = {
    beforeStep: async () => {
      stepStart = performance.now();
    },
    onToken: () => steps.push(performance.now() - stepStart),
    shouldStop: () => false,
  };
  await greedyGenerate(model, warm, WARMUP_TOKENS, timed);
  return { ms: performance.now() - started, steps };
}

/**
 * The LoadResult record (pyapp/protocol/model_messages.py).
 * @param {{ spec: ModelSpec, backend: Load["backend"], adapterInfo: AdapterInfo | null, seen: Seen, served: { commit: string | null, note: string | null }, started: number, warmup: { ms: number, steps: number[] } }} measured
 * @returns {LoadResult}
 */
function loadResult({ spec, backend, adapterInfo, seen, served, started, warmup }) {
  const onnx = env.backends.onnx;
  return {
    backend_actual: backend,
    dtype: spec.dtype,
    transformers_js_version: env.version ?? null,
    onnxruntime_version: onnx?.versions?.web ?? null,
    threads: onnx?.wasm?.numThreads ?? null,
    cross_origin_isolated: self.crossOriginIsolated === true,
    user_agent: navigator.userAgent,
    adapter: adapterInfo,
    revision_served: served.commit,
    chat_template_options: templateOptions,
    revision_served_note: served.note,
    wasm: backend === "wasm" ? measureWasm(onnx?.wasm?.numThreads ?? null) : null,
    is_test_fixture: seen.isTestFixture || spec.source === "bundled-fixture",
    config_sha256: seen.configSha256,
    download_bytes: [...seen.files.values()].reduce((a, b) => a + b, 0),
    runtime_bytes: seen.runtimeBytes,
    download_ms: seen.firstFetch !== null && seen.lastDone !== null ? seen.lastDone - seen.firstFetch : null,
    setup_ms: performance.now() - started,
    warmup_ms: warmup.ms,
    warmup_step_ms: warmup.steps,
    files: [...seen.files.entries()].map(([file, bytes]) => ({ file, bytes })),
  };
}

// A checked `load` request -> its LoadResult.
/** @param {LoadRequest} request */
async function load(request) {
  const started = performance.now();
  const { model: spec, backend } = request;
  const adapterInfo = await checkBackend(spec, backend);
  const wasmBase = configureRuntime(request);
  const seen = watchFetches(spec, wasmBase);
  templateOptions = spec.chat_template_options;
  const options = { revision: spec.revision, progress_callback: progressReporter(request.id, seen) };
  await createSession(spec, backend, options);
  await checkCachedConfig(spec, seen);
  if (!tokenizer || !model) throw new WorkerError(MODEL_ERROR.LOAD_FAILED, "the model did not load");
  const warmup = await warmUp(tokenizer, model);
  const served = await keepServedRevision(spec, seen.servedCommit);
  return loadResult({ spec, backend, adapterInfo, seen, served, started, warmup });
}

// What the runtime threw, named when it is a lost GPU device or exhausted memory (both are
// infrastructure failures: the attempt is an interruption, never the model's outcome).
const RUNTIME_FAILURES = [
  { code: MODEL_ERROR.DEVICE_LOST, pattern: /device (?:was |is )?lost|GPUDevice.*lost|DEVICE_REMOVED|DEVICE_HUNG/i },
  {
    code: MODEL_ERROR.OUT_OF_MEMORY,
    pattern: /out of memory|\bOOM\b|failed to allocate|allocation failed|RangeError: Array buffer allocation/i,
  },
];

// ---- dispatch ----------------------------------------------------------------------------

// One handler per request type, each given a request that fits its record; each answers
// with reply() or throws a WorkerError (any other throw is a runtime failure, named below).
const HANDLERS = {
  /** @param {InterruptRequest} request */
  [MODEL_TYPE.INTERRUPT](request) {
    const hit = running !== null && running.id === request.target;
    if (running && hit) running.interrupt = { reason: request.reason };
    reply(request.type, request.id, { interrupted: hit });
  },
  /** @param {LoadRequest} request */
  async [MODEL_TYPE.LOAD](request) {
    if (loading || loaded) throw new WorkerError(MODEL_ERROR.BUSY, "this worker already holds (or is loading) a model");
    loading = true;
    try {
      loaded = await load(request);
      reply(request.type, request.id, loaded);
    } finally {
      loading = false;
    }
  },
  /** @param {GenerateRequest} request */
  async [MODEL_TYPE.GENERATE](request) {
    self.postMessage(await generateReply(request));
  },
};

// A checked `generate` request -> its reply (with `elapsed_ms`), never a throw.
/** @param {GenerateRequest} request @returns {Promise<Envelope>} */
async function generateReply(request) {
  const received = performance.now();
  try {
    if (!loaded || !tokenizer || !model) throw new WorkerError(MODEL_ERROR.NOT_LOADED, "no model is loaded in this worker");
    if (running) throw new WorkerError(MODEL_ERROR.BUSY, `generation ${running.id} is still running`);
    running = { id: request.id, interrupt: null };
    try {
      const result = await generate(request, running, { tokenizer, model, templateOptions });
      return okReply(MODEL_CHANNEL, request.type, request.id, result, { elapsed_ms: performance.now() - received });
    } finally {
      running = null;
    }
  } catch (error) {
    return failedReply(MODEL_CHANNEL, request.type, request.id, failureCode(error, request.type), messageOf(error));
  }
}

// The code of what a handler threw: its WorkerError's, a named runtime failure, or the
// request type's fallback.
/** @param {unknown} error @param {unknown} type @returns {string} */
function failureCode(error, type) {
  const message = messageOf(error);
  const runtime = RUNTIME_FAILURES.find((failure) => failure.pattern.test(message));
  const fallback =
    error instanceof WorkerError ? error.code : type === MODEL_TYPE.GENERATE ? MODEL_ERROR.WORKER_ERROR : MODEL_ERROR.LOAD_FAILED;
  return runtime?.code ?? fallback;
}

// ---- the direct path: generate requests from the Python worker's mailbox ------------------

// site/common/model_mailbox.js: the page hands this worker the mailbox before its load, with the
// page's default generate `debug` (test hooks). A request is taken only when the page's gate
// lets generation n through (`direct_until`: loaded, no fault hook due); the page takes it
// otherwise. The reply is checked as the page would check it (one that does not fit is a
// failed reply `bad_reply`), with its `timing` (client_ms: here, from reading the request to
// writing the reply; no load wait: the gate is shut while loading).
/** @type {Mailbox | null} */
let mailbox = null;
/** @type {GenerateDebug | undefined} */
let mailboxDebug;

/** @param {Mailbox} mailbox @param {number} state */
async function serveMailbox(mailbox, state) {
  if (phaseOf(state) !== PHASE.request || !loaded || loading || running) return;
  if (mailbox.load("generations") + 1 > mailbox.load("direct_until")) return;
  const held = stateOf(seqOf(state), PHASE.worker);
  if (!mailbox.move(state, held)) return; // the page took it
  mailbox.add("generations", 1);
  const started = performance.now();
  const reply = await directReply(mailbox.text());
  const timed = () =>
    JSON.stringify(reply.timing ? { ...reply, timing: { ...reply.timing, client_ms: performance.now() - started } } : reply);
  if (mailbox.answer(held, timed)) mailbox.add("direct", 1);
}

// A mailbox request's text -> the reply the page would have given Python for it.
/** @param {string} text @returns {Promise<Envelope>} */
async function directReply(text) {
  /** @type {{ type?: unknown, id?: unknown, debug?: GenerateDebug }} */
  let request;
  try {
    request = { debug: mailboxDebug, .../** @type {object} */ (JSON.parse(text)) };
  } catch (error) {
    return failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, null, MODEL_ERROR.BAD_REQUEST, `the request is not JSON: ${messageOf(error)}`);
  }
  const refused =
    request.type === MODEL_TYPE.GENERATE
      ? checkRequest(request)
      : { code: MODEL_ERROR.UNKNOWN_TYPE, message: `${request.type} is not a request of the mailbox` };
  if (refused) return failedReply(MODEL_CHANNEL, request.type, request.id, refused.code, refused.message);
  // it fits the `generate` record (checkRequest)
  const { elapsed_ms: workerMs = null, ...answer } = await generateReply(/** @type {GenerateRequest} */ (request));
  const wrong = checkReply(MODEL_TYPE.GENERATE, workerMs === null ? answer : { ...answer, elapsed_ms: workerMs });
  const reply = wrong
    ? failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, request.id, MODEL_ERROR.BAD_REPLY, `the model worker's reply does not fit the protocol: ${wrong}`)
    : answer;
  return { ...reply, timing: { worker_ms: workerMs, client_ms: 0, load_wait_ms: 0 } };
}

/** @param {SharedArrayBuffer} buffer @param {GenerateDebug | undefined} debug */
function attachMailbox(buffer, debug) {
  if (mailbox) return; // one mailbox per worker
  const attached = new Mailbox(buffer);
  mailbox = attached;
  mailboxDebug = debug ?? undefined;
  attached.watch((state) => serveMailbox(attached, state));
}

self.onmessage = async (/** @type {MessageEvent<unknown>} */ { data }) => {
  /** @type {{ type?: unknown, id?: unknown, model_mailbox?: unknown, debug?: GenerateDebug }} */
  const request = typeof data === "object" && data !== null ? data : {};
  if (request.model_mailbox instanceof SharedArrayBuffer) {
    attachMailbox(request.model_mailbox, request.debug);
    return;
  }
  const refused = checkRequest(data);
  const type = String(request.type);
  // a dispatch table: each handler is given a request that fits its own record (checkRequest)
  const handler = refused === null && Object.hasOwn(HANDLERS, type) ? /** @type {(request: unknown) => unknown} */ (Reflect.get(HANDLERS, type)) : undefined;
  if (!handler) {
    // `provenance` fits the schema but is the client's to answer.
    const why = refused ?? { code: MODEL_ERROR.UNKNOWN_TYPE, message: `the model worker does not answer ${type}` };
    replyError(request.type, request.id, why.code, why.message);
    return;
  }
  try {
    await handler(request);
  } catch (error) {
    replyError(request.type, request.id, failureCode(error, request.type), messageOf(error));
  }
};

// A message that cannot even be deserialised: nothing to answer (no id), but never a crash.
self.onmessageerror = () => {
  replyError(null, null, MODEL_ERROR.BAD_REQUEST, "a message to the model worker could not be deserialised");
};
