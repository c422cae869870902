// The page's own prompt rendering, tokenization and decoding under Node, for
// tests/test_native_template.py: the pinned @huggingface/transformers tokenizer built as
// AutoTokenizer.from_pretrained builds it (the class tokenizer_config.json names, from
// tokenizer.json and tokenizer_config.json), then what site/model_worker/model_worker.js does with each
// prompt: apply_chat_template([{role: user, content}], {...options, add_generation_prompt:
// true, tokenize: false}), tokenizer(text, {add_special_tokens: false}), and
// decode(ids, {skip_special_tokens: true}) of each id list.
//
// stdin: [{folder, options, prompts: [text], decode: [[id]]}]; stdout: [{texts, ids, decoded}].

import * as transformers from "@huggingface/transformers";
import { readFileSync } from "node:fs";

const read = (path) => JSON.parse(readFileSync(path, "utf8"));
const cases = JSON.parse(readFileSync(0, "utf8"));
const built = new Map(); // folder -> tokenizer (two stand-ins share one)
function tokenizerOf(folder) {
  if (!built.has(folder)) {
    const config = read(`${folder}/tokenizer_config.json`);
    const name = config.tokenizer_class?.replace(/Fast$/, "") ?? "PreTrainedTokenizer";
    const Tokenizer = transformers[name] ?? transformers.PreTrainedTokenizer;
    built.set(folder, new Tokenizer(read(`${folder}/tokenizer.json`), config));
  }
  return built.get(folder);
}
const answers = [];
for (const { folder, options, prompts, decode } of cases) {
  const tokenizer = tokenizerOf(folder);
  const texts = prompts.map((content) =>
    tokenizer.apply_chat_template([{ role: "user", content }], {
      ...options,
      add_generation_prompt: true,
      tokenize: false,
    }),
  );
  const ids = texts.map((text) => tokenizer(text, { add_special_tokens: false, return_tensor: false }).input_ids);
  const decoded = decode.map((list) => tokenizer.decode(list, { skip_special_tokens: true }));
  answers.push({ texts, ids, decoded });
}
process.stdout.write(JSON.stringify(answers));
