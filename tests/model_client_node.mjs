// Runs site/model_client.js under Node for tests/test_model_messages.py, with a stand-in
// Worker (no model: it answers every load with a failed reply). Reads {"specs": [entry, ...]}
// on stdin; for each catalogue entry loads it once on WASM and prints, per entry,
// {"posted": [the messages the client sent the worker], "events": [what the panel was told],
// "record": the ModelLoad}.

import { readFileSync } from "node:fs";

globalThis.location = { href: "http://127.0.0.1:8000/" };

class StandInWorker {
  constructor() {
    this.posted = [];
    StandInWorker.last = this;
  }
  postMessage(message) {
    this.posted.push(structuredClone(message));
    const { type, id } = message;
    const reply = { type, id, ok: false, error: { code: "load_failed", message: "stand-in worker: no model" } };
    queueMicrotask(() => this.onmessage({ data: reply }));
  }
  terminate() {}
}
globalThis.Worker = StandInWorker;

const { ModelClient } = await import("../site/model_client.js");
const { specs } = JSON.parse(readFileSync(0, "utf-8"));
const answers = [];
for (const spec of specs) {
  const events = [];
  StandInWorker.last = null;
  const client = new ModelClient({ onEvent: (event) => events.push(structuredClone(event)) });
  const record = await client.load(spec, "wasm");
  answers.push({ posted: StandInWorker.last?.posted ?? [], events, record });
}
process.stdout.write(JSON.stringify(answers));
