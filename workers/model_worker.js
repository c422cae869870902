// Composition Lab model worker: one causal LM on transformers.js, in its own module worker.
// Started by the page (site/model_client.js) AFTER the user consented; one model per worker.
// Backend and model never change inside a worker: a new choice is a new worker.
//
// ---- The model-worker protocol (the one written-down copy; docs/models.md repeats it) ------
// Every message is a JSON-able object tagged on `type`. Requests carry an integer `id` that
// their reply repeats; events carry the `id` of the request they belong to.
//
//   request  {"type": T, "id": N, ...fields}
//   reply    {"type": T, "id": N, "ok": true,  "result": {...}}
//          | {"type": T, "id": N, "ok": false, "error": {"code": str, "message": str}}
//   event    {"type": "progress", "id": N (the load), "file", "status", "loaded", "total"}
//          | {"type": "first_token", "id": N (the generate)}: the first generated token exists
//
//   T = "load"       fields: model {model_id, revision, dtype, source ("bundled-fixture" |
//                              "hub" | "local-folder"), host (hub URL, source "hub" only),
//                              local_path (URL path of the models folder, bundled only),
//                              chat_template_options (object passed to the chat template,
//                              e.g. {enable_thinking: false}; default {}),
//                              fixture_config_sha256 (str | [str]: config.json digests of the
//                              test fixtures; a match labels the model a fixture),
//                              supported_model_types ([str], optional: config.json model_types
//                              the page accepts; another is refused after config.json only)},
//                            backend ("webgpu" | "wasm"), wasm_base (URL of the ORT files),
//                            threads (optional int; default: navigator.hardwareConcurrency
//                            when cross-origin isolated, else 1; the result says what ran)
//                    result: {backend_actual, dtype, chat_template_options, transformers_js_version,
//                             onnxruntime_version, threads, cross_origin_isolated, user_agent,
//                             adapter: {vendor, architecture, description,
//                                       is_fallback_adapter, shader_f16} | null,
//                             download_bytes (model files only), runtime_bytes (ORT wasm),
//                             download_ms, setup_ms, warmup_ms, files: [{file, bytes}]}
//                    error codes: backend_unavailable (WebGPU asked for, no adapter),
//                             architecture_unsupported (config.json model_type not runnable),
//                             dtype_unsupported (an f16 dtype without `shader-f16`),
//                             download_failed, load_failed, bad_request, busy
//   T = "generate"   fields: prompt (str, sent as one user message) | messages ([{role,
//                            content}]), caps {max_input_tokens, max_new_tokens,
//                            max_output_bytes, timeout_ms},
//                            debug (optional test hooks: {step_delay_ms: N} awaits N ms
//                            before every step; {stall_ms: N} blocks the worker N ms once,
//                            i.e. a step that never yields, to exercise terminate())
//                    result (a Completion, see pyapp/conditions/model.py): {text, finish_reason,
//                            input_tokens, output_tokens, output_token_ids, generation_ms,
//                            time_to_first_token_ms, failure: {code, message} | null,
//                            input_text (the chat-templated input), input_sha256}
//                    the reply envelope also carries "elapsed_ms": the worker's own time
//                    from receiving the request to replying (for the bridge-overhead bench)
//                    error codes: not_loaded, busy, bad_request, worker_error
//   T = "interrupt"  fields: target (id of the running generate), reason ("cancelled" |
//                            "timeout")       result: {interrupted: bool}
//
// Generation semantics: greedy (`do_sample: false`); the chat template from the model's
// tokenizer_config.json; the prompt's tokens are counted with the model's tokenizer BEFORE
// generating (over `max_input_tokens` -> no generation, finish null, failure
// `input_budget`); `max_new_tokens` from the caps; a StoppingCriteria for the output bytes
// (finish `bytes`), one for the deadline (finish `timeout`) and an interruptible one
// (finish `cancelled`/`timeout`). The generate loop awaits a MessageChannel tick before each
// forward pass, so interrupts are handled between steps even on WASM. Finish reason, in
// order: interrupted/deadline -> its reason; last id is EOS -> `eos`; bytes cap -> `bytes`;
// `max_new_tokens` reached -> `length`; otherwise `error`.
// -----------------------------------------------------------------------------------------

import {
  AutoConfig,
  AutoModelForCausalLM,
  AutoTokenizer,
  env,
  StoppingCriteria,
} from "./transformers/transformers.min.js";

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

function busyWait(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* a step that never yields (test hook) */
  }
}

// ---- stopping criteria -------------------------------------------------------------------

// Stops when `check()` returns a reason; remembers the first reason.
class ReasonCriteria extends StoppingCriteria {
  constructor(check) {
    super();
    this.check = check;
    this.reason = null;
  }
  _call(inputIds) {
    if (this.reason === null) this.reason = this.check(inputIds) ?? null;
    return inputIds.map(() => this.reason !== null);
  }
}

// ---- helpers -----------------------------------------------------------------------------

function reply(type, id, result, extra = {}) {
  self.postMessage({ type, id, ok: true, result, ...extra });
}

function replyError(type, id, code, message) {
  self.postMessage({ type, id, ok: false, error: { code, message } });
}

class LoadError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function webgpuAdapter() {
  if (!("gpu" in navigator) || !navigator.gpu) return { adapter: null, why: "navigator.gpu is missing" };
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (error) {
    return { adapter: null, why: `requestAdapter() failed: ${error.message}` };
  }
  if (!adapter) return { adapter: null, why: "navigator.gpu.requestAdapter() returned no adapter" };
  const info = adapter.info ?? {};
  return {
    adapter,
    info: {
      vendor: info.vendor || null,
      architecture: info.architecture || null,
      description: info.description || null,
      is_fallback_adapter: info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? null,
      shader_f16: adapter.features.has("shader-f16"),
    },
  };
}

function eosIds() {
  const fromConfig = model?.generation_config?.eos_token_id ?? model?.config?.eos_token_id;
  const ids = fromConfig ?? tokenizer?.eos_token_id;
  return new Set((Array.isArray(ids) ? ids : [ids]).filter((x) => x !== undefined && x !== null).map(Number));
}

// Whether a config.json response is byte for byte one of the test fixtures' (by SHA-256).
// SHA-256 (hex) of a config.json response: recorded in the provenance, and compared with the
// test fixtures' digests.
async function configDigest(response) {
  const digest = await crypto.subtle.digest("SHA-256", await response.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// What the WASM runtime runs with, measured: SIMD by validating a tiny SIMD module (the
// wasm-feature-detect probe), threads only where the page is cross-origin isolated.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

function measureWasm(threads) {
  const isolated = self.crossOriginIsolated === true;
  return {
    threads: Number.isInteger(threads) ? threads : null,
    simd: WebAssembly.validate(SIMD_PROBE),
    cross_origin_isolated: isolated,
    threads_allowed: isolated && typeof SharedArrayBuffer !== "undefined",
  };
}

// The commit the hub served is kept WITH the cached files (an entry of the same Cache
// Storage, so "Clear stored data" removes both): a later load from the cache still names it.
const REVISION_CACHE = "transformers-cache";

async function keepServedRevision(spec, commit) {
  if (spec.source !== "hub") return { commit: null, note: null };
  const marker = `${spec.host}${spec.model_id}/resolve/${spec.revision}/.composition-lab-revision-served`;
  try {
    const cache = await caches.open(REVISION_CACHE);
    if (commit) {
      await cache.put(marker, new Response(commit));
      return { commit, note: "download (the hub's X-Repo-Commit header)" };
    }
    const kept = await cache.match(marker);
    if (kept) return { commit: await kept.text(), note: "kept with the cached files (recorded when they were downloaded)" };
    return { commit: null, note: "unknown: the files came from the browser cache and no download of them recorded the commit" };
  } catch (error) {
    return { commit, note: commit ? "download (not kept: Cache Storage failed)" : `unknown: Cache Storage failed (${error.message})` };
  }
}

// ---- load --------------------------------------------------------------------------------

async function load(request) {
  const started = performance.now();
  const { model: spec, backend } = request;
  if (!spec || typeof spec.model_id !== "string" || !["webgpu", "wasm"].includes(backend)) {
    throw new LoadError("bad_request", "load needs model.model_id and backend webgpu|wasm");
  }
  // Backend first: never fetch a byte for a backend that cannot run, never fall back.
  let adapterInfo = null;
  if (backend === "webgpu") {
    const found = await webgpuAdapter();
    if (!found.adapter) {
      throw new LoadError(
        "backend_unavailable",
        `WebGPU is not available in this browser (${found.why}). Nothing was downloaded and ` +
          "nothing will run on another backend; choose WASM explicitly to run on the CPU.",
      );
    }
    adapterInfo = found.info;
    if (/f16/.test(spec.dtype) && !adapterInfo.shader_f16) {
      throw new LoadError(
        "dtype_unsupported",
        `dtype ${spec.dtype} needs the WebGPU feature shader-f16, which this adapter ` +
          `(${adapterInfo.vendor ?? "unknown vendor"}) lacks. Choose a dtype without f16 ` +
          "(q4 or fp32) explicitly; nothing was downloaded.",
      );
    }
  }

  // transformers.js settings: local ORT wasm, one model source, no silent remote fallback.
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

  // Count what actually crosses the network API (cache hits never reach env.fetch).
  const files = new Map(); // model files fetched over the network API -> bytes
  let runtimeBytes = 0; // the ORT wasm runtime, fetched once per worker
  let firstFetch = null;
  let lastDone = null;
  let servedCommit = null; // the hub's X-Repo-Commit: which commit a branch revision resolved to
  // A model whose config.json is byte for byte the test fixture's is the fixture, whatever
  // host served it: it is labelled a fixture, never model evidence.
  // The test fixtures: the tiny fixture and the catalogue stand-ins (site/models.json).
  let isTestFixture = false;
  let configFetched = false;
  let configSha256 = null; // the config.json this load used (null when none was seen)
  const fixtureConfigs = [spec.fixture_config_sha256].flat().filter((x) => typeof x === "string");
  const realFetch = globalThis.fetch.bind(globalThis);
  env.fetch = async (url, init) => {
    firstFetch ??= performance.now();
    const response = await realFetch(url, init);
    if ((init?.method ?? "GET") === "GET" && response.ok) {
      const size = Number(response.headers.get("content-length")) || 0;
      const name = String(url);
      if (name.startsWith(wasmBase)) runtimeBytes += size;
      else {
        files.set(name, size);
        servedCommit ??= response.headers.get("x-repo-commit");
        if (/(^|\/)config\.json(\?|$)/.test(name) && !/_config\.json/.test(name)) {
          configFetched = true;
          configSha256 = await configDigest(response.clone());
          if (fixtureConfigs.includes(configSha256)) isTestFixture = true;
        }
      }
    }
    return response;
  };
  const progress = (data) => {
    if (!data || !data.file) return;
    if (data.status === "done") lastDone = performance.now();
    self.postMessage({
      type: "progress",
      id: request.id,
      file: data.file,
      status: data.status,
      loaded: data.loaded ?? null,
      total: data.total ?? null,
    });
  };

  templateOptions = spec.chat_template_options && typeof spec.chat_template_options === "object" ? spec.chat_template_options : {};
  const options = { revision: spec.revision, progress_callback: progress };
  try {
    if (Array.isArray(spec.supported_model_types)) {
      // config.json only, then refuse an architecture transformers.js cannot run (a free-text id).
      const config = await AutoConfig.from_pretrained(spec.model_id, options);
      if (!spec.supported_model_types.includes(config.model_type)) {
        throw new LoadError(
          "architecture_unsupported",
          `${spec.model_id} is a "${config.model_type}" model, which this transformers.js (${env.version}) ` +
            "cannot run as a causal LM; only its config.json was downloaded.",
        );
      }
    }
    tokenizer = await AutoTokenizer.from_pretrained(spec.model_id, options);
    model = await AutoModelForCausalLM.from_pretrained(spec.model_id, {
      ...options,
      device: backend,
      dtype: spec.dtype,
    });
  } catch (error) {
    tokenizer = model = null;
    if (error instanceof LoadError) throw error;
    const message = error?.message || String(error);
    const code = /fetch|not found|404|network|Failed to load|HTTP/i.test(message) ? "download_failed" : "load_failed";
    throw new LoadError(code, message);
  }
  const downloadMs = firstFetch !== null && lastDone !== null ? lastDone - firstFetch : null;
  if (spec.source === "hub" && !configFetched) {
    // config.json came from the browser's cache (no fetch to look at): check the cached copy.
    const url = new URL(`${spec.model_id}/resolve/${encodeURIComponent(spec.revision)}/config.json`, spec.host).href;
    const cached = await caches.open("transformers-cache").then((cache) => cache.match(url)).catch(() => undefined);
    if (cached) {
      configSha256 = await configDigest(cached);
      if (fixtureConfigs.includes(configSha256)) isTestFixture = true;
    }
  }

  // Warm-up: one token, so the first measured generation does not pay for lazy init.
  const warmStart = performance.now();
  const warm = tokenizer.apply_chat_template([{ role: "user", content: "Hi" }], {
    ...templateOptions,
    add_generation_prompt: true,
    return_dict: true,
  });
  await model.generate({ ...warm, max_new_tokens: 1, do_sample: false });
  const warmupMs = performance.now() - warmStart;

  const onnx = env.backends.onnx;
  const served = await keepServedRevision(spec, servedCommit);
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
    is_test_fixture: isTestFixture || spec.source === "bundled-fixture",
    config_sha256: configSha256,
    download_bytes: [...files.values()].reduce((a, b) => a + b, 0),
    runtime_bytes: runtimeBytes,
    download_ms: downloadMs,
    setup_ms: performance.now() - started,
    warmup_ms: warmupMs,
    files: [...files.entries()].map(([file, bytes]) => ({ file, bytes })),
  };
}

// ---- generate ----------------------------------------------------------------------------

function checkCaps(caps) {
  const names = ["max_input_tokens", "max_new_tokens", "max_output_bytes", "timeout_ms"];
  if (!caps || names.some((name) => !Number.isInteger(caps[name]) || caps[name] < 0)) {
    throw new LoadError("bad_request", `caps needs non-negative integers ${names.join(", ")}`);
  }
  if (caps.max_new_tokens < 1) throw new LoadError("bad_request", "caps.max_new_tokens must be >= 1");
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
  const messages = Array.isArray(request.messages)
    ? request.messages
    : [{ role: "user", content: String(request.prompt ?? "") }];

  // Count the prompt with the model's own tokenizer and chat template BEFORE generating.
  const inputs = tokenizer.apply_chat_template(messages, {
    ...templateOptions,
    add_generation_prompt: true,
    return_dict: true,
  });
  const inputTokens = inputs.input_ids.dims.at(-1);
  // The input as the model sees it (chat template applied), recorded with its SHA-256.
  const templated = tokenizer.apply_chat_template(messages, {
    ...templateOptions,
    add_generation_prompt: true,
    tokenize: false,
  });
  const input = { text: templated, sha256: await sha256Hex(templated) };
  if (inputTokens > caps.max_input_tokens) {
    return noGeneration(
      inputTokens,
      input,
      "input_budget",
      `prompt has ${inputTokens} tokens, over the cap of ${caps.max_input_tokens}`,
    );
  }

  const generatedOf = (ids) => ids[0].slice(inputTokens);
  const interrupted = new ReasonCriteria(() => job.interrupt?.reason);
  const pastDeadline = new ReasonCriteria(() => (performance.now() >= deadline ? "timeout" : null));
  const overBytes = new ReasonCriteria((ids) => {
    const text = tokenizer.decode(generatedOf(ids).map(Number), { skip_special_tokens: true });
    return utf8.encode(text).length > caps.max_output_bytes ? "bytes" : null;
  });

  let firstTokenAt = null;
  let puts = 0;
  const streamer = {
    put() {
      // The first put is the prompt; every later one is a generated token.
      if (puts++ === 1) {
        firstTokenAt = performance.now();
        self.postMessage({ type: "first_token", id: request.id });
      }
    },
    end() {},
  };

  const debug = request.debug ?? {};
  let stallOnce = Number(debug.stall_ms) || 0;
  const stepDelay = Number(debug.step_delay_ms) || 0;
  const forward = model.forward;
  model.forward = async (modelInputs) => {
    await tick(); // let an interrupt in before every step
    if (stepDelay) await sleep(stepDelay);
    if (stallOnce) {
      busyWait(stallOnce);
      stallOnce = 0;
    }
    return forward.call(model, modelInputs);
  };
  const started = performance.now();
  let sequences;
  try {
    sequences = await model.generate({
      ...inputs,
      max_new_tokens: caps.max_new_tokens,
      do_sample: false,
      stopping_criteria: [interrupted, pastDeadline, overBytes],
      streamer,
    });
  } finally {
    model.forward = forward;
  }
  const generationMs = performance.now() - started;

  const ids = generatedOf(sequences.tolist()).map(Number);
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
      ? { code: "timeout", message: `deadline of ${caps.timeout_ms} ms reached; soft stop after ${ids.length} tokens` }
      : finish === "cancelled"
        ? { code: "cancelled", message: `cancelled after ${ids.length} tokens` }
        : finish === "error"
          ? { code: "worker_error", message: "generation stopped for no known reason" }
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
    input_text: input.text,
    input_sha256: input.sha256,
  };
}

// What the runtime threw, named when it is a lost GPU device or exhausted memory (both are
// infrastructure failures: the attempt is an interruption, never the model's outcome).
const RUNTIME_FAILURES = [
  { code: "device_lost", pattern: /device (?:was |is )?lost|GPUDevice.*lost|DEVICE_REMOVED|DEVICE_HUNG/i },
  { code: "out_of_memory", pattern: /out of memory|\bOOM\b|failed to allocate|allocation failed|RangeError: Array buffer allocation/i },
];

// ---- dispatch ----------------------------------------------------------------------------

self.onmessage = async ({ data: request }) => {
  const type = request?.type;
  const id = request?.id;
  try {
    if (type === "interrupt") {
      const hit = running !== null && running.id === request.target;
      if (hit) running.interrupt = { reason: request.reason === "timeout" ? "timeout" : "cancelled" };
      reply(type, id, { interrupted: hit });
    } else if (type === "load") {
      if (loading || loaded) {
        replyError(type, id, "busy", "this worker already holds (or is loading) a model");
        return;
      }
      loading = true;
      try {
        loaded = await load(request);
        reply(type, id, loaded);
      } finally {
        loading = false;
      }
    } else if (type === "generate") {
      if (!loaded) {
        replyError(type, id, "not_loaded", "no model is loaded in this worker");
        return;
      }
      if (running) {
        replyError(type, id, "busy", `generation ${running.id} is still running`);
        return;
      }
      running = { id, interrupt: null };
      const received = performance.now();
      try {
        const result = await generate(request, running);
        reply(type, id, result, { elapsed_ms: performance.now() - received });
      } finally {
        running = null;
      }
    } else {
      replyError(type ?? null, id ?? null, "unknown_type", `unknown message type ${JSON.stringify(type)}`);
    }
  } catch (error) {
    const message = error?.message || String(error);
    const runtime = RUNTIME_FAILURES.find((failure) => failure.pattern.test(message));
    const fallback = error instanceof LoadError ? error.code : type === "generate" ? "worker_error" : "load_failed";
    replyError(type, id, runtime?.code ?? fallback, message);
  }
};
