// Runs site/model_client.js with the model mailbox (site/common/model_mailbox.js,
// site/model_direct.js) under Node on a FAKE clock, for tests/test_model_mailbox.py.
// Three parties share one SharedArrayBuffer, as in the browser: Python (here a stand-in that
// does what pyapp/browser/mailbox.py does, awaiting instead of blocking), the page's
// ModelClient, and a scripted stand-in model worker that serves the mailbox as
// site/model_worker/model_worker.js does (it takes a request only when the page's gate lets it).
//
// Reads {"spec", "load_result", "scenarios": [{"faults", "steps": [...]}]} on stdin; prints
// per scenario {replies (what Python read), counts (client.callCounts()), loads, answers (each
// stand-in worker's answer attempt: {seq, won}), spawned (workers started), attached}.
//
// A step: {"attach": true}             Python's mailbox reaches the page
//         {"load": {"ms": N}}          the (first) load, answering after N virtual ms
//         {"generate": {"caps", "worker": W}}   Python's generate through the mailbox
// W: {"reply_after_ms": N}  an ok completion after N ms (direct or through the page)
//    {"hang": true}         nothing: no token, no reply
//    {"crash_after_ms": N}  a direct generation whose worker dies after N ms
//    "first_token": true    (with any of them) the worker's first_token event, sent as it
//                           takes the request: before the page saw it taken
//    {"race_ms": N}         a direct reply timed to land in the same instant as the page's
//                           hard stop (N = caps.timeout_ms + GRACE_MS), written first;
//                           "race_ms_late": the same, written just after the page's.

import { readFileSync } from "node:fs";

import { clock } from "./fake_clock_node.mjs";

// ---- the stand-in model worker -----------------------------------------------------------
const input = JSON.parse(readFileSync(0, "utf-8"));
const plan = { loadMs: 0, work: [] };
const { Mailbox, PHASE, phaseOf, seqOf, stateOf } = await import("../site/common/model_mailbox.js");
const { GRACE_MS } = await import("../site/common/model_protocol.js");
let answers = [];
let spawned = 0;

function completion(k) {
  return {
    text: "42",
    finish_reason: "eos",
    input_tokens: 5,
    output_tokens: k,
    output_token_ids: Array.from({ length: k }, (_, i) => 10 + i),
    generation_ms: 1,
    time_to_first_token_ms: 1,
    failure: null,
    input_text: null,
    input_sha256: null,
  };
}

class ScriptedWorker {
  constructor() {
    this.dead = false;
    this.loaded = false;
    this.mailbox = null;
    spawned += 1;
  }
  answer(data, ms) {
    setTimeout(() => !this.dead && this.onmessage({ data }), ms);
  }
  postMessage(message) {
    if (message.model_mailbox) {
      this.mailbox = new Mailbox(message.model_mailbox);
      this.mailbox.watch((state) => this.serve(state));
      return;
    }
    const { type, id } = message;
    if (type === "load") {
      setTimeout(() => {
        this.loaded = true;
      }, plan.loadMs);
      this.answer({ type, id, ok: true, result: input.load_result }, plan.loadMs);
    } else if (type === "generate") {
      const work = plan.work.shift() ?? { hang: true };
      if (work.reply_after_ms !== undefined) {
        this.answer({ type, id, ok: true, result: completion(1), elapsed_ms: work.reply_after_ms }, work.reply_after_ms);
      }
    }
  }
  // site/model_worker/model_worker.js serveMailbox, scripted
  serve(state) {
    const box = this.mailbox;
    if (this.dead || phaseOf(state) !== PHASE.request || !this.loaded) return;
    if (box.load("generations") + 1 > box.load("direct_until")) return;
    const held = stateOf(seqOf(state), PHASE.worker);
    if (!box.move(state, held)) return;
    box.add("generations", 1);
    const request = JSON.parse(box.text());
    const work = plan.work.shift() ?? { hang: true };
    // a token event that reaches the page before it saw the state change
    if (work.first_token) this.onmessage({ data: { type: "first_token", id: request.id } });
    const reply = { type: "generate", id: request.id, ok: true, result: completion(2), timing: { worker_ms: 1, client_ms: 1.5, load_wait_ms: 0 } };
    if (work.crash_after_ms !== undefined) {
      setTimeout(() => this.onerror({ message: "stand-in crash", preventDefault() {} }), work.crash_after_ms);
      return;
    }
    const at = work.reply_after_ms ?? work.race_ms ?? work.race_ms_late;
    if (at === undefined) return; // hung
    const write = () => {
      const won = box.answer(held, JSON.stringify(reply)); // even a terminated worker tries
      if (won) box.add("direct", 1);
      answers.push({ seq: seqOf(state), won });
    };
    // the page's hard timer is made after this one: a reply due at the same instant fires first
    setTimeout(work.race_ms_late !== undefined ? () => setTimeout(write, 0) : write, at);
  }
  terminate() {
    this.dead = true;
  }
}
globalThis.Worker = ScriptedWorker;

// ---- the stand-in Python (pyapp/browser/mailbox.py, awaiting instead of blocking) ----------
async function pythonCall(box, seq, request) {
  if (!box.load("attached")) return null;
  box.write(JSON.stringify(request));
  box.store("request_id", request.id);
  box.store("timeout_ms", request.caps.timeout_ms);
  Atomics.store(box.slots, 0, stateOf(seq, PHASE.request));
  Atomics.notify(box.slots, 0);
  const replied = stateOf(seq, PHASE.replied);
  for (let seen = box.state(); seen !== replied; seen = box.state()) {
    const waiting = Atomics.waitAsync(box.slots, 0, seen);
    if (waiting.async) await waiting.value;
  }
  return JSON.parse(box.text());
}

const { ModelClient } = await import("../site/model_client.js");
const results = [];
for (const scenario of input.scenarios) {
  clock.reset();
  plan.work = [];
  answers = [];
  spawned = 0;
  const client = new ModelClient({ faults: scenario.faults ?? "" });
  const buffer = new SharedArrayBuffer(1 << 16, { maxByteLength: 1 << 20 });
  const box = new Mailbox(buffer);
  const replies = [];
  let seq = 0;
  for (const step of scenario.steps) {
    if (step.attach) client.attachMailbox(buffer);
    else if (step.load) {
      plan.loadMs = step.load.ms ?? 0;
      await clock.settle(client.load(input.spec, "wasm"), { together: true });
    } else if (step.generate) {
      plan.work.push(step.generate.worker);
      const request = { type: "generate", id: replies.length + 1, prompt: "2 + 2?", caps: step.generate.caps };
      let reply = await clock.settle(pythonCall(box, ++seq, request), { together: true });
      if (reply === null) reply = { sync: JSON.parse(await clock.settle(client.call(JSON.stringify(request)), { together: true })) };
      replies.push(reply);
      await clock.settle(Promise.resolve(), { together: true }); // let the page see the reply before the next step
    }
  }
  for (let i = 0; i < 5; i++) await clock.flush();
  results.push({ replies, counts: client.callCounts(), loads: client.loads, answers, spawned, now: clock.now(), grace: GRACE_MS });
}
process.stdout.write(JSON.stringify(results));
process.exit(0); // the mailboxes' watchers would wait for ever
