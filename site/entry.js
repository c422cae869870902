// @ts-check
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
import { codeOf, messageOf } from "./common/errors.js";
import { $ } from "./dom.js";

/** @import { EventTexts, PageRequestType as PageType, RequestFunction, Requests, Results } from "./lab_types.js" */
/** @import { ExperimentHandle } from "./experiment.js" */
/** @import { Models } from "./models_panel.js" */

/** @typedef {ExperimentHandle["api"]} ExperimentApi */
/** @typedef {"sweep_start" | "sweep_resume" | "sweep_run" | "sweep_freeze" | "sweep_state"} ExperimentType */
/**
 * A request's fields as a driver sent them (the page's routes read each with its default).
 * @template {keyof Requests} T
 * @typedef {Omit<Requests[T], "type" | "id">} Fields
 */
/**
 * The requests the page answers itself, by type.
 * @typedef {{ [T in PageType]: (fields: Fields<T>) => Results[T] | Promise<Results[T]> }} PageRoutes
 */

// The sweep requests, answered as the Experiment section's buttons do (sweep_state: null
// before any sweep).
/** @type {{ [T in ExperimentType]: (api: ExperimentApi, m: Fields<T>) => Promise<Results[T] | null> }} */
const EXPERIMENT_ROUTES = {
  sweep_start: (api, m) => api.start({ seed: m.seed ?? undefined, params: m.params ?? undefined, conditions: m.conditions ?? undefined, previously_observed: m.previously_observed ?? undefined, chain_protocol: m.chain_protocol ?? undefined, sealed: m.sealed ?? undefined, study_seal: m.study_seal ?? undefined }),
  sweep_resume: (api, m) => api.resumeFrom({ header_json: m.header_json, changes_json: m.changes_json ?? [], trials_json: m.trials_json }, m.in_flight ?? null, m.study_seal ?? null, m.previously_observed ?? null),
  sweep_run: (api, m) => api.run(m.phase),
  sweep_freeze: (api) => api.freeze(),
  sweep_state: (api) => api.state(),
};

/** @param {string} type @param {unknown} id @param {unknown} result */
const ok = (type, id, result) => JSON.stringify(okReply(LAB_CHANNEL, type, id, result));
/** @param {unknown} type @param {unknown} id @param {string} code @param {string} message */
const failed = (type, id, code, message) => JSON.stringify(failedReply(LAB_CHANNEL, type, id, code, message));

/** @param {string} selector */
const text = (selector) => document.querySelector(selector)?.textContent ?? "";

/** @param {unknown} type @returns {type is keyof Requests} */
const isRequestType = (type) => typeof type === "string" && REQUEST_TYPES.includes(type);
/** @param {string} type @returns {type is PageType} */
const isPageType = (type) => /** @type {readonly string[]} */ (PAGE_REQUEST_TYPES).includes(type);
/** @param {string} type @returns {type is ExperimentType} */
const isExperimentType = (type) => Object.hasOwn(EXPERIMENT_ROUTES, type);

/**
 * What the page's routes are given.
 * @typedef {object} PageParts
 * @property {ExperimentApi} experiment
 * @property {Models} models
 * @property {Record<string, number | null>} timings
 */

// The requests the page answers itself (PAGE_REQUEST_TYPES), given the page's parts.
/** @param {PageParts} parts @returns {PageRoutes} */
function pageRoutes({ experiment, models, timings }) {
  return {
    page_state: () => {
      const shown = experiment.snapshot();
      // the page's own words for its states (app.js setState, experiment.js setData)
      return /** @type {Results["page_state"]} */ ({
        app: $("#app").dataset.state,
        status: text("#status"),
        models: models.panelState(),
        experiment: shown.data_state,
        sweep_running: Boolean(shown.busy),
        trials: shown.trials,
        timings: { ...timings },
      });
    },
    model_choose: (m) => models.choose(m),
    sweep_stop: (m) => {
      experiment.stopAfter(m.after ?? 1);
      return { running: Boolean(experiment.snapshot().busy) };
    },
    page_stored: async () => ({ sweep: await experiment.persisted(), ledger: await experiment.ledger() }),
    model_synthetic: async (m) => (await models.useSynthetic(m.spec ?? null)) ?? { spec: null, provenance: null, note: null },
    model_direct: async (m) => {
      // the caps as the driver sent them: the model client checks the request (checkRequest)
      const caps = /** @type {import("./common/model_types.js").Caps} */ (m.caps);
      const reply = await models.client.generate({ prompt: m.prompt ?? undefined, messages: m.messages ?? undefined, caps });
      return {
        // a Completion: the worker's reply fits its record (site/common/model_check.js)
        completion: reply.ok ? /** @type {Results["model_direct"]["completion"]} */ (reply.result) : null,
        worker_ms: reply.timing?.worker_ms ?? null,
        client_ms: reply.timing?.client_ms ?? 0,
        error: reply.ok ? null : (reply.error ?? null),
      };
    },
  };
}

/**
 * @param {PageParts & { request: RequestFunction }} parts
 * @returns {(messageJson: string, onEvent?: ((eventText: string, texts: Partial<EventTexts>) => void) | null) => Promise<string>}
 */
export function makeSend({ request, experiment, models, timings }) {
  // `sweep_stop`: the experiment's stopAfter — the Cancel as the trial in flight (or the
  // `after`-th trial from now) is done, before the next one starts, so no generation is cut
  // short.
  const pageRoute = pageRoutes({ experiment, models, timings });
  return async function send(messageJson, onEvent = null) {
    let message;
    try {
      message = /** @type {unknown} */ (JSON.parse(messageJson));
    } catch (error) {
      return failed(null, null, "bad_request", `not JSON: ${messageOf(error)}`);
    }
    /** @type {Record<string, unknown>} */
    const object = typeof message === "object" && message !== null ? { ...message } : {};
    const { type, id = null, ...fields } = object;
    if (!isRequestType(type)) return failed(type ?? null, id, "unknown_type", `unknown request type ${String(type)}`);
    if (isPageType(type)) {
      try {
        // a dispatch table: each route reads its own type's fields (with defaults)
        const route = /** @type {(fields: unknown) => unknown} */ (pageRoute[type]);
        return ok(type, id, await route(fields));
      } catch (error) {
        const code = codeOf(error) ?? "page_refused";
        return failed(type, id, code, messageOf(error));
      }
    }
    const unsubscribe = onEvent ? experiment.onEvent((_event, eventText, texts) => onEvent(eventText, texts)) : () => {};
    try {
      if (isExperimentType(type)) {
        const route = /** @type {(api: ExperimentApi, m: unknown) => Promise<unknown>} */ (EXPERIMENT_ROUTES[type]);
        return ok(type, id, await route(experiment, object));
      }
      // Python reads the fields into its request record (pyapp.protocol.messages): it refuses a bad one
      return ok(type, id, await request(type, /** @type {Fields<typeof type>} */ (fields)));
    } catch (error) {
      const code = codeOf(error) ?? "page_refused";
      return failed(type, id, code, messageOf(error));
    } finally {
      unsubscribe();
      if (type === "sweep_run") experiment.stopAfter(null); // the ask lasts until a run has ended
    }
  };
}
