// @ts-check
// The Models panel for drivers (window.lab.send, site/entry.js): `page_state`'s ModelsState and
// `model_choose` (pyapp/protocol/messages.py), done with the panel's own steps (site/models_panel.js
// passes them in: backend, currentSpec, fillDtypes, summarise, review) exactly as a person's
// choices and "Load model…" do them. The consent itself stays a click in the dialog.

import { syntheticOf } from "./synthetic_choice.js";
import { $ } from "./dom.js";

/** @import { Panel } from "./models_panel.js" */

/** @import { ModelChoose, ModelChosen, ModelsState } from "./lab_types.js" */
/** @import { Backend, ChosenModel } from "./page_types.js" */

/**
 * The panel's own steps (site/models_panel.js passes them in).
 * @typedef {object} PanelSteps
 * @property {() => Backend | null} backend
 * @property {(panel: Panel) => ChosenModel} currentSpec
 * @property {(panel: Panel) => void} fillDtypes
 * @property {(panel: Panel) => void} summarise
 * @property {(panel: Panel) => ModelChosen["outcome"]} review
 */

// The panel as a person sees it (pyapp/protocol/results.py ModelsState).
/** @param {Panel} panel @param {PanelSteps} steps @returns {ModelsState} */
export function panelState(panel, steps) {
  const details = [...$("#consent-details").querySelectorAll("dt")].map((dt) => `${dt.textContent}: ${dt.nextElementSibling?.textContent ?? ""}`);
  return {
    state: /** @type {ModelsState["state"]} */ (panel.element.dataset.state), // the panel's own words (set)
    catalogue_ready: Boolean(panel.catalogueReady),
    backend_checked: panel.webgpu.checked,
    backend_status: $("#backend-status").textContent,
    choice: $("#model-choice", HTMLSelectElement).value,
    backend: steps.backend(),
    dtypes: [...$("#model-dtype", HTMLSelectElement).options].map((option) => option.value),
    dtype: $("#model-dtype", HTMLSelectElement).value || null,
    consent_open: $("#consent-dialog", HTMLDialogElement).open,
    consent_details: details.join("\n"),
    status: panel.status.textContent,
    provenance: panel.client.provenance(),
    synthetic: panel.synthetic?.spec ?? null,
  };
}

// Choose as a person does (the model, the backend, the dtype), then "Load model…" (the host
// is the page's: its ?model_host): {outcome: consent | reload | synthetic | refused |
// not_offered, why, models: panelState}. A choice the panel lacks presses nothing.
/** @param {Panel} panel @param {PanelSteps} steps @param {Omit<ModelChoose, "type" | "id">} choice @returns {ModelChosen} */
export function choose(panel, steps, { key, backend = null, dtype = null, model_id = null, revision = null }) {
  if (!panel.catalogueReady) throw new Error("the catalogue is not loaded yet (page_state: models.catalogue_ready)");
  const select = $("#model-choice", HTMLSelectElement);
  const keys = [...select.options].map((option) => option.value);
  /** @param {string} why @returns {ModelChosen} */
  const notOffered = (why) => ({ outcome: "not_offered", why, models: panelState(panel, steps) });
  if (!keys.includes(key)) return notOffered(`no model ${JSON.stringify(key)} in the Models panel: it offers ${keys.join(", ")}`);
  select.value = key;
  if (key === "other") {
    $("#model-id", HTMLInputElement).value = model_id ?? "";
    $("#model-revision", HTMLInputElement).value = revision ?? "main";
  }
  if (backend !== null) {
    const radio = $(`input[name="backend"][value="${backend}"]`, HTMLInputElement);
    if (!radio) return notOffered(`no backend ${JSON.stringify(backend)} in the Models panel`);
    if (radio.disabled) return notOffered(`the Models panel does not offer ${backend} here: ${$("#backend-status").textContent}`);
    radio.checked = true;
  }
  steps.fillDtypes(panel);
  const offered = [...$("#model-dtype", HTMLSelectElement).options].map((option) => option.value);
  if (dtype !== null && !syntheticOf(key)) {
    if (!offered.includes(dtype)) {
      const model = steps.currentSpec(panel).model_id;
      return notOffered(`dtype ${dtype} is not offered for ${model} on ${steps.backend()}: the panel offers ${offered.join(", ") || "none"}`);
    }
    $("#model-dtype", HTMLSelectElement).value = dtype;
  }
  steps.summarise(panel);
  const outcome = steps.review(panel);
  return { outcome, why: null, models: panelState(panel, steps) };
}
