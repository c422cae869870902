// @ts-check
// The model worker's output-bytes cap (finish `bytes`) without decoding the whole output after
// every token, which costs ~0.2 ms per token with a 151,936-token tokenizer and grows with the
// output (bench/wasm_loops.py's `greedy` vs `steps` loops, docs/models.md "WASM speed").
//
// For a tokenizer whose decoder is ByteLevel (every catalogue model's and the fixture's), each
// token id has a ceiling on the UTF-8 bytes it can add to `decode(ids, {skip_special_tokens})`:
// 4 bytes per code point of its vocabulary string. Why: the decoder maps each code point of a
// run of ordinary tokens to ONE byte and decodes the bytes as UTF-8, where an invalid byte
// becomes U+FFFD (3 bytes) and a valid character keeps its byte count, so a run gives at most 3
// bytes per code point; an added token is emitted as its own text (at most 4 bytes per code
// point); special tokens are skipped (0); cleaning up tokenization spaces only removes spaces.
// So while the sum of the ceilings is within the cap, the output is too and the decode is
// skipped; past it, the worker decodes exactly after every token, as before. A browser test
// checks the ceiling on random id sequences of every stand-in's and the fixture's tokenizer
// (tests/browser/test_greedy.py).

// `tokenizer` is the @huggingface/tokenizers Tokenizer inside transformers.js's tokenizer
// (`tokenizer._tokenizer`, an internal of the pinned version: the browser test above checks it
// is there and ByteLevel for every stand-in). Returns (id) => ceiling in bytes, or null when the decoder is not
// ByteLevel (then nothing is skipped).
/**
 * What this reads of the inner tokenizer (an internal of the pinned version).
 * @typedef {{ model?: { vocab?: ArrayLike<string>, unk_token?: string }, decoder?: { config?: { type?: string } } }} InnerTokenizer
 */
/** @param {InnerTokenizer | null | undefined} tokenizer @returns {((id: number) => number) | null} */
export function byteCeiling(tokenizer) {
  const vocab = tokenizer?.model?.vocab;
  if (tokenizer?.decoder?.config?.type !== "ByteLevel" || !vocab) return null;
  const unknown = tokenizer.model?.unk_token ?? "";
  return (id) => {
    const token = vocab[Number(id)] ?? unknown;
    let codePoints = 0;
    for (const _ of token) codePoints += 1;
    return 4 * codePoints;
  };
}

// A check for "the decoded output is over `cap` bytes", called with the generated ids after
// every token. `decodeBytes(ids)` is the exact byte count; `ceiling` is byteCeiling()'s.
/**
 * @param {number} cap
 * @param {((id: number) => number) | null} ceiling
 * @param {(generated: number[]) => number} decodeBytes
 * @returns {(generated: number[]) => boolean}
 */
export function overCap(cap, ceiling, decodeBytes) {
  let counted = 0;
  let upper = 0;
  return (generated) => {
    if (ceiling) {
      for (; counted < generated.length; counted++) upper += ceiling(generated[counted]);
      if (upper <= cap) return false;
    }
    return decodeBytes(generated) > cap;
  };
}
