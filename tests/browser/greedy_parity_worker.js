// tests/browser/test_greedy.py's module worker (never part of the site): loads a model through
// the site's transformers.js on WASM like the page's model worker, then generates greedily
// twice from the same templated prompt — with transformers.js's model.generate and with the
// page's workers/greedy.js — and replies both token lists, so the test can compare them.
import { AutoModelForCausalLM, AutoTokenizer, env } from "./transformers/transformers.min.js";
import { greedyGenerate } from "./greedy.js";

let tokenizer = null;
let model = null;

async function load({ model_id, dtype }) {
  const base = new URL("./transformers/", self.location.href).href;
  const flavour = "ort-wasm-simd-threaded"; // the page's WASM build
  env.backends.onnx.wasm.wasmPaths = { mjs: `${base}${flavour}.mjs`, wasm: `${base}${flavour}.wasm` };
  env.backends.onnx.wasm.numThreads = 1;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = "/models/";
  tokenizer = await AutoTokenizer.from_pretrained(model_id);
  model = await AutoModelForCausalLM.from_pretrained(model_id, { device: "wasm", dtype });
  return {};
}

async function compare({ prompt, template, tokens, stop_after, repetition_penalty }) {
  model.generation_config.repetition_penalty = repetition_penalty ?? 1.0;
  const messages = [{ role: "user", content: prompt }];
  const inputs = tokenizer.apply_chat_template(messages, { ...template, add_generation_prompt: true, return_dict: true });
  const promptLength = inputs.input_ids.dims.at(-1);
  const out = await model.generate({ ...inputs, max_new_tokens: tokens, do_sample: false });
  const reference = out.tolist()[0].slice(promptLength).map(Number);
  const seen = { steps: 0, tokens: [] };
  const hooks = {
    beforeStep: async () => {
      seen.steps += 1;
    },
    onToken: (index) => seen.tokens.push(index),
    shouldStop: (generated) => stop_after !== null && generated.length >= stop_after,
  };
  const greedy = await greedyGenerate(model, inputs, tokens, hooks);
  const logits = await model.forward(inputs);
  return { reference, greedy, steps: seen.steps, token_indices: seen.tokens, logits_type: logits.logits.type };
}

self.onmessage = async ({ data: request }) => {
  try {
    const result = request.type === "load" ? await load(request) : await compare(request);
    self.postMessage({ ok: true, ...result });
  } catch (error) {
    self.postMessage({ ok: false, error: String(error?.stack ?? error) });
  }
};
