// @ts-check
// The Models panel (main thread): catalogue picker, backend choice, consent dialog, per-file
// progress, provenance, diagnostics, and the "try a prompt" box. The model itself lives in
// site/model_client.js (which owns site/model_worker/model_worker.js); Python reaches it through the
// bridge (`model_generate`, answered by pyapp.browser.model in the PyScript worker).
//
// Before consent nothing leaves this origin: the catalogue is ./models.json, the WebGPU
// check is local, and the model worker (and transformers.js) is not even started.
//
// #models carries data-state = idle | loading | loaded | failed | unloaded | generating.
// window.lab.models.state() -> {state, loaded, model_id, revision, dtype, source, evidence,
// label, backend, provenance, synthetic}; subscribe(listener) is told of every load and state
// change. useSynthetic(spec | null) -> the synthetic model in use (see below), or null.
// The client's events are PANEL_EVENTS records (pyapp/protocol/model_messages.py), tagged by `type`.
//
// The catalogue's group "synthetic (validation)" (site/synthetic_choice.js) lists synthetic
// models of known error structure: choosing one asks for no consent and downloads nothing —
// the page's Python worker runs it (`synthetic_select`) in place of a loaded model, labelled
// synthetic, never model evidence. Loading a model from the catalogue ends its use.
//
// One small setup (`setupModels`) builds the panel's state (`Panel`) and wires named steps:
// the catalogue and choices, the WebGPU check, review → consent → load, the load's progress
// and provenance, the synthetic models and the diagnostics download; the "try a prompt" box
// is site/try_prompt.js.

import { ModelClient } from "./model_client.js";
import { MODEL_TYPE } from "./common/model_protocol.js";
import { EVIDENCE_LABELS, FIXTURE_LABEL, PARAM } from "./lab_protocol.js";
import { wireTryPrompt } from "./try_prompt.js";
import { choose, panelState } from "./panel_driver.js";
import { syntheticOf, syntheticRows } from "./synthetic_choice.js";
import { backend, bundledLabel, currentSpec, fillDtypes, hostOf, isBundled, loadCatalogue, subjectLabel, summarise } from "./model_choice.js";
import { $, entryOf } from "./dom.js";
import { messageOf } from "./common/errors.js";


/** @import { LoadResult, ModelLoad, PanelEvent, Progress, StateChanged } from "./common/model_types.js" */
/** @import { ModelChoose, RequestFunction, SyntheticChosen } from "./lab_types.js" */
/** @import { Backend, Catalogue, ChangeListener, ChosenModel, DetailRow, ModelState, WebGpu } from "./page_types.js" */


const params = new URLSearchParams(location.search);

// "the model's own, no options" or "enable_thinking: false" (part of the measurement condition).
/** @param {Record<string, unknown> | null | undefined} options */
export function templateOptionsText(options) {
  const entries = Object.entries(options ?? {});
  if (!entries.length) return "the model's own template, no options";
  return `the model's own template with ${entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ")}`;
}

/** @typedef {ReturnType<typeof setupModels>} Models the Models panel, as the page's parts use it */

/** @param {{ request: RequestFunction }} parts */
export function setupModels({ request }) {
  const panel = new Panel(request);
  wire(panel);
  const steps = { backend, currentSpec, fillDtypes, summarise, review }; // for site/panel_driver.js
  const ready = loadCatalogue(panel);
  return {
    client: panel.client,
    ready,
    // The one function Python calls through PyScript's sync channel.
    /** @param {string} requestJson */
    modelCall: (requestJson) => panel.client.call(requestJson, panel.defaultDebug),
    // ... and the mailbox it shares for its generate calls (site/model_direct.js), posted once
    /** @param {unknown} data */
    workerMessage: (data) => {
      const buffer = typeof data === "object" && data !== null ? Reflect.get(data, "model_mailbox") : undefined;
      return buffer instanceof SharedArrayBuffer && panel.client.attachMailbox(buffer, panel.defaultDebug);
    },
    webgpu: () => panel.webgpu,
    // The loaded model, for the experiment section and the sweep CLI (window.lab.models.state()).
    state: () => stateOf(panel),
    // A synthetic model by spec (`NAME` or `NAME:key=value,...`), or null: the loaded model again.
    /** @param {string | null} spec */
    useSynthetic: (spec) => useSynthetic(panel, spec),
    /** @param {ChangeListener} listener */
    subscribe: (listener) => {
      panel.changeListeners.add(listener);
      return () => panel.changeListeners.delete(listener);
    },
    // For drivers, through window.lab.send (site/entry.js): the panel as a person sees it
    // (`page_state`'s ModelsState) and "choose, then Load model…" (`model_choose`).
    panelState: () => panelState(panel, steps),
    /** @param {Omit<ModelChoose, "type" | "id">} choice */
    choose: (choice) => choose(panel, steps, choice),
  };
}

// ---- the panel's state ---------------------------------------------------------------------

export class Panel {
  /** @param {RequestFunction} request */
  constructor(request) {
    this.request = request;
    this.element = $("#models");
    this.status = $("#model-status");
    /** @type {Map<string, { row: HTMLLIElement, bar: HTMLProgressElement, text: HTMLSpanElement }>} */
    this.files = new Map(); // file -> {row, bar, text}
    /** @type {Set<string>} */
    this.consented = new Set(); // spec keys the user agreed to in this session
    /** @type {{ spec: ChosenModel, chosenBackend: Backend } | null} */
    this.asking = null; // what the open consent dialog asks about
    $("#consent-dialog").addEventListener("close", () => onConsentClosed(this));
    /** @type {Catalogue} */
    this.catalogue = { models: [], default_host: "https://huggingface.co/" };
    /** @type {Record<string, string>} */
    this.architectures = {}; // model_type -> class the pinned transformers.js runs (build_site.py)
    this.architecturesVersion = "?";
    /** @type {WebGpu} */
    this.webgpu = { checked: false, available: false, why: "not checked yet", info: null };
    this.generating = false;
    this.catalogueReady = false;
    /** @type {SyntheticChosen | null} */
    this.synthetic = null; // {spec, provenance, note}: the synthetic model Python runs, if any
    /** @type {DetailRow[] | null} */
    this.loadedRows = null; // the loaded model's provenance rows (shown again after a synthetic one)
    /** @type {Set<ChangeListener>} */
    this.changeListeners = new Set(); // called on every load / state change of the client
    // `fault=KIND@N,...`: fault-injection hooks for tests (site/faults.js, docs/sweep.md)
    this.client = new ModelClient({ onEvent: (event) => onEvent(this, event), faults: params.get(PARAM.FAULT) ?? "" });
    for (const problem of this.client.faults.errors) console.error(problem);
    const stepDelay = Number(params.get(PARAM.MODEL_STEP_DELAY_MS)) || 0;
    this.threads = Number(params.get(PARAM.MODEL_THREADS)) || null; // WASM threads (bench); default: all cores
    this.defaultDebug = stepDelay ? { step_delay_ms: stepDelay } : undefined;
  }

  /** @param {string} state @param {string} [message] */
  set(state, message) {
    this.element.dataset.state = state;
    if (message !== undefined) this.status.textContent = message;
  }
}

// ---- review, consent and loading ---------------------------------------------------------------

/** @param {ChosenModel} spec @param {Backend} chosenBackend */
function consentKey(spec, chosenBackend) {
  const options = JSON.stringify(spec.chat_template_options ?? {});
  return [spec.model_id, spec.revision, spec.dtype, spec.source, spec.host, chosenBackend, options].join("|");
}

/** @param {HTMLElement} target @param {readonly DetailRow[]} rows */
function detailRows(target, rows) {
  target.replaceChildren();
  for (const [term, value, className] of rows) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    if (className) dd.className = className;
    target.append(dt, dd);
  }
}

// A load refused before any consent or download (recorded as a failed load, exportable);
// true when refused.
/** @param {Panel} panel @param {ChosenModel} spec @param {Backend} chosenBackend */
function refused(panel, spec, chosenBackend) {
  if (chosenBackend === "webgpu" && panel.webgpu.checked && !panel.webgpu.available) {
    const why = `WebGPU is not available (${panel.webgpu.why}); nothing was downloaded and nothing ran on another backend. Choose WASM explicitly.`;
    panel.client.refuse(spec, "webgpu", "backend_unavailable", why);
    return true;
  }
  const type = spec.architecture?.model_type;
  if (spec.architecture && type && !Object.hasOwn(panel.architectures, type)) {
    // the pinned transformers.js has no such model
    const why = `${spec.label} is a "${type}" model (${spec.architecture.class}), which the pinned transformers.js ${panel.architecturesVersion} cannot run; nothing was downloaded.`;
    panel.client.refuse(spec, chosenBackend, "architecture_unsupported", why);
    return true;
  }
  return false;
}

// "Load model…": refuse, reload (consented already in this session), or ask; a synthetic
// entry is used at once (nothing to download, nothing to consent to).
// Returns what it did: synthetic, refused, reload or consent (the dialog is open).
/** @param {Panel} panel @returns {"synthetic" | "refused" | "reload" | "consent"} */
function review(panel) {
  const synthetic = syntheticOf($("#model-choice", HTMLSelectElement).value);
  if (synthetic) {
    useSynthetic(panel, synthetic).catch(() => {}); // shown in the panel
    return "synthetic";
  }
  const spec = currentSpec(panel);
  const chosenBackend = backend();
  if (chosenBackend === null) {
    panel.set("idle", "Choose a backend (WebGPU or WASM) first.");
    $("#model-backend input").focus();
    return "refused";
  }
  if (!spec.model_id) {
    panel.set("failed", "Type a model id first (org/name).");
    return "refused";
  }
  if (refused(panel, spec, chosenBackend)) return "refused";
  if (panel.consented.has(consentKey(spec, chosenBackend))) {
    startLoad(panel, spec, chosenBackend, "reload");
    return "reload";
  }
  askConsent(panel, spec, chosenBackend);
  return "consent";
}

// The consent dialog: what would be downloaded, from where, under which licence.
/** @param {Panel} panel @param {ChosenModel} spec @param {Backend} chosenBackend */
function askConsent(panel, spec, chosenBackend) {
  const bundled = isBundled(spec.source);
  const source = bundled
    ? `${location.host} (this site; bundled with the app)`
    : `${hostOf(spec.host ?? "")} (${spec.host}${spec.model_id}/resolve/${spec.revision}/…)`;
  detailRows($("#consent-details"), [
    ["Model", spec.model_id, bundled ? "fixture-label" : ""],
    ["What it is", bundled ? bundledLabel(spec) : spec.label],
    ["Revision", spec.pinned ? spec.revision : `${spec.revision} — UNPINNED: the files can change`, spec.pinned ? "" : "unpinned"],
    ["Download", spec.download_mb === null ? "size unknown" : `≈ ${spec.download_mb} MB (dtype ${spec.dtype})`],
    ["From", source],
    ["Backend", chosenBackend === "webgpu" ? "WebGPU (GPU)" : "WASM (CPU)"],
    ["Chat template", templateOptionsText(spec.chat_template_options)],
    ["Licence", spec.licence],
  ]);
  const warning = $("#consent-warning");
  warning.hidden = !spec.revision_note;
  warning.textContent = spec.revision_note ? `About the revision: ${spec.revision_note}.` : "";
  const dialog = $("#consent-dialog", HTMLDialogElement);
  dialog.returnValue = "";
  panel.asking = { spec, chosenBackend };
  dialog.showModal();
  $("#consent-decline").focus();
}

// The consent dialog's one close listener (installed with the panel). A close event is queued,
// so one from an earlier showing can arrive after the dialog was shown again: it is ignored
// while the dialog is open, and each showing is answered once.
/** @param {Panel} panel */
function onConsentClosed(panel) {
  const dialog = $("#consent-dialog", HTMLDialogElement);
  if (dialog.open || !panel.asking) return;
  const { spec, chosenBackend } = panel.asking;
  panel.asking = null;
  if (dialog.returnValue === "accept") {
    panel.consented.add(consentKey(spec, chosenBackend));
    startLoad(panel, spec, chosenBackend, "consent");
  } else {
    panel.status.textContent = "Not loaded: you declined.";
  }
}

/** @param {Panel} panel @param {ChosenModel} spec @param {Backend} chosenBackend @param {ModelLoad["reason"]} reason */
async function startLoad(panel, spec, chosenBackend, reason) {
  panel.files.clear();
  $("#model-files").replaceChildren();
  $("#model-provenance").hidden = true;
  if (panel.synthetic) await useSynthetic(panel, null).catch(() => {}); // a loaded model replaces it
  panel.client.load(spec, chosenBackend, reason);
}

// ---- synthetic models (run by the page's Python worker) ---------------------------------------

// Python runs the synthetic model `spec` from now on (null: the loaded model again). Refused
// specs and a Python still starting are shown in the panel and thrown.
/** @param {Panel} panel @param {string | null} spec @returns {Promise<SyntheticChosen | null>} */
async function useSynthetic(panel, spec) {
  let selected;
  try {
    selected = await panel.request("synthetic_select", { spec });
  } catch (error) {
    if (spec !== null) panel.set("failed", `Synthetic model not used: ${messageOf(error)}`);
    throw error;
  }
  panel.synthetic = selected.spec === null ? null : selected;
  const client = panel.client;
  $("#try-generate", HTMLButtonElement).disabled = Boolean(panel.synthetic) || client.state !== "loaded";
  if (panel.synthetic && selected.spec !== null) {
    const structure = selected.spec.split(":")[0];
    const choice = $("#model-choice", HTMLSelectElement);
    if ([...choice.options].some((o) => o.value === `synthetic:${structure}`)) choice.value = `synthetic:${structure}`;
    fillDtypes(panel);
    panel.set("loaded", `Using the synthetic model ${selected.spec} in Python (no download) — ${EVIDENCE_LABELS.synthetic}.`);
    detailRows($("#model-provenance"), syntheticRows(selected));
    $("#model-provenance").hidden = false;
  } else {
    const loaded = client.state === "loaded";
    panel.set(client.state === "none" ? "idle" : client.state, loaded ? `Using the loaded model ${client.spec?.model_id} again.` : "No model loaded.");
    detailRows($("#model-provenance"), loaded ? (panel.loadedRows ?? []) : []);
    $("#model-provenance").hidden = !loaded;
  }
  for (const listener of panel.changeListeners) listener({ type: "synthetic", spec: selected.spec });
  return panel.synthetic;
}

// ---- the client's events: per-file progress, state, the load's record -----------------------

/** @param {Panel} panel @param {PanelEvent} event */
function onEvent(panel, event) {
  if (event.type === MODEL_TYPE.PROGRESS) {
    showProgress(panel, event);
    return;
  }
  for (const listener of panel.changeListeners) listener(event);
  if (event.type === MODEL_TYPE.STATE) showState(panel, event);
  else if (event.type === MODEL_TYPE.LOAD_DONE) showLoad(panel, event.record, event.result);
}

/** @param {Panel} panel @param {string} file */
function progressRow(panel, file) {
  const known = panel.files.get(file);
  if (known) return known;
  const row = document.createElement("li");
  const bar = document.createElement("progress");
  bar.max = 1;
  bar.value = 0;
  bar.setAttribute("aria-label", file);
  const text = document.createElement("span");
  row.append(bar, text);
  $("#model-files").append(row);
  const item = { row, bar, text };
  panel.files.set(file, item);
  return item;
}

/** @param {Panel} panel @param {Progress} event */
function showProgress(panel, event) {
  const item = progressRow(panel, event.file);
  item.row.dataset.status = event.status;
  if (event.total) {
    item.bar.max = event.total;
    item.bar.value = event.loaded ?? 0;
  }
  if (event.status === "done") item.bar.value = item.bar.max;
  const amount = event.total ? ` ${Math.round((event.loaded ?? 0) / 1024)} / ${Math.round(event.total / 1024)} KB` : "";
  item.text.textContent = `${event.file}: ${event.status}${amount}`;
}

/** @param {Panel} panel @param {StateChanged} event */
function showState(panel, event) {
  const spec = panel.client.spec;
  if (event.state === "loading") {
    const why = event.reason === "reload-after-terminate" ? " again after the worker was terminated (no new consent needed)" : "";
    panel.set("loading", `Loading ${spec?.model_id} on ${panel.client.backend}${why}…`);
  } else if (event.state === "unloaded") {
    panel.set("unloaded", `Model unloaded: ${event.why}`);
  }
}

/** @param {number | null | undefined} ms */
const secs = (ms) => (ms === null || ms === undefined ? "—" : `${(ms / 1000).toFixed(2)} s`);

/** @param {Panel} panel @param {ModelLoad} record @param {LoadResult | null} result */
function showLoad(panel, record, result) {
  $("#model-diagnostics", HTMLButtonElement).disabled = false;
  const spec = panel.client.spec;
  if (!record.ok || !result || !spec) {
    panel.set("failed", `Load failed [${record.error_code}]: ${record.error_message}`);
    $("#try-generate", HTMLButtonElement).disabled = true;
    return;
  }
  // The bundled fixture, or a download recognised as a test fixture (a stand-in) by its config.json.
  const isFixture = spec.source === "bundled-fixture" || panel.client.provenance().evidence === "fixture";
  // The reference subject is named as what it is, never as a pretrained model.
  const isSubject = !isFixture && panel.client.provenance().evidence === "reference-subject";
  const fixture = isFixture ? ` (${FIXTURE_LABEL})` : isSubject ? ` (${subjectLabel(spec.model_id)})` : "";
  panel.set("loaded", `Loaded ${spec.model_id}${fixture} on ${record.backend_actual} in ${secs(record.setup_ms)} (load ${record.load_id}, ${record.reason}).`);
  $("#try-generate", HTMLButtonElement).disabled = panel.generating;
  panel.loadedRows = provenanceRows(spec, record, result, isFixture, isSubject);
  if (panel.synthetic) return; // the synthetic model in use stays shown until a load replaces it
  detailRows($("#model-provenance"), panel.loadedRows);
  $("#model-provenance").hidden = false;
}

/**
 * @param {ChosenModel} spec
 * @param {ModelLoad} record
 * @param {LoadResult} result
 * @param {boolean} isFixture
 * @param {boolean} isSubject
 * @returns {DetailRow[]}
 */
function provenanceRows(spec, record, result, isFixture, isSubject) {
  const adapter = result.adapter;
  const tag = isFixture ? ` (${FIXTURE_LABEL})` : isSubject ? ` (${subjectLabel(spec.model_id)})` : "";
  return [
    ["Model", `${spec.model_id}${tag}`, isFixture || isSubject ? "fixture-label" : ""],
    ["Revision", spec.pinned ? spec.revision : `${spec.revision} (UNPINNED)`, spec.pinned ? "" : "unpinned"],
    ["dtype", result.dtype],
    ["Chat template", templateOptionsText(result.chat_template_options)],
    ["Backend", `requested ${record.backend_requested}, actual ${record.backend_actual}`],
    [
      "Adapter",
      adapter
        ? `${adapter.vendor ?? "?"} / ${adapter.architecture ?? "?"}; fallback: ${adapter.is_fallback_adapter}; shader-f16: ${adapter.shader_f16}`
        : "none (WASM)",
    ],
    ["Runtime", `transformers.js ${result.transformers_js_version}, onnxruntime-web ${result.onnxruntime_version}`],
    ["Threads", String(result.threads)],
    ["Cross-origin isolated", String(result.cross_origin_isolated)],
    ["Download", `${record.download_bytes} bytes in ${secs(record.download_ms)}`],
    ["Setup", `${secs(record.setup_ms)} (warm-up ${secs(result.warmup_ms)}); compilation: not separable (null)`],
    ["FLOPs", "unavailable (null)"],
  ];
}

/** @param {Panel} panel */
function downloadDiagnostics(panel) {
  const data = { provenance: panel.client.provenance(), generated_at: new Date().toISOString() };
  const blob = new Blob([JSON.stringify(data, null, 2) + "\n"], { type: "application/json" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "model-load-diagnostics.json";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

// ---- wiring and state ----------------------------------------------------------------------------

/** @param {Panel} panel */
function wire(panel) {
  const refill = () => fillDtypes(panel);
  const resummarise = () => summarise(panel);
  $("#model-host", HTMLInputElement).value = params.get(PARAM.MODEL_HOST) || "https://huggingface.co/";
  $("#model-choice").addEventListener("change", refill);
  for (const radio of document.querySelectorAll('input[name="backend"]')) radio.addEventListener("change", refill);
  $("#model-dtype").addEventListener("change", resummarise);
  for (const id of ["#model-id", "#model-revision", "#model-host"]) $(id).addEventListener("input", resummarise);
  $("#model-review").addEventListener("click", () => review(panel));
  $("#model-diagnostics").addEventListener("click", () => downloadDiagnostics(panel));
  wireTryPrompt(panel);
}

/** @param {Panel} panel @returns {ModelState} */
function stateOf(panel) {
  if (panel.synthetic) return syntheticState(panel.synthetic);
  const client = panel.client;
  /** @type {Partial<ChosenModel>} */
  const spec = client.spec ?? {};
  return {
    state: client.state,
    loaded: client.state === "loaded",
    model_id: spec.model_id ?? null,
    revision: spec.revision ?? null,
    dtype: spec.dtype ?? null,
    source: spec.source ?? null,
    // The client's provenance knows more than the spec: a hub download whose config.json is
    // the test fixture's is a fixture too.
    evidence: spec.source ? client.provenance().evidence : null,
    label: spec.source && client.provenance().evidence !== "model" ? (entryOf(EVIDENCE_LABELS, client.provenance().evidence) ?? null) : (spec.label ?? null),
    backend: client.backend,
    provenance: client.provenance(),
    synthetic: null,
  };
}


/** @param {SyntheticChosen} selected @returns {ModelState} */
function syntheticState(selected) {
  const p = selected.provenance;
  if (!p) throw new Error("a synthetic model in use without its provenance");
  return {
    state: "loaded",
    loaded: true,
    model_id: p.model_id,
    revision: p.revision,
    dtype: p.dtype,
    source: p.source,
    evidence: p.evidence,
    label: entryOf(EVIDENCE_LABELS, p.evidence) ?? null,
    backend: p.backend_actual,
    provenance: p,
    synthetic: selected.spec,
  };
}
