// bench/wasm_loops.py's module worker (a diagnostic, never part of the site): loads a model
// through transformers.js like the page's model worker does, then times one greedy generation
// per request in one of five loops, to tell where browser decoding time goes:
//   "generate": transformers.js model.generate (greedy), as the page's worker called it before;
//   "greedy":   the page's loop (site/model_worker/greedy.js) with its output-bytes check;
//   "steps":    transformers.js's per-step input bookkeeping with a plain argmax;
//   "forward":  a loop over transformers.js model.forward with its own inputs, plain argmax;
//   "session":  a loop calling the onnxruntime-web session directly (ORT tensors, argmax).
// Replies {ok, ms, run_ms (inside session.run), tokens, ids} or {ok: false, error}.
import { AutoModelForCausalLM, AutoTokenizer, env } from "./transformers/transformers.min.js";
import { argmaxRow, greedyGenerate } from "./greedy.js";
import { byteCeiling, overCap } from "./output_bytes.js";

let model = null;
let prompt = null; // {input_ids, attention_mask} of the templated prompt
let session = null;
let tokenizer = null;

// The last position's argmax, by the page's own rule (site/model_worker/greedy.js).
const argmaxLast = (logits) => argmaxRow(logits.data, logits.dims.at(-2) - 1, logits.dims.at(-1));

async function load(request) {
  const base = new URL("./transformers/", self.location.href).href;
  const flavour = "ort-wasm-simd-threaded"; // the page's WASM build
  env.backends.onnx.wasm.wasmPaths = { mjs: `${base}${flavour}.mjs`, wasm: `${base}${flavour}.wasm` };
  env.backends.onnx.wasm.numThreads = request.threads;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = "/models/";
  const started = performance.now();
  tokenizer = await AutoTokenizer.from_pretrained(request.model_id);
  const options = { device: "wasm", dtype: request.dtype };
  if (request.session_options) options.session_options = request.session_options; // diagnostic
  model = await AutoModelForCausalLM.from_pretrained(request.model_id, options);
  session = model.sessions.model;
  const messages = [{ role: "user", content: request.prompt }];
  prompt = tokenizer.apply_chat_template(messages, { ...request.template, add_generation_prompt: true, return_dict: true });
  return { load_ms: performance.now() - started, threads: env.backends.onnx.wasm.numThreads, prompt_ids: Array.from(prompt.input_ids.data, Number) };
}

async function generateLoop(tokens) {
  const out = await model.generate({ ...prompt, max_new_tokens: tokens, min_new_tokens: tokens, do_sample: false });
  return out.tolist()[0].slice(prompt.input_ids.dims[1]).map(Number);
}

async function forwardLoop(tokens) {
  const Tensor = prompt.input_ids.constructor;
  let inputIds = prompt.input_ids;
  let past = null;
  let length = inputIds.dims[1];
  const ids = [];
  for (let i = 0; i < tokens; i++) {
    const step = inputIds.dims[1];
    const positions = BigInt64Array.from({ length: step }, (_, k) => BigInt(length - step + k));
    const mask = new Tensor("int64", new BigInt64Array(length).fill(1n), [1, length]);
    const out = await model.forward({ input_ids: inputIds, attention_mask: mask, position_ids: new Tensor("int64", positions, [1, step]), past_key_values: past });
    ids.push(argmaxLast(out.logits));
    past = {};
    for (const name in out) if (name.startsWith("present")) past[name.replace("present", "past_key_values")] = out[name];
    inputIds = new Tensor("int64", BigInt64Array.of(BigInt(ids.at(-1))), [1, 1]);
    length += 1;
  }
  return ids;
}

// The page's loop (site/model_worker/greedy.js) with its per-token output-bytes check
// (site/model_worker/output_bytes.js: a decode only once the ceiling could pass the cap; here the
// protocol's per-call cap, 1,024 bytes), without the page's worker around it.
async function greedyLoop(tokens) {
  const utf8 = new TextEncoder();
  const bytes = (ids) => utf8.encode(tokenizer.decode(ids, { skip_special_tokens: true })).length;
  const over = overCap(1024, byteCeiling(tokenizer._tokenizer), bytes);
  const hooks = { beforeStep: async () => {}, onToken: () => {}, shouldStop: over };
  return greedyGenerate(model, { ...prompt }, tokens, hooks);
}

// transformers.js's own per-step input bookkeeping (prepare_inputs_for_generation and
// _update_model_kwargs_for_generation, as generate calls them) with a plain argmax instead of
// generate's logits slicing, processors, sampler and stopping criteria.
async function stepsLoop(tokens) {
  const config = model.generation_config;
  const all = [Array.from(prompt.input_ids.data)];
  let inputs = { ...prompt };
  const ids = [];
  for (let i = 0; i < tokens; i++) {
    inputs = model.prepare_inputs_for_generation(all, inputs, config);
    const out = await model.forward(inputs);
    const next = BigInt(argmaxLast(out.logits));
    ids.push(Number(next));
    all[0].push(next);
    inputs = model._update_model_kwargs_for_generation({ generated_input_ids: [[next]], outputs: out, model_inputs: inputs, is_encoder_decoder: false });
  }
  await inputs.past_key_values?.dispose?.();
  return ids;
}

async function sessionLoop(tokens) {
  const OrtTensor = prompt.input_ids.ort_tensor.constructor;
  const int64 = (values, dims) => new OrtTensor("int64", BigInt64Array.from(values, BigInt), dims);
  const past = {};
  for (const meta of session.inputMetadata) {
    if (meta.name.startsWith("past_key_values.")) past[meta.name] = new OrtTensor("float32", new Float32Array(0), [1, meta.shape[1], 0, meta.shape[3]]);
  }
  let step = Array.from(prompt.input_ids.data, Number);
  let length = step.length;
  const ids = [];
  for (let i = 0; i < tokens; i++) {
    const feed = { input_ids: int64(step, [1, step.length]), attention_mask: int64(new Array(length).fill(1), [1, length]), ...past };
    if (session.inputNames.includes("position_ids")) feed.position_ids = int64(step.map((_, k) => length - step.length + k), [1, step.length]);
    const result = await session.run(feed);
    ids.push(argmaxLast(result.logits));
    for (const name in past) past[name] = result[name.replace("past_key_values.", "present.")];
    step = [ids.at(-1)];
    length += 1;
  }
  return ids;
}

const LOOPS = { generate: generateLoop, greedy: greedyLoop, steps: stepsLoop, forward: forwardLoop, session: sessionLoop };

self.onmessage = async ({ data: request }) => {
  try {
    if (request.type === "load") {
      self.postMessage({ ok: true, ...(await load(request)) });
      return;
    }
    let runMs = 0;
    const run = session.run.bind(session);
    session.run = async (...args) => {
      const started = performance.now();
      try {
        return await run(...args);
      } finally {
        runMs += performance.now() - started;
      }
    };
    const started = performance.now();
    try {
      const ids = await LOOPS[request.type](request.tokens);
      self.postMessage({ ok: true, ms: performance.now() - started, run_ms: runMs, tokens: ids.length, ids });
    } finally {
      session.run = run;
    }
  } catch (error) {
    self.postMessage({ ok: false, error: String(error?.stack ?? error) });
  }
};
