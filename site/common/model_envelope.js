// The model channel's envelope (page ⇄ model worker), built in this one place for both ends:
// site/model_worker/model_worker.js builds every reply and event it posts here, site/model_client.js
// every reply it answers Python with and every event it hands the Models panel. The same
// envelope as the page ⇄ Python channel (site/envelope.js; pyapp/protocol/envelope.py builds it
// in Python for both channels):
//
//   reply  {type, id, ok: true, result, ...extras}  |  {type, id, ok: false, error: {code, message}, ...extras}
//   event  {type, id?, ...fields}
//
// Checked against the generated site/common/model_protocol.js: a reply's type is a request that has
// a reply (MODEL_REPLIES), an event's type a worker event (MODEL_EVENTS) or a panel event
// (PANEL_EVENTS); anything else is a bug and throws. tests/test_model_envelope.py fails when
// either worker builds a reply or an event by hand.

import { MODEL_EVENTS, MODEL_REPLIES, PANEL_EVENTS } from "./model_protocol.js";

function known(table, type, what) {
  if (!Object.hasOwn(table, type)) throw new Error(`${String(type)} is not ${what} of the model channel (site/common/model_protocol.js)`);
}

// A successful reply to request `type`#`id`: `result` is its result record; `extras` are the
// reply's other fields (elapsed_ms, hard_stop, timing).
export function okReply(type, id, result, extras = {}) {
  known(MODEL_REPLIES, type, "a request with a reply");
  return { type, id, ok: true, result, ...extras };
}

// A failed reply (`code`: one of MODEL_ERROR). `type` and `id` are echoed only when they are
// what a request carries, so that a reply to a malformed message is always a well-formed reply.
export function failedReply(type, id, code, message, extras = {}) {
  return {
    type: typeof type === "string" ? type : null,
    id: Number.isInteger(id) ? id : null,
    ok: false,
    error: { code, message: String(message) },
    ...extras,
  };
}

// An event of the worker (progress, first_token, tokens) about request `id`.
export function workerEvent(type, id, fields = {}) {
  known(MODEL_EVENTS, type, "a worker event");
  return { type, id, ...fields };
}

// An event the client hands the Models panel (progress, state, load_done).
export function panelEvent(type, fields = {}) {
  known(PANEL_EVENTS, type, "a panel event");
  return { type, ...fields };
}
