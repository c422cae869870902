// The page's ONE entry point for drivers (the sweep CLI, tests): window.lab.send(messageJson,
// onEvent?) -> Promise<replyJson>. It takes a request of the protocol the page itself speaks to
// Python (pyapp/protocol/messages.py: `{type, id, ...fields}`, one of REQUEST_TYPES) and answers
// with the protocol's reply envelope (./envelope.js), whose `result` is the request's result
// record exactly as Python answered it (exports/messages.schema.json). While the request is
// handled, every event Python sends (trial_start, trial_done, trial_interrupted, frozen) is
// passed to onEvent(eventJson) as the text Python wrote.
//
// The sweep requests go through the Experiment section exactly as its buttons do (so the page
// stores, draws and persists what happens); every other request goes to Python unchanged.
// Cancelling is the page's Cancel button (a user's action), not a message. A request the page
// itself refuses (a button's precondition: busy, no model loaded) answers `page_refused`.

import { failedReply, okReply } from "./envelope.js";
import { REQUEST_TYPES } from "./lab_protocol.js";

const EXPERIMENT_ROUTES = {
  sweep_start: (api, m) => api.start({ seed: m.seed ?? undefined, params: m.params ?? undefined, conditions: m.conditions ?? undefined, previously_observed: m.previously_observed ?? undefined }),
  sweep_resume: (api, m) => api.resumeFrom({ header_json: m.header_json, trials_json: m.trials_json }, m.in_flight ?? null),
  sweep_run: (api, m) => api.run(m.phase),
  sweep_freeze: (api) => api.freeze(),
  sweep_state: (api) => api.state(),
};

export function makeSend({ request, experiment }) {
  return async function send(messageJson, onEvent = null) {
    let message;
    try {
      message = JSON.parse(messageJson);
    } catch (error) {
      return failedReply(null, null, "bad_request", `not JSON: ${error.message}`);
    }
    const { type, id = null, ...fields } = message ?? {};
    if (!REQUEST_TYPES.includes(type)) return failedReply(type ?? null, id, "unknown_type", `unknown request type ${String(type)}`);
    const unsubscribe = onEvent ? experiment.onEvent((event, text) => onEvent(text)) : () => {};
    try {
      const route = EXPERIMENT_ROUTES[type];
      return okReply(type, id, route ? await route(experiment, message) : await request(type, fields));
    } catch (error) {
      const code = error.code ?? "page_refused";
      return failedReply(type, id, code, String(error?.message ?? error));
    } finally {
      unsubscribe();
    }
  };
}
