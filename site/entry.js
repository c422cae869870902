// The page's ONE entry point for drivers (the sweep CLI, the benches, tests): window.lab.send(
// messageJson, onEvent?) -> Promise<replyJson>. It takes a request of the protocol the page
// itself speaks to Python (pyapp/protocol/messages.py: `{type, id, ...fields}`, one of
// REQUEST_TYPES) and answers with the protocol's reply envelope (./common/envelope.js), whose `result`
// is the request's result record (exports/messages.schema.json). While the request is handled,
// every event Python sends (trial_start, trial_done, trial_interrupted, frozen) is passed to
// onEvent(eventJson, texts): the event's text as Python wrote it, and beside it the documents it
// brings as Python's text ({trial, change, receipt}: pyapp.protocol.messages.EventTexts).
//
// Three routes, by type:
// - PAGE_REQUEST_TYPES the page answers itself, Python not involved: `page_state` (the boot,
//   the Models panel, the Experiment section), `model_choose` (choose and press "Load model…"
//   as a person does; the consent stays a click in the dialog), `sweep_stop` (the Cancel,
//   issued right after the trial in flight is done), `model_direct` (one generation in the
//   model worker, for the benches), `page_stored` (what IndexedDB holds: the current sweep,
//   its status and stored texts, and the ledger) and `model_synthetic` (the
//   panel's "Use synthetic model", by spec);
// - the sweep requests go through the Experiment section exactly as its buttons do (so the
//   page stores, draws and persists what happens);
// - every other request goes to Python unchanged.
// A request the page itself refuses (a button's precondition: busy, no model loaded) answers
// `page_refused`.

import { failedReply, okReply } from "./common/envelope.js";
import { LAB_CHANNEL, PAGE_REQUEST_TYPES, REQUEST_TYPES } from "./lab_protocol.js";

const EXPERIMENT_ROUTES = {
  sweep_start: (api, m) => api.start({ seed: m.seed ?? undefined, params: m.params ?? undefined, conditions: m.conditions ?? undefined, previously_observed: m.previously_observed ?? undefined }),
  sweep_resume: (api, m) => api.resumeFrom({ header_json: m.header_json, changes_json: m.changes_json ?? [], trials_json: m.trials_json }, m.in_flight ?? null),
  sweep_run: (api, m) => api.run(m.phase),
  sweep_freeze: (api) => api.freeze(),
  sweep_state: (api) => api.state(),
};

const ok = (type, id, result) => JSON.stringify(okReply(LAB_CHANNEL, type, id, result));
const failed = (type, id, code, message) => JSON.stringify(failedReply(LAB_CHANNEL, type, id, code, message));

const text = (selector) => document.querySelector(selector)?.textContent ?? "";

// The requests the page answers itself (PAGE_REQUEST_TYPES), given the page's parts.
function pageRoutes({ experiment, models, timings }) {
  return {
    page_state: () => {
      const shown = experiment.snapshot();
      return {
        app: document.querySelector("#app").dataset.state,
        status: text("#status"),
        models: models.panelState(),
        experiment: shown.data_state,
        sweep_running: Boolean(shown.busy),
        trials: shown.trials,
        timings: { ...timings },
      };
    },
    model_choose: (m) => models.choose(m),
    sweep_stop: (m) => {
      experiment.stopAfter(m.after ?? 1);
      return { running: Boolean(experiment.snapshot().busy) };
    },
    page_stored: async () => ({ sweep: await experiment.persisted(), ledger: await experiment.ledger() }),
    model_synthetic: async (m) => (await models.useSynthetic(m.spec ?? null)) ?? { spec: null, provenance: null, note: null },
    model_direct: async (m) => {
      const reply = await models.client.generate({ prompt: m.prompt ?? undefined, messages: m.messages ?? undefined, caps: m.caps });
      return {
        completion: reply.ok ? reply.result : null,
        worker_ms: reply.timing?.worker_ms ?? null,
        client_ms: reply.timing?.client_ms ?? 0,
        error: reply.ok ? null : reply.error,
      };
    },
  };
}

export function makeSend({ request, experiment, models, timings }) {
  // `sweep_stop`: the experiment's stopAfter — the Cancel as the trial in flight (or the
  // `after`-th trial from now) is done, before the next one starts, so no generation is cut
  // short.
  const pageRoute = pageRoutes({ experiment, models, timings });
  return async function send(messageJson, onEvent = null) {
    let message;
    try {
      message = JSON.parse(messageJson);
    } catch (error) {
      return failed(null, null, "bad_request", `not JSON: ${error.message}`);
    }
    const { type, id = null, ...fields } = message ?? {};
    if (!REQUEST_TYPES.includes(type)) return failed(type ?? null, id, "unknown_type", `unknown request type ${String(type)}`);
    if (PAGE_REQUEST_TYPES.includes(type)) {
      try {
        return ok(type, id, await pageRoute[type](fields));
      } catch (error) {
        return failed(type, id, error.code ?? "page_refused", String(error?.message ?? error));
      }
    }
    const unsubscribe = onEvent ? experiment.onEvent((event, eventText, texts) => onEvent(eventText, texts)) : () => {};
    try {
      const route = EXPERIMENT_ROUTES[type];
      return ok(type, id, route ? await route(experiment, message) : await request(type, fields));
    } catch (error) {
      const code = error.code ?? "page_refused";
      return failed(type, id, code, String(error?.message ?? error));
    } finally {
      unsubscribe();
      if (type === "sweep_run") experiment.stopAfter(null); // the ask lasts until a run has ended
    }
  };
}
