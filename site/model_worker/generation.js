// @ts-check
// One generation in the model worker (site/model_worker/model_worker.js hands each checked
// `generate` request here with the loaded tokenizer and model): the chat template rendered
// once and its tokens counted BEFORE generating, the greedy loop (./greedy.js) with its stop
// reasons checked after every token (the caps' output bytes, the deadline, an interrupt), the
// yields between steps that let an interrupt in, and the Completion record with its finish
// reason. See model_worker.js for the semantics in full.

import { greedyGenerate } from "./greedy.js";
import { byteCeiling, overCap } from "./output_bytes.js";
import { channelEvent } from "../common/envelope.js";
import { COMPLETION_FAILURE, MODEL_CHANNEL, MODEL_ERROR, MODEL_TYPE, TOKENS_EVERY_MS } from "../common/model_protocol.js";

/** @import { CausalModel, Hooks } from "./greedy.js" */
/** @import { Caps, Completion, GenerateDebug, Interrupt } from "../common/model_types.js" */
/** @import { GenerateRequest, Job, Tokenizer } from "./model_worker.js" */

const utf8 = new TextEncoder();

// The worker's refusal of a request: a code of MODEL_ERROR and one line.
export class WorkerError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// ---- yielding between generation steps ---------------------------------------------------

const tickChannel = new MessageChannel();
/** @type {(() => void)[]} */
const tickWaiters = [];
tickChannel.port1.onmessage = () => tickWaiters.shift()?.();
// Resolves after one trip through the event loop (faster than setTimeout's 4 ms clamp), so
// messages queued for this worker (an interrupt) are handled before the next forward pass.
/** @returns {Promise<void>} */
const tick = () =>
  new Promise((resolve) => {
    tickWaiters.push(resolve);
    tickChannel.port2.postMessage(0);
  });
/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A trip through the event loop costs ~0.05 ms, a toy model's whole step on WASM ~0.3 ms: the
// loop yields before a step only once YIELD_EVERY_MS have passed since it last yielded, so an
// interrupt waits at most that plus one step. (A real model's step takes longer than this, so
// it yields before every step.)
const YIELD_EVERY_MS = 2;

/** @param {number} ms */
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
  /** @param {(generated: number[]) => string | null | undefined} check */
  constructor(check) {
    this.check = check;
    /** @type {string | null} */
    this.reason = null;
  }
  /** @param {number[]} generated */
  test(generated) {
    if (this.reason === null) this.reason = this.check(generated) ?? null;
    return this.reason !== null;
  }
}

// ---- generate ----------------------------------------------------------------------------

/** @param {Caps} caps */
function checkCaps(caps) {
  const names = /** @type {const} */ (["max_input_tokens", "max_new_tokens", "max_output_bytes", "timeout_ms"]);
  if (!caps || names.some((name) => !Number.isInteger(caps[name]) || caps[name] < 0)) {
    throw new WorkerError(MODEL_ERROR.BAD_REQUEST, `caps needs non-negative integers ${names.join(", ")}`);
  }
  if (caps.max_new_tokens < 1) throw new WorkerError(MODEL_ERROR.BAD_REQUEST, "caps.max_new_tokens must be >= 1");
}

/** @param {string} text */
async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", utf8.encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** @param {number} inputTokens @param {{ text: string, sha256: string }} input @param {string} code @param {string} message @returns {Completion} */
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

/**
 * @param {GenerateRequest} request
 * @param {Job} job
 * @param {{ tokenizer: Tokenizer, model: CausalModel, templateOptions: Record<string, boolean | number | string> }} loadedModel
 * @returns {Promise<Completion>}
 */
export async function generate(request, job, { tokenizer, model, templateOptions }) {
  const received = performance.now();
  const { caps } = request;
  checkCaps(caps);
  const deadline = received + caps.timeout_ms;
  const messages = request.messages ?? [{ role: "user", content: String(request.prompt) }];

  // The input as the model sees it: the chat template rendered ONCE, recorded (with its
  // SHA-256) and tokenized — what apply_chat_template({tokenize: true}) does, without rendering
  // twice — and counted with the model's own tokenizer BEFORE generating.
  const templated = tokenizer.apply_chat_template(messages, {
    ...templateOptions,
    add_generation_prompt: true,
    tokenize: false,
  });
  if (typeof templated !== "string") throw new WorkerError(MODEL_ERROR.WORKER_ERROR, "the chat template gave tokens, not text");
  const inputs = tokenizer(templated, { add_special_tokens: false, return_tensor: true });
  const dims = inputs.input_ids.dims;
  const inputTokens = dims[dims.length - 1];
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
  /** @param {number[]} generated */
  const decodeBytes = (generated) => utf8.encode(tokenizer.decode(generated, { skip_special_tokens: true })).length;
  const over = overCap(caps.max_output_bytes, byteCeiling(tokenizer._tokenizer), decodeBytes);
  const overBytes = new StopReason((generated) => (over(generated) ? "bytes" : null));

  /** @type {number | null} */
  let firstTokenAt = null;
  /** @type {GenerateDebug} */
  const debug = request.debug ?? {};
  let stallOnce = Number(debug.stall_ms) || 0;
  const stepDelay = Number(debug.step_delay_ms) || 0;
  let yielded = received; // the request itself came through the event loop
  let reported = -Infinity; // when token progress was last posted
  /** @type {Hooks} */
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
    /** @param {number} index */
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
  /** @type {Completion["finish_reason"]} */
  let finish;
  if (interrupted.reason) finish = /** @type {Interrupt["reason"]} */ (interrupted.reason);
  else if (pastDeadline.reason) finish = "timeout";
  else if (ids.length && eosIds(tokenizer, model).has(ids[ids.length - 1])) finish = "eos";
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

/** @param {Tokenizer} tokenizer @param {CausalModel} model */
function eosIds(tokenizer, model) {
  const fromConfig = model?.generation_config?.eos_token_id ?? model?.config?.eos_token_id;
  const ids = fromConfig ?? tokenizer?.eos_token_id;
  return new Set((Array.isArray(ids) ? ids : [ids]).filter((x) => x !== undefined && x !== null).map(Number));
}
