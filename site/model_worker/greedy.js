// @ts-check
// Greedy decoding for the model worker: what transformers.js's `model.generate` does for a
// decoder-only model with `do_sample: false`, without its generic per-step tensor work.
//
// generate() slices the last logits row into a new tensor, runs a logits-processor list and a
// sampler over it, and walks a stopping-criteria list every step; over a 151,936-token
// vocabulary that costs ~0.6 ms per token on WASM, more than a toy model's forward pass
// (bench/wasm_loops.py, docs/models.md "WASM speed"). This loop keeps transformers.js's own
// per-step input bookkeeping — `prepare_inputs_for_generation` and
// `_update_model_kwargs_for_generation` (positions, attention mask, the key/value cache and
// its GPU buffers) — and the model's own generation config, and decides the next token by the
// same rule as its GreedySampler: the FIRST index of the largest logit of the last position.
// Logits processors the generation config asks for (e.g. a repetition penalty) run exactly as
// generate() runs them; with none, the argmax reads the logits in place. A browser test checks
// that this loop and model.generate choose the same tokens (tests/browser/test_greedy.py).
// The underscore methods used here are transformers.js internals of the pinned version: an
// upgrade of @huggingface/transformers must keep that test green.
//
// `hooks`: `beforeStep()` is awaited before every forward pass (interrupts, test delays);
// `onToken(index)` after each generated token is appended; `shouldStop(generated)` after
// that, with the generated ids so far (numbers), where generate runs its stopping criteria.

// What this loop uses of transformers.js (the pinned version's classes, internals included;
// the package's own declarations type most of these as `any`):

/**
 * A tensor as this loop reads it.
 * @typedef {object} Tensor
 * @property {number[]} dims
 * @property {string} type
 * @property {ArrayLike<number> & Iterable<number | bigint>} data
 * @property {string} [location] `gpu-buffer` for a tensor on the GPU
 * @property {() => void} dispose
 * @property {(...ranges: (number | null)[]) => Tensor} slice
 * @property {(type: string) => Tensor} to
 */
/** @typedef {{ input_ids: Tensor, attention_mask: Tensor }} Inputs a tokenized prompt, batch 1 */
/** @typedef {Record<string, unknown> & { past_key_values?: Cache }} ModelInputs */
/** @typedef {Record<string, Tensor> & { dispose?: () => Promise<void> }} Cache the key/value cache */
/** @typedef {{ logits: Tensor } & Record<string, Tensor>} Outputs */
/**
 * @typedef {object} GenerationConfig
 * @property {number} max_length
 * @property {number | number[] | null} [eos_token_id]
 */
/**
 * The logits processors the generation config asks for.
 * @typedef {((sequences: bigint[][], logits: Tensor) => Tensor) & { processors: unknown[] }} Processors
 */
/**
 * A causal LM as transformers.js's generate() drives it.
 * @typedef {object} CausalModel
 * @property {(config: null, kwargs: { max_new_tokens: number, do_sample: boolean }) => GenerationConfig} _prepare_generation_config
 * @property {(config: GenerationConfig, promptLength: number, encoderIds: null) => Processors} _get_logits_processor
 * @property {(sequences: bigint[][], inputs: ModelInputs, config: GenerationConfig) => ModelInputs} prepare_inputs_for_generation
 * @property {(inputs: ModelInputs) => Promise<Outputs>} forward
 * @property {(state: { generated_input_ids: bigint[][], outputs: Outputs, model_inputs: ModelInputs, is_encoder_decoder: boolean }) => ModelInputs} _update_model_kwargs_for_generation
 * @property {{ eos_token_id?: number | number[] | null }} [generation_config]
 * @property {{ eos_token_id?: number | number[] | null }} [config]
 */
/**
 * @typedef {object} Hooks
 * @property {() => Promise<void>} beforeStep
 * @property {(index: number) => void} onToken
 * @property {(generated: number[]) => boolean} shouldStop
 */

// First index of the largest value of row `row` (length `width`) of `data` — GreedySampler's
// rule (transformers.js utils/maths.js `max`): ties go to the lowest index, NaN never wins.
/** @param {ArrayLike<number>} data @param {number} row @param {number} width */
export function argmaxRow(data, row, width) {
  const offset = row * width;
  let best = data[offset];
  let index = 0;
  for (let k = 1; k < width; k++) {
    const value = data[offset + k];
    if (value > best) {
      best = value;
      index = k;
    }
  }
  return index;
}

// The next token from a forward pass's logits [batch 1, positions, vocab].
/** @param {Tensor} logits @param {Processors} processors @param {bigint[]} sequence */
function nextToken(logits, processors, sequence) {
  const [, positions, vocab] = logits.dims;
  const none = processors.processors.length === 0;
  if (none && logits.type === "float32") {
    return argmaxRow(logits.data, positions - 1, vocab);
  }
  // As generate(): the last row as float32, then the processors, then the argmax.
  const last = logits.slice(null, -1, null).to("float32");
  const scores = none ? last : processors([sequence], last);
  return argmaxRow(scores.data, 0, vocab);
}

// Frees what generate() frees at its end: GPU outputs the cache does not hold, and the cache.
/** @param {Outputs | null} outputs @param {Cache | undefined} cache */
async function release(outputs, cache) {
  const cached = new Set(cache ? Object.values(cache) : []);
  for (const tensor of Object.values(outputs ?? {})) {
    if (tensor?.location === "gpu-buffer" && !cached.has(tensor)) tensor.dispose();
  }
  await cache?.dispose?.();
}

// Greedy generation of at most `maxNewTokens` tokens after `inputs` ({input_ids,
// attention_mask}, batch 1). Stops after an EOS token of the generation config, at the cap,
// or when `hooks.shouldStop` says so. Returns the generated token ids (numbers).
/** @param {CausalModel} model @param {Inputs} inputs @param {number} maxNewTokens @param {Hooks} hooks @returns {Promise<number[]>} */
export async function greedyGenerate(model, inputs, maxNewTokens, hooks) {
  const config = model._prepare_generation_config(null, { max_new_tokens: maxNewTokens, do_sample: false });
  const dims = inputs.input_ids.dims;
  const promptLength = dims[dims.length - 1];
  config.max_length = promptLength + maxNewTokens;
  const processors = model._get_logits_processor(config, promptLength, null);
  const eos = new Set([config.eos_token_id].flat().filter((id) => id !== null && id !== undefined).map(Number));
  const sequence = Array.from(inputs.input_ids.data, BigInt);
  /** @type {number[]} */
  const generated = [];
  /** @type {ModelInputs} */
  let modelInputs = { ...inputs };
  /** @type {Outputs | null} */
  let outputs = null;
  try {
    while (true) {
      modelInputs = model.prepare_inputs_for_generation([sequence], modelInputs, config);
      await hooks.beforeStep();
      const stepOutputs = await model.forward(modelInputs);
      outputs = stepOutputs;
      const token = nextToken(stepOutputs.logits, processors, sequence);
      sequence.push(BigInt(token));
      generated.push(token);
      hooks.onToken(generated.length - 1);
      if (hooks.shouldStop(generated) || eos.has(token) || generated.length >= maxNewTokens) break;
      modelInputs = model._update_model_kwargs_for_generation({
        generated_input_ids: [[BigInt(token)]],
        outputs: stepOutputs,
        model_inputs: modelInputs,
        is_encoder_decoder: false,
      });
    }
  } finally {
    await release(outputs, modelInputs.past_key_values);
  }
  return generated;
}
