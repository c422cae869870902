// @ts-check
// The guided flow's glue (main thread): the address holds the setup, the step list shows where
// you are, and a tool opens when the address points into it. No experiment logic here.
//
// The address's parameters (the table in docs/page.md, PARAM in ./lab_protocol.js, generated
// from pyapp/protocol/page.py): this module reads and writes `conditions`, `preset`, `model`,
// `model_id` and `revision` (app.js the seed). The model is chosen, never loaded: loading
// always waits for consent in the dialog.
//
// A link with these parameters reproduces a setup; the page rewrites them (history.replaceState)
// whenever the setup changes. app.js imports this module, which sets itself up once.

import { PARAM } from "./lab_protocol.js";
import { $ } from "./dom.js";

/** @returns {HTMLInputElement[]} */
const conditionBoxes = () => [...document.querySelectorAll('input[name="condition"]')].filter((box) => box instanceof HTMLInputElement);
/** @param {string} selector */
const input = (selector) => $(selector, HTMLInputElement);
/** @param {string} selector */
const select = (selector) => $(selector, HTMLSelectElement);

/** @param {string} name @param {string | null} value */
function setParam(name, value) {
  const url = new URL(location.href);
  if (value === null || value === "") url.searchParams.delete(name);
  else url.searchParams.set(name, value);
  history.replaceState(history.state, "", url);
}

// ---- conditions and calibration set -------------------------------------------------------

/** @param {URLSearchParams} params */
function applyConditions(params) {
  const wanted = params.get(PARAM.CONDITIONS);
  if (wanted === null) return;
  const chosen = new Set(wanted.split(",").map((c) => c.trim()));
  for (const box of conditionBoxes()) box.checked = chosen.has(box.value);
}

function recordConditions() {
  setParam(PARAM.CONDITIONS, conditionBoxes().filter((box) => box.checked).map((box) => box.value).join(","));
}

// Choose `value` in the select as soon as it has that option (options may arrive later).
/** @param {HTMLSelectElement} select @param {string} value @param {() => void} [before] */
function chooseWhenPresent(select, value, before = () => {}) {
  const choose = () => {
    if (![...select.options].some((option) => option.value === value)) return false;
    before();
    select.value = value;
    select.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  };
  if (choose()) return;
  const watcher = new MutationObserver(() => choose() && watcher.disconnect());
  watcher.observe(select, { childList: true });
}

/** @param {URLSearchParams} params */
function applyPreset(params) {
  const preset = params.get(PARAM.PRESET);
  if (preset) chooseWhenPresent(select("#preset"), preset);
}

// ---- the model choice ----------------------------------------------------------------------

/** @param {URLSearchParams} params */
function applyModel(params) {
  const key = params.get(PARAM.MODEL);
  if (!key) return;
  chooseWhenPresent(select("#model-choice"), key, () => {
    if (key !== "other") return;
    const modelId = params.get(PARAM.MODEL_ID);
    const revision = params.get(PARAM.REVISION);
    if (modelId) input("#model-id").value = modelId;
    if (revision) input("#model-revision").value = revision;
  });
}

function recordModel() {
  const key = select("#model-choice").value;
  setParam(PARAM.MODEL, key);
  setParam(PARAM.MODEL_ID, key === "other" ? input("#model-id").value.trim() : null);
  setParam(PARAM.REVISION, key === "other" ? input("#model-revision").value.trim() : null);
}

// ---- where the reader is: the current step, and tools opened by the address ---------------

// Where the sweep stands decides first (a run's results stay the current step whatever the
// model worker does after it); before any sweep, whether a model is loaded.
function currentStep() {
  const models = $("#models").dataset.state;
  const experiment = $("#experiment").dataset.state;
  if (["done", "viewing"].includes(experiment ?? "")) return "step-results";
  if (["running", "paused", "frozen", "measured", "cancelled", "error"].includes(experiment ?? "")) return "step-run";
  if (models !== "loaded" && models !== "generating") return "step-model";
  return "step-setup";
}

function markStep() {
  const step = currentStep();
  for (const link of document.querySelectorAll(".steps a")) {
    if (link.getAttribute("href") === `#${step}`) link.setAttribute("aria-current", "step");
    else link.removeAttribute("aria-current");
  }
}

function openTarget() {
  const target = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  const tool = target?.closest("details");
  if (tool) tool.open = true;
}

export function setupGuide() {
  const params = new URLSearchParams(location.search);
  applyConditions(params);
  applyPreset(params);
  applyModel(params);
  for (const box of conditionBoxes()) box.addEventListener("change", recordConditions);
  select("#preset").addEventListener("change", () => setParam(PARAM.PRESET, select("#preset").value));
  for (const id of ["#model-choice", "#model-id", "#model-revision"]) $(id).addEventListener("change", recordModel);
  const observer = new MutationObserver(markStep);
  for (const id of ["#models", "#experiment"]) observer.observe($(id), { attributes: true, attributeFilter: ["data-state"] });
  markStep();
  window.addEventListener("hashchange", openTarget);
  openTarget();
}


setupGuide();
