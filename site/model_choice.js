// @ts-check
// What the Models panel (site/models_panel.js) would load: the catalogue (./models.json) and
// the architectures the pinned transformers.js runs, the choices of model, backend and dtype
// (`currentSpec`: the spec the client loads), and the WebGPU check. Local: nothing here
// downloads a model or starts a worker; the panel's review, consent and load follow.

import { EVIDENCE_LABELS, FIXTURE_LABEL, PARAM, SUBJECT_LABELS } from "./lab_protocol.js";
import { addSyntheticGroup, syntheticNotice, syntheticOf, syntheticSummary } from "./synthetic_choice.js";
import { $ } from "./dom.js";
import { messageOf } from "./common/errors.js";

/** @import { Panel } from "./models_panel.js" */
/** @import { Backend, Catalogue, CatalogueEntry, ChosenModel, GpuAdapter, WebGpu } from "./page_types.js" */

const params = new URLSearchParams(location.search);
const HEX40 = /^[0-9a-f]{40}$/;

/** @param {Panel} panel @returns {CatalogueEntry | null} */
export function entry(panel) {
  const key = $("#model-choice", HTMLSelectElement).value;
  return panel.catalogue.models.find((model) => model.key === key) ?? null;
}

// The backend the user chose, or null: none is preselected where the page found WebGPU
// unavailable (the user chooses; the app never switches by itself).
/** @returns {Backend | null} */
export function backend() {
  const value = $('input[name="backend"]:checked', HTMLInputElement)?.value;
  return value === "webgpu" || value === "wasm" ? value : null;
}

/** @param {string} url */
export function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

// The bundled models served by this site: the test fixture and the locally trained reference
// subjects (tests/fixtures/subject, subject2), each named with its own evidence label.
const SUBJECT_SOURCE = "bundled-subject";
/** @param {string} source */
export const isBundled = (source) => source === "bundled-fixture" || source === SUBJECT_SOURCE;
/** A reference subject's own label (pyapp.records.subject.SUBJECTS), by its model id. @param {string} modelId @returns {string} */
export const subjectLabel = (modelId) => /** @type {Record<string, string>} */ (SUBJECT_LABELS)[modelId] ?? EVIDENCE_LABELS["reference-subject"];
/** @param {{ source: string, model_id: string }} spec */
export const bundledLabel = (spec) => (spec.source === SUBJECT_SOURCE ? subjectLabel(spec.model_id) : FIXTURE_LABEL);

// The config.json hashes of the test fixtures (the tiny fixture and the stand-ins): a model
// whose config.json is one of them is labelled a fixture wherever it was served from.
/** @param {Catalogue} catalogue @returns {string[]} */
export function fixtureConfigs(catalogue) {
  return [catalogue.fixture_config_sha256 ?? "", ...Object.values(catalogue.standin_config_sha256 ?? {})].filter(Boolean);
}

// The spec the client loads: from the catalogue entry, or the free-text id.
/** @param {Panel} panel @returns {ChosenModel} */
export function currentSpec(panel) {
  const chosen = entry(panel);
  const { catalogue, architectures, threads } = panel;
  const dtype = $("#model-dtype", HTMLSelectElement).value;
  const host = $("#model-host", HTMLInputElement).value.trim() || catalogue.default_host;
  if (chosen) {
    const bundled = isBundled(chosen.source);
    return {
      key: chosen.key,
      label: chosen.label,
      model_id: chosen.model_id,
      revision: chosen.revision,
      pinned: bundled || HEX40.test(chosen.revision),
      dtype,
      source: chosen.source,
      host: bundled ? null : host,
      local_path: bundled ? new URL("./models/", location.href).pathname : null,
      download_mb: chosen.download_mb?.[dtype] ?? null,
      licence: chosen.licence ?? "unknown",
      revision_note: chosen.revision_note ?? null,
      fixture_config_sha256: fixtureConfigs(catalogue),
      supported_model_types: Object.keys(architectures),
      threads,
      chat_template_options: chosen.chat_template_options ?? {},
      architecture: chosen.architecture ?? null,
    };
  }
  const revision = $("#model-revision", HTMLInputElement).value.trim() || "main";
  return {
    key: "other",
    label: "Other model",
    model_id: $("#model-id", HTMLInputElement).value.trim(),
    revision,
    pinned: HEX40.test(revision),
    dtype,
    source: "hub",
    host,
    local_path: null,
    download_mb: null,
    licence: "see the model card",
    revision_note: null,
    fixture_config_sha256: fixtureConfigs(catalogue),
    supported_model_types: Object.keys(architectures),
    threads,
    chat_template_options: {},
    architecture: null,
  };
}

/** @param {Panel} panel */
export function fillDtypes(panel) {
  const synthetic = syntheticOf($("#model-choice", HTMLSelectElement).value);
  $("#model-backend").hidden = Boolean(synthetic);
  $("#backend-status").hidden = Boolean(synthetic);
  // a bundled model is served by this site: no host to choose
  // (the fixture and the reference subject alike)
  $("#model-host-field").hidden = Boolean(synthetic) || isBundled(entry(panel)?.source ?? "");
  $("#synthetic-notice").hidden = !synthetic;
  $("#synthetic-notice").textContent = synthetic ? syntheticNotice(synthetic) : "";
  $("#model-review").textContent = synthetic ? "Use synthetic model (no download)" : "Load model…";
  const chosen = entry(panel);
  const chosenBackend = backend();
  const generic = chosenBackend === "webgpu" ? ["q4f16", "q4", "fp32"] : ["q8", "q4", "fp32"];
  const options = chosenBackend === null ? [] : chosen ? (chosen.dtypes[chosenBackend] ?? []) : generic;
  const select = $("#model-dtype", HTMLSelectElement);
  select.replaceChildren(...options.map((dtype) => new Option(dtype, dtype)));
  $("#model-other").hidden = chosen !== null || Boolean(synthetic);
  summarise(panel);
}

/** @param {Panel} panel */
export function summarise(panel) {
  const synthetic = syntheticOf($("#model-choice", HTMLSelectElement).value);
  if (synthetic) {
    $("#model-summary").textContent = syntheticSummary(synthetic);
    return;
  }
  const spec = currentSpec(panel);
  const size = spec.download_mb === null ? "size unknown" : `≈ ${spec.download_mb} MB`;
  const pin = spec.pinned ? `revision ${spec.revision.slice(0, 12)}` : `UNPINNED revision "${spec.revision}"`;
  const evidence = isBundled(spec.source) ? ` — ${bundledLabel(spec)}` : "";
  // before a backend is chosen there is no dtype, so no size: said so, never "· · size unknown"
  const dtypeAndSize = spec.dtype ? [spec.dtype, size] : ["dtype and size once a backend is chosen"];
  $("#model-summary").textContent = `${[spec.model_id, pin, ...dtypeAndSize, spec.licence].filter(Boolean).join(" · ")}${evidence}`;
}

// The catalogue (./models.json) and the architectures the pinned transformers.js runs, into
// the picker; then the WebGPU check. Nothing leaves this origin.
/** @param {Panel} panel */
export async function loadCatalogue(panel) {
  const response = await fetch("./models.json", { cache: "no-cache" });
  panel.catalogue = /** @type {Catalogue} */ (await response.json()); // this site's own file
  const architectures = await fetch("./transformers/architectures.json", { cache: "no-cache" });
  // written by scripts/build_site.py (causal_lm_types)
  const known = /** @type {{ causal_lm: Record<string, string>, transformers_js: string }} */ (await architectures.json());
  panel.architectures = known.causal_lm;
  panel.architecturesVersion = known.transformers_js;
  const host = params.get(PARAM.MODEL_HOST);
  if (host) panel.catalogue.default_host = host;
  const select = $("#model-choice", HTMLSelectElement);
  for (const model of panel.catalogue.models) {
    const pin = isBundled(model.source) || HEX40.test(model.revision) ? "" : " — UNPINNED";
    select.append(new Option(`${model.label}${pin}`, model.key));
  }
  select.append(new Option("Other: type a model id", "other"));
  addSyntheticGroup(select);
  panel.webgpu = await probeWebGPU();
  // WebGPU is preselected only where it is available; otherwise the user chooses
  const chosenBackend = $('input[name="backend"]:checked', HTMLInputElement);
  if (!chosenBackend && panel.webgpu.available) $('input[name="backend"][value="webgpu"]', HTMLInputElement).checked = true;
  if (chosenBackend?.value === "webgpu" && !panel.webgpu.available) chosenBackend.checked = false;
  // where the browser has no WebGPU the option is not offered (the worker refuses it too)
  const webgpu = $('input[name="backend"][value="webgpu"]', HTMLInputElement);
  webgpu.disabled = !panel.webgpu.available;
  const words = webgpu.parentElement?.lastChild;
  if (words) words.textContent = panel.webgpu.available ? " WebGPU (GPU)" : " WebGPU (not available in this browser)";
  showWebGPU(panel.webgpu);
  fillDtypes(panel);
  panel.catalogueReady = true;
}

// ---- the WebGPU check (local: nothing is downloaded) ------------------------------------------

/** @returns {Promise<WebGpu>} */
export async function probeWebGPU() {
  const gpu = /** @type {{ requestAdapter(): Promise<GpuAdapter | null> } | undefined} */ (Reflect.get(navigator, "gpu"));
  if (!gpu) {
    return { checked: true, available: false, why: "this browser has no navigator.gpu", info: null };
  }
  try {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return { checked: true, available: false, why: "the browser offers no WebGPU adapter", info: null };
    return {
      checked: true,
      available: true,
      why: "",
      info: {
        vendor: adapter.info?.vendor || null,
        architecture: adapter.info?.architecture || null,
        fallback: adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? null,
      },
      f16: adapter.features.has("shader-f16"),
    };
  } catch (error) {
    return { checked: true, available: false, why: `requestAdapter() failed: ${messageOf(error)}`, info: null };
  }
}


/** @param {WebGpu} webgpu */
export function showWebGPU(webgpu) {
  const line = $("#backend-status");
  if (webgpu.available && webgpu.info) {
    const fallback = webgpu.info.fallback ? " (a software fallback adapter: slow)" : "";
    line.textContent = `WebGPU available: ${webgpu.info.vendor || "unknown vendor"} ${webgpu.info.architecture || ""}${fallback}; shader-f16: ${webgpu.f16 ? "yes" : "no"}.`;
  } else {
    line.textContent = `WebGPU is not available (${webgpu.why}). Choose a backend: WASM runs on the CPU; nothing is preselected and the app never switches by itself.`;
  }
}

