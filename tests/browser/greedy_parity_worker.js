// tests/browser/test_greedy.py's module worker (never part of the site): loads a model through
// the site's transformers.js on WASM like the page's model worker, then generates greedily
// twice from the same templated prompt — with transformers.js's model.generate and with the
// page's site/model_worker/greedy.js — and replies both token lists, so the test can compare them. It
// also checks site/model_worker/output_bytes.js against exact decoding on random id sequences.
import { AutoModelForCausalLM, AutoTokenizer, env } from "./transformers/transformers.min.js";
import { greedyGenerate } from "./greedy.js";
import { byteCeiling, overCap } from "./output_bytes.js";

let tokenizer = null;
let model = null;

// Every onnxruntime output tensor the model's session hands back that lives on the GPU, so a
// test can see whether the loop disposed of each one (a disposed tensor's location is "none").
const gpuOutputs = [];

async function load({ model_id, dtype, device = "wasm" }) {
  const base = new URL("./transformers/", self.location.href).href;
  // The page's builds: the asyncify one only for WebGPU.
  const flavour = device === "webgpu" ? "ort-wasm-simd-threaded.asyncify" : "ort-wasm-simd-threaded";
  env.backends.onnx.wasm.wasmPaths = { mjs: `${base}${flavour}.mjs`, wasm: `${base}${flavour}.wasm` };
  env.backends.onnx.wasm.numThreads = 1;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = "/models/";
  tokenizer = await AutoTokenizer.from_pretrained(model_id);
  model = await AutoModelForCausalLM.from_pretrained(model_id, { device, dtype });
  const session = model.sessions.model;
  const run = session.run.bind(session);
  session.run = async (...args) => {
    const outputs = await run(...args);
    for (const tensor of Object.values(outputs)) if (tensor?.location === "gpu-buffer") gpuOutputs.push(tensor);
    return outputs;
  };
  return {};
}

// How many GPU outputs the generations since the last call left undisposed (and how many
// there were); forgets them.
function gpuLeft() {
  const left = gpuOutputs.filter((tensor) => tensor.location !== "none").length;
  const seen = gpuOutputs.length;
  gpuOutputs.length = 0;
  return { gpu_outputs: seen, gpu_undisposed: left };
}

async function compare({ prompt, template, tokens, stop_after, repetition_penalty }) {
  model.generation_config.repetition_penalty = repetition_penalty ?? 1.0;
  const messages = [{ role: "user", content: prompt }];
  const inputs = tokenizer.apply_chat_template(messages, { ...template, add_generation_prompt: true, return_dict: true });
  const promptLength = inputs.input_ids.dims.at(-1);
  gpuLeft();
  const out = await model.generate({ ...inputs, max_new_tokens: tokens, do_sample: false });
  const reference = out.tolist()[0].slice(promptLength).map(Number);
  const generateGpu = gpuLeft();
  const seen = { steps: 0, tokens: [] };
  const hooks = {
    beforeStep: async () => {
      seen.steps += 1;
    },
    onToken: (index) => seen.tokens.push(index),
    shouldStop: (generated) => stop_after !== null && generated.length >= stop_after,
  };
  const greedy = await greedyGenerate(model, inputs, tokens, hooks);
  const greedyGpu = gpuLeft();
  const logits = (await model.forward(inputs)).logits;
  gpuLeft(); // this forward's own outputs are not the loop's
  return {
    reference,
    greedy,
    steps: seen.steps,
    token_indices: seen.tokens,
    logits_type: logits.type,
    generate_gpu: generateGpu,
    greedy_gpu: greedyGpu,
  };
}

// Random id sequences (a seeded generator): half the ids anywhere in the vocabulary, half
// among the first 256 (byte-level single-byte tokens, which make invalid UTF-8) or the
// special tokens. For each: the byte ceiling is never below the exact decoded length, and
// overCap says "over" at exactly the prefixes exact decoding does, for several caps.
function checkCeiling({ sequences, seed }) {
  let state = seed >>> 0;
  const random = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const inner = tokenizer._tokenizer;
  const ceiling = byteCeiling(inner);
  const vocab = inner.model.vocab.length;
  const special = tokenizer.all_special_ids.map(Number);
  const utf8 = new TextEncoder();
  const exact = (ids) => utf8.encode(tokenizer.decode(ids, { skip_special_tokens: true })).length;
  const pick = () => {
    const r = random();
    if (r < 0.5) return Math.floor(random() * vocab);
    if (r < 0.9) return Math.floor(random() * 256);
    return special[Math.floor(random() * special.length)];
  };
  const out = { has_ceiling: ceiling !== null, checked: 0, below_exact: 0, decisions: 0, mismatches: 0, skipped: 0 };
  for (let s = 0; s < sequences; s++) {
    const ids = Array.from({ length: 1 + Math.floor(random() * 40) }, pick);
    const sum = ids.reduce((total, id) => total + ceiling(id), 0);
    out.checked += 1;
    if (sum < exact(ids)) out.below_exact += 1;
    for (const cap of [0, 8, 40, 120]) {
      let decodes = 0;
      const over = overCap(cap, ceiling, (prefix) => {
        decodes += 1;
        return exact(prefix);
      });
      for (let n = 1; n <= ids.length; n++) {
        const prefix = ids.slice(0, n);
        out.decisions += 1;
        if (over(prefix) !== exact(prefix) > cap) out.mismatches += 1;
      }
      out.skipped += ids.length - decodes;
    }
  }
  return out;
}

self.onmessage = async ({ data: request }) => {
  try {
    const handlers = { load, ceiling: checkCeiling, compare };
    const result = await handlers[request.type](request);
    self.postMessage({ ok: true, ...result });
  } catch (error) {
    self.postMessage({ ok: false, error: String(error?.stack ?? error) });
  }
};
