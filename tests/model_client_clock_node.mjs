// Runs site/model_client.js under Node on a FAKE clock (setTimeout, clearTimeout and
// performance.now are virtual: nothing here waits for real time), with a scripted stand-in
// model worker, for tests/test_stall.py. Reads {"spec", "load_result", "scenarios": [...]}
// on stdin; each scenario is a list of steps run by one fresh client, and prints per scenario
// the replies the client gave Python (parsed JSON) and its ModelLoad records.
//
// A step: {"load": {"ms": N}}                 the (first) load answers after N virtual ms
//         {"reload_ms": N}                    the next reload answers after N virtual ms
//         {"generate": {"caps": {...}, "worker": W}}
// where W says what the stand-in worker does with that generate:
//   {"hang": true}                            nothing: no token, no reply (a blocked worker)
//   {"tokens_every_ms": N}                    a token every N ms, never a reply (a model whose
//                                             step does not end before the hard stop)
//   {"reply_after_ms": N, "tokens": K}        K tokens, then an ok completion after N ms

import { readFileSync } from "node:fs";

import { clock } from "./fake_clock_node.mjs";

// ---- the stand-in model worker -----------------------------------------------------------
const input = JSON.parse(readFileSync(0, "utf-8"));
const plan = { loadMs: 0, work: [] };

class ScriptedWorker {
  constructor() {
    this.dead = false;
  }
  answer(data, ms) {
    setTimeout(() => !this.dead && this.onmessage({ data }), ms);
  }
  postMessage(message) {
    const { type, id } = message;
    if (type === "load") {
      this.answer({ type, id, ok: true, result: input.load_result }, plan.loadMs);
    } else if (type === "generate") {
      const worker = plan.work.shift() ?? { hang: true };
      if (worker.tokens_every_ms) {
        const tick = (k) =>
          setTimeout(() => {
            if (this.dead) return;
            this.onmessage({ data: { type: "tokens", id, tokens: k } });
            tick(k + 1);
          }, worker.tokens_every_ms);
        tick(1);
      } else if (worker.reply_after_ms !== undefined) {
        const k = worker.tokens ?? 1;
        const ids = Array.from({ length: k }, (_, i) => 10 + i);
        this.answer({ type: "tokens", id, tokens: k }, Math.max(0, worker.reply_after_ms - 1));
        const completion = {
          text: "42",
          finish_reason: "eos",
          input_tokens: 5,
          output_tokens: k,
          output_token_ids: ids,
          generation_ms: worker.reply_after_ms,
          time_to_first_token_ms: 1,
          failure: null,
          input_text: null,
          input_sha256: null,
        };
        this.answer({ type, id, ok: true, result: completion, elapsed_ms: worker.reply_after_ms }, worker.reply_after_ms);
      } // a hung worker answers nothing
    } // interrupts: a blocked stand-in never sees them
  }
  terminate() {
    this.dead = true;
  }
}
globalThis.Worker = ScriptedWorker;

const { ModelClient } = await import("../site/model_client.js");
const results = [];
for (const scenario of input.scenarios) {
  clock.reset();
  plan.work = [];
  const client = new ModelClient();
  const replies = [];
  for (const step of scenario) {
    if (step.load) {
      plan.loadMs = step.load.ms ?? 0;
      await clock.settle(client.load(input.spec, "wasm"));
    } else if (step.reload_ms !== undefined) {
      plan.loadMs = step.reload_ms;
    } else if (step.generate) {
      plan.work.push(step.generate.worker);
      const request = JSON.stringify({ type: "generate", id: replies.length + 1, prompt: "2 + 2?", caps: step.generate.caps });
      replies.push(JSON.parse(await clock.settle(client.call(request))));
    }
  }
  results.push({ replies, loads: client.loads, now: clock.now() });
}
process.stdout.write(JSON.stringify(results));
