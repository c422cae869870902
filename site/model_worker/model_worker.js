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
import { byteCeiling, overCap } from "./output_bytes.js";
import { checkCachedConfig, keepServedRevision, measureWasm, watchFetches, webgpuAdapter } from "./load_provenance.js";
import { checkReply, checkRequest } from "../common/model_check.js";
import { channelEvent, failedReply, okReply } from "../common/envelope.js";
import { Mailbox, PHASE, phaseOf, seqOf, stateOf } from "../common/model_mailbox.js";
import { COMPLETION_FAILURE, MODEL_CHANNEL, MODEL_ERROR, MODEL_TYPE, TOKENS_EVERY_MS, WARMUP_TOKENS } from "../common/model_protocol.js";

let tokenizer = null;
let model = null;
let loaded = null; // the load result, once ready
let loading = false;
let running = null; // {id, interrupt: {reason}|null}
let templateOptions = {}; // the entry's chat-template options (e.g. {enable_thinking: false})
const utf8 = new TextEncoder();

// ---- yielding between generation steps ---------------------------------------------------

const tickChannel = new MessageChannel();
const tickWaiters = [];
tickChannel.port1.onmessage = () => tickWaiters.shift()?.();
// Resolves after one trip through the event loop (faster than setTimeout's 4 ms clamp), so
// messages queued for this worker (an interrupt) are handled before the next forward pass.
const tick = () =>
  new Promise((resolve) => {
    tickWaiters.push(resolve);
    tickChannel.port2.postMessage(0);
  });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A trip through the event loop costs ~0.05 ms, a toy model's whole step on WASM ~0.3 ms: the
// loop yields before a step only once YIELD_EVERY_MS have passed since it last yielded, so an
// interrupt waits at most that plus one step. (A real model's step takes longer than this, so
// it yields before every step.)
const YIELD_EVERY_MS = 2;

function busyWait(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* a step that never yields (test hook) */
  }
}

// ---- stop reasons ------------------------------------------------------------------------

// A reason to stop generating, checked after every generated token; once it has a reason it
// keeps it (the first one seen).
class StopReason {
  constructor(check) {
    this.check = check;
    this.reason = null;
  }
  test(generated) {
    if (this.reason === null) this.reason = this.check(generated) ?? null;
    return this.reason !== null;
  }
}

// ---- helpers -----------------------------------------------------------------------------

// Replies and events are built by the one envelope of both channels (../common/envelope.js).
function reply(type, id, result, extra = {}) {
  self.postMessage(okReply(MODEL_CHANNEL, type, id, result, extra));
}

// A failed reply (the envelope echoes `type` and `id` only when a request carries them).
function replyError(type, id, code, message) {
  self.postMessage(failedReply(MODEL_CHANNEL, type, id, code, message));
}

class WorkerError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function eosIds() {
  const fromConfig = model?.generation_config?.eos_token_id ?? model?.config?.eos_token_id;
  const ids = fromConfig ?? tokenizer?.eos_token_id;
  return new Set((Array.isArray(ids) ? ids : [ids]).filter((x) => x !== undefined && x !== null).map(Number));
}

// ---- load --------------------------------------------------------------------------------

// Backend first: never fetch a byte for a backend that cannot run, never fall back. Returns
// the WebGPU adapter's info (null on WASM).
async function checkBackend(spec, backend) {
  if (backend !== "webgpu") return null;
  const found = await webgpuAdapter();
  if (!found.adapter) {
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
function configureRuntime(request) {
  const { model: spec, backend } = request;
  const wasmBase = new URL(request.wasm_base, self.location.href).href;
  const flavour = backend === "webgpu" ? "ort-wasm-simd-threaded.asyncify" : "ort-wasm-simd-threaded";
  env.backends.onnx.wasm.wasmPaths = { mjs: `${wasmBase}${flavour}.mjs`, wasm: `${wasmBase}${flavour}.wasm` };
  // Threads: every core cross-origin isolation lets ORT use (SharedArrayBuffer), unless the
  // request names a count; ORT's own default, ceil(cores / 2), is 1 thread on 2 cores.
  const isolated = self.crossOriginIsolated === true;
  const cores = Math.max(1, navigator.hardwareConcurrency || 1);
  env.backends.onnx.wasm.numThreads =
    Number.isInteger(request.threads) && request.threads > 0 ? request.threads : isolated ? cores : 1;
  if (spec.source === "hub") {
    env.allowLocalModels = false;
    env.allowRemoteModels = true; // the user consented to this one download
    env.remoteHost = spec.host;
    env.remotePathTemplate = "{model}/resolve/{revision}/";
  } else {
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = spec.local_path; // a PATH: a full URL disables local lookup
  }
  return wasmBase;
}

// transformers.js's progress callback, sent on as `progress` events of the load `id`.
function progressReporter(id, seen) {
  return (data) => {
    if (!data || !data.file) return;
    if (data.status === "done") seen.lastDone = performance.now();
    self.postMessage(
      channelEvent(MODEL_CHANNEL, "client", MODEL_TYPE.PROGRESS, {
        id,
        file: String(data.file),
        status: String(data.status),
        loaded: Number.isFinite(data.loaded) ? data.loaded : null,
        total: Number.isFinite(data.total) ? data.total : null,
      }),
    );
  };
}

// config.json only, then refuse an architecture transformers.js cannot run (a free-text id).
async function checkArchitecture(spec, options) {
  if (!Array.isArray(spec.supported_model_types)) return;
  const config = await AutoConfig.from_pretrained(spec.model_id, options);
  if (!spec.supported_model_types.includes(config.model_type)) {
    throw new WorkerError(
      MODEL_ERROR.ARCHITECTURE_UNSUPPORTED,
      `${spec.model_id} is a "${config.model_type}" model, which this transformers.js (${env.version}) ` +
        "cannot run as a causal LM; only its config.json was downloaded.",
    );
  }
}

// The tokenizer and the ONNX session (download included); a failure is download_failed or
// load_failed, and leaves nothing loaded.
async function createSession(spec, backend, options) {
  try {
    await checkArchitecture(spec, options);
    tokenizer = await AutoTokenizer.from_pretrained(spec.model_id, options);
    model = await AutoModelForCausalLM.from_pretrained(spec.model_id, { ...options, device: backend, dtype: spec.dtype });
  } catch (error) {
    tokenizer = model = null;
    if (error instanceof WorkerError) throw error;
    const message = error?.message || String(error);
    const code = /fetch|not found|404|network|Failed to load|HTTP/i.test(message)
      ? MODEL_ERROR.DOWNLOAD_FAILED
      : MODEL_ERROR.LOAD_FAILED;
    throw new WorkerError(code, message);
  }
}

// Warm-up: a few tokens (WARMUP_TOKENS), so the first measured generation does not pay for
// lazy init, each step timed: the client derives this load's stall window from those step
// times. Returns {ms, steps}.
async function warmUp() {
  const started = performance.now();
  const warm = tokenizer.apply_chat_template([{ role: "user", content: "Hi" }], {
    ...templateOptions,
    add_generation_prompt: true,
    return_dict: true,
  });
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

// The LoadResult record (pyapp/protocol/model_messages.py).
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
  const warmup = await warmUp();
  const served = await keepServedRevision(spec, seen.servedCommit);
  return loadResult({ spec, backend, adapterInfo, seen, served, started, warmup });
}

// ---- generate ----------------------------------------------------------------------------

function checkCaps(caps) {
  const names = ["max_input_tokens", "max_new_tokens", "max_output_bytes", "timeout_ms"];
  if (!caps || names.some((name) => !Number.isInteger(caps[name]) || caps[name] < 0)) {
    throw new WorkerError(MODEL_ERROR.BAD_REQUEST, `caps needs non-negative integers ${names.join(", ")}`);
  }
  if (caps.max_new_tokens < 1) throw new WorkerError(MODEL_ERROR.BAD_REQUEST, "caps.max_new_tokens must be >= 1");
}

async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", utf8.encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function noGeneration(inputTokens, input, code, message) {
  return {
    text: "",
    finish_reason: null,
    input_tokens: inputTokens,
    output_tokens: null,
    output_token_ids: null,
    generation_ms: null,
    time_to_first_token_ms: null,
    failure: { code, message },
    input_text: input.text,
    input_sha256: input.sha256,
  };
}

async function generate(request, job) {
  const received = performance.now();
  const { caps } = request;
  checkCaps(caps);
  const deadline = received + caps.timeout_ms;
  const messages = request.messages ?? [{ role: "user", content: request.prompt }];

  // The input as the model sees it: the chat template rendered ONCE, recorded (with its
  // SHA-256) and tokenized — what apply_chat_template({tokenize: true}) does, without rendering
  // twice — and counted with the model's own tokenizer BEFORE generating.
  const templated = tokenizer.apply_chat_template(messages, {
    ...templateOptions,
    add_generation_prompt: true,
    tokenize: false,
  });
  const inputs = tokenizer(templated, { add_special_tokens: false, return_tensor: true });
  const inputTokens = inputs.input_ids.dims.at(-1);
  // The digest runs beside the generation (crypto.subtle answers in a later task: awaited
  // first, it cost the call a turn of the event loop).
  const digest = sha256Hex(templated);
  if (inputTokens > caps.max_input_tokens) {
    return noGeneration(
      inputTokens,
      { text: templated, sha256: await digest },
      COMPLETION_FAILURE.INPUT_BUDGET,
      `prompt has ${inputTokens} tokens, over the cap of ${caps.max_input_tokens}`,
    );
  }

  const interrupted = new StopReason(() => job.interrupt?.reason);
  const pastDeadline = new StopReason(() => (performance.now() >= deadline ? "timeout" : null));
  const decodeBytes = (generated) => utf8.encode(tokenizer.decode(generated, { skip_special_tokens: true })).length;
  const over = overCap(caps.max_output_bytes, byteCeiling(tokenizer._tokenizer), decodeBytes);
  const overBytes = new StopReason((generated) => (over(generated) ? "bytes" : null));

  let firstTokenAt = null;
  const debug = request.debug ?? {};
  let stallOnce = Number(debug.stall_ms) || 0;
  const stepDelay = Number(debug.step_delay_ms) || 0;
  let yielded = received; // the request itself came through the event loop
  let reported = -Infinity; // when token progress was last posted
  const hooks = {
    async beforeStep() {
      if (performance.now() - yielded >= YIELD_EVERY_MS) {
        await tick(); // let an interrupt in
        yielded = performance.now();
      }
      if (stepDelay) await sleep(stepDelay);
      if (stallOnce) {
        busyWait(stallOnce);
        stallOnce = 0;
      }
    },
    onToken(index) {
      const now = performance.now();
      if (index === 0) {
        firstTokenAt = now;
        self.postMessage(channelEvent(MODEL_CHANNEL, "client", MODEL_TYPE.FIRST_TOKEN, { id: request.id }));
      }
      // Progress for the client's hard-stop judgement (a stall is no token for a window).
      if (index === 0 || now - reported >= TOKENS_EVERY_MS) {
        reported = now;
        self.postMessage(channelEvent(MODEL_CHANNEL, "client", MODEL_TYPE.TOKENS, { id: request.id, tokens: index + 1 }));
      }
    },
    // Every reason is checked every step (none short-circuits another), as before.
    shouldStop: (generated) => [interrupted, pastDeadline, overBytes].map((stop) => stop.test(generated)).some(Boolean),
  };
  const started = performance.now();
  const ids = await greedyGenerate(model, inputs, caps.max_new_tokens, hooks);
  const generationMs = performance.now() - started;

  const text = tokenizer.decode(ids, { skip_special_tokens: true });
  let finish;
  if (interrupted.reason) finish = interrupted.reason;
  else if (pastDeadline.reason) finish = "timeout";
  else if (ids.length && eosIds().has(ids.at(-1))) finish = "eos";
  else if (overBytes.reason) finish = "bytes";
  else if (ids.length >= caps.max_new_tokens) finish = "length";
  else finish = "error";
  const failure =
    finish === "timeout"
      ? {
          code: COMPLETION_FAILURE.TIMEOUT,
          message: `deadline of ${caps.timeout_ms} ms reached; soft stop after ${ids.length} tokens`,
        }
      : finish === "cancelled"
        ? { code: COMPLETION_FAILURE.CANCELLED, message: `cancelled after ${ids.length} tokens` }
        : finish === "error"
          ? { code: COMPLETION_FAILURE.WORKER_ERROR, message: "generation stopped for no known reason" }
          : null;
  return {
    text,
    finish_reason: finish,
    input_tokens: inputTokens,
    output_tokens: ids.length,
    output_token_ids: ids,
    generation_ms: generationMs,
    time_to_first_token_ms: firstTokenAt === null ? null : firstTokenAt - received,
    failure,
    input_text: templated,
    input_sha256: await digest,
  };
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
  [MODEL_TYPE.INTERRUPT](request) {
    const hit = running !== null && running.id === request.target;
    if (hit) running.interrupt = { reason: request.reason };
    reply(request.type, request.id, { interrupted: hit });
  },
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
  async [MODEL_TYPE.GENERATE](request) {
    self.postMessage(await generateReply(request));
  },
};

// A checked `generate` request -> its reply (with `elapsed_ms`), never a throw.
async function generateReply(request) {
  const received = performance.now();
  try {
    if (!loaded) throw new WorkerError(MODEL_ERROR.NOT_LOADED, "no model is loaded in this worker");
    if (running) throw new WorkerError(MODEL_ERROR.BUSY, `generation ${running.id} is still running`);
    running = { id: request.id, interrupt: null };
    try {
      const result = await generate(request, running);
      return okReply(MODEL_CHANNEL, request.type, request.id, result, { elapsed_ms: performance.now() - received });
    } finally {
      running = null;
    }
  } catch (error) {
    return failedReply(MODEL_CHANNEL, request.type, request.id, failureCode(error, request.type), error?.message || String(error));
  }
}

// The code of what a handler threw: its WorkerError's, a named runtime failure, or the
// request type's fallback.
function failureCode(error, type) {
  const message = error?.message || String(error);
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
let mailbox = null;
let mailboxDebug;

async function serveMailbox(state) {
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
async function directReply(text) {
  let request;
  try {
    request = { debug: mailboxDebug, ...JSON.parse(text) };
  } catch (error) {
    return failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, null, MODEL_ERROR.BAD_REQUEST, `the request is not JSON: ${error.message}`);
  }
  const refused =
    request.type === MODEL_TYPE.GENERATE
      ? checkRequest(request)
      : { code: MODEL_ERROR.UNKNOWN_TYPE, message: `${request.type} is not a request of the mailbox` };
  if (refused) return failedReply(MODEL_CHANNEL, request.type, request.id, refused.code, refused.message);
  const { elapsed_ms: workerMs = null, ...answer } = await generateReply(request);
  const wrong = checkReply(MODEL_TYPE.GENERATE, workerMs === null ? answer : { ...answer, elapsed_ms: workerMs });
  const reply = wrong
    ? failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, request.id, MODEL_ERROR.BAD_REPLY, `the model worker's reply does not fit the protocol: ${wrong}`)
    : answer;
  return { ...reply, timing: { worker_ms: workerMs, client_ms: 0, load_wait_ms: 0 } };
}

function attachMailbox(buffer, debug) {
  if (mailbox) return; // one mailbox per worker
  mailbox = new Mailbox(buffer);
  mailboxDebug = debug ?? undefined;
  mailbox.watch(serveMailbox);
}

self.onmessage = async ({ data: request }) => {
  if (request?.model_mailbox instanceof SharedArrayBuffer) {
    attachMailbox(request.model_mailbox, request.debug);
    return;
  }
  const refused = checkRequest(request);
  const handler = refused === null ? HANDLERS[request.type] : undefined;
  if (!handler) {
    // `provenance` fits the schema but is the client's to answer.
    const why = refused ?? { code: MODEL_ERROR.UNKNOWN_TYPE, message: `the model worker does not answer ${request.type}` };
    replyError(request?.type, request?.id, why.code, why.message);
    return;
  }
  try {
    await handler(request);
  } catch (error) {
    replyError(request.type, request.id, failureCode(error, request.type), error?.message || String(error));
  }
};

// A message that cannot even be deserialised: nothing to answer (no id), but never a crash.
self.onmessageerror = () => {
  replyError(null, null, MODEL_ERROR.BAD_REQUEST, "a message to the model worker could not be deserialised");
};
