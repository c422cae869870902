// The page's ONE entry point for drivers (the sweep CLI, tests): window.lab.send(messageJson,
// onEvent?) -> Promise<replyJson>. It takes a request of the protocol the page itself speaks to
// Python (pyapp/browser/messages.py: `{type, id, ...fields}`, one of REQUEST_TYPES) and answers
// with the protocol's reply envelope, `{type, id, ok, result}` or `{type, id, ok: false,
// error: {code, message}}`. While the request is handled, every event Python sends
// (trial_start, trial_done, trial_interrupted, frozen) is passed to onEvent(eventJson) as the
// text Python wrote.
//
// The sweep requests go through the Experiment section exactly as its buttons do (so the page
// stores, draws and persists what happens); every other request goes to Python unchanged.
// Cancelling is the page's Cancel button (a user's action), not a message.

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
      return reply(null, null, { code: "bad_request", message: `not JSON: ${error.message}` });
    }
    const { type, id, ...fields } = message ?? {};
    if (!REQUEST_TYPES.includes(type)) return reply(type ?? null, id ?? null, { code: "bad_request", message: `unknown request type ${String(type)}` });
    const unsubscribe = onEvent ? experiment.onEvent((event, text) => onEvent(text)) : () => {};
    try {
      const route = EXPERIMENT_ROUTES[type];
      const result = route ? await route(experiment, message) : await request(type, fields);
      return reply(type, id ?? null, null, result);
    } catch (error) {
      return reply(type, id ?? null, { code: error.code ?? "page_refused", message: String(error?.message ?? error) });
    } finally {
      unsubscribe();
    }
  };
}

function reply(type, id, error, result = null) {
  return JSON.stringify(error ? { type, id, ok: false, error } : { type, id, ok: true, result });
}
