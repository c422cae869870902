// Runs workers/model_client.js under Node on a FAKE clock (setTimeout, clearTimeout and
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

// ---- the fake clock ----------------------------------------------------------------------
let now = 0;
let nextTimer = 1;
const timers = new Map(); // id -> {at, fn}
globalThis.setTimeout = (fn, ms = 0) => {
  const id = nextTimer++;
  timers.set(id, { at: now + Math.max(0, Number(ms) || 0), fn });
  return id;
};
globalThis.clearTimeout = (id) => timers.delete(id);
Object.defineProperty(globalThis, "performance", { value: { now: () => now }, configurable: true });
globalThis.location = { href: "http://127.0.0.1:8000/" };

const flush = () => new Promise((resolve) => setImmediate(resolve));

// Run `promise` to its end, firing timers in time order (the clock jumps to each).
async function settle(promise) {
  let done = false;
  let value;
  promise.then((v) => {
    done = true;
    value = v;
  });
  for (let guard = 0; guard < 100_000; guard++) {
    for (let i = 0; i < 5; i++) await flush();
    if (done) return value;
    const due = [...timers.entries()].sort((a, b) => a[1].at - b[1].at)[0];
    if (!due) throw new Error("nothing left to run and the call has not ended");
    timers.delete(due[0]);
    now = Math.max(now, due[1].at);
    due[1].fn();
  }
  throw new Error("too many timers");
}

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

const { ModelClient } = await import("../workers/model_client.js");
const results = [];
for (const scenario of input.scenarios) {
  now = 0;
  timers.clear();
  plan.work = [];
  const client = new ModelClient();
  const replies = [];
  for (const step of scenario) {
    if (step.load) {
      plan.loadMs = step.load.ms ?? 0;
      await settle(client.load(input.spec, "wasm"));
    } else if (step.reload_ms !== undefined) {
      plan.loadMs = step.reload_ms;
    } else if (step.generate) {
      plan.work.push(step.generate.worker);
      const request = JSON.stringify({ type: "generate", id: replies.length + 1, prompt: "2 + 2?", caps: step.generate.caps });
      replies.push(JSON.parse(await settle(client.call(request))));
    }
  }
  results.push({ replies, loads: client.loads, now });
}
process.stdout.write(JSON.stringify(results));
