// The Models panel (main thread): catalogue picker, backend choice, consent dialog, per-file
// progress, provenance, diagnostics, and the "try a prompt" box. The model itself lives in
// workers/model_client.js (which owns workers/model_worker.js); Python reaches it through the
// bridge (`model_generate`, answered by pyapp.browser.model in the PyScript worker).
//
// Before consent nothing leaves this origin: the catalogue is ./models.json, the WebGPU
// check is local, and the model worker (and transformers.js) is not even started.
//
// #models carries data-state = idle | loading | loaded | failed | unloaded | generating.
// window.lab.models.state() -> {state, loaded, model_id, revision, dtype, source, evidence,
// label, backend, provenance}; subscribe(listener) is told of every load and state change.

import { ModelClient } from "./model_client.js";

const $ = (selector) => document.querySelector(selector);
const params = new URLSearchParams(location.search);
const HEX40 = /^[0-9a-f]{40}$/;
import { FIXTURE_LABEL } from "./lab_protocol.js";
import { downloadJson } from "./dom.js";

function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function backend() {
  return document.querySelector('input[name="backend"]:checked').value;
}

function consentKey(spec, chosenBackend) {
  return [spec.model_id, spec.revision, spec.dtype, spec.source, spec.host, chosenBackend].join("|");
}

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

// What WebGPU this browser offers (checked locally, before any consent).
async function probeWebGPU() {
  if (!("gpu" in navigator) || !navigator.gpu) {
    return { checked: true, available: false, why: "this browser has no navigator.gpu", info: null };
  }
  try {
    const adapter = await navigator.gpu.requestAdapter();
    return adapter
      ? {
          checked: true,
          available: true,
          why: "",
          info: {
            vendor: adapter.info?.vendor || null,
            architecture: adapter.info?.architecture || null,
            fallback: adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? null,
          },
          f16: adapter.features.has("shader-f16"),
        }
      : { checked: true, available: false, why: "the browser offers no WebGPU adapter", info: null };
  } catch (error) {
    return { checked: true, available: false, why: `requestAdapter() failed: ${error.message}`, info: null };
  }
}

function showWebGPU(webgpu) {
  const line = $("#backend-status");
  if (webgpu.available) {
    const fallback = webgpu.info.fallback ? " (a software fallback adapter: slow)" : "";
    line.textContent = `WebGPU available: ${webgpu.info.vendor || "unknown vendor"} ${webgpu.info.architecture || ""}${fallback}; shader-f16: ${webgpu.f16 ? "yes" : "no"}.`;
  } else {
    line.textContent = `WebGPU is not available (${webgpu.why}). Choose WASM to run on the CPU; the app never switches by itself.`;
  }
}

// The consent dialog's rows: what will be downloaded, from where, to run on what.
function consentRows(spec, chosenBackend) {
  const source =
    spec.source === "bundled-fixture"
      ? `${location.host} (this site; bundled with the app)`
      : `${hostOf(spec.host)} (${spec.host}${spec.model_id}/resolve/${spec.revision}/…)`;
  return [
    ["Model", spec.model_id, spec.source === "bundled-fixture" ? "fixture-label" : ""],
    ["What it is", spec.source === "bundled-fixture" ? FIXTURE_LABEL : spec.label],
    ["Revision", spec.pinned ? spec.revision : `${spec.revision} — UNPINNED: the files can change`, spec.pinned ? "" : "unpinned"],
    ["Download", spec.download_mb === null ? "size unknown" : `≈ ${spec.download_mb} MB (dtype ${spec.dtype})`],
    ["From", source],
    ["Backend", chosenBackend === "webgpu" ? "WebGPU (GPU)" : "WASM (CPU)"],
    ["Licence", spec.licence],
  ];
}

const seconds = (ms) => (ms === null ? "—" : `${(ms / 1000).toFixed(2)} s`);

// The provenance rows of a successful load.
function provenanceRows(spec, fixture, record, result) {
  const adapter = result.adapter;
  return [
    ["Model", `${spec.model_id}${fixture}`, spec.source === "bundled-fixture" ? "fixture-label" : ""],
    ["Revision", spec.pinned ? spec.revision : `${spec.revision} (UNPINNED)`, spec.pinned ? "" : "unpinned"],
    ["dtype", result.dtype],
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
    ["Download", `${record.download_bytes} bytes in ${seconds(record.download_ms)}`],
    ["Setup", `${seconds(record.setup_ms)} (warm-up ${seconds(result.warmup_ms)}); compilation: not separable (null)`],
    ["FLOPs", "unavailable (null)"],
  ];
}

function downloadDiagnostics(client) {
  const data = { provenance: client.provenance(), generated_at: new Date().toISOString() };
  downloadJson(JSON.stringify(data, null, 2) + "\n", "model-load-diagnostics.json");
}

// "Try a prompt": the caps from the form, or null after saying what is wrong.
function tryCaps() {
  const maxNew = Number($("#try-max-new").value);
  const timeoutS = Number($("#try-timeout").value);
  if (!Number.isInteger(maxNew) || maxNew < 1 || !(timeoutS > 0)) {
    $("#try-status").textContent = "Max new tokens must be a whole number ≥ 1 and the timeout > 0.";
    return null;
  }
  return { max_input_tokens: 1024, max_new_tokens: maxNew, max_output_bytes: 16384, timeout_ms: Math.round(timeoutS * 1000) };
}

function showTryResult(result) {
  const c = result.completion;
  $("#try-output").textContent = c.text;
  const ms = (value) => (value === null ? "—" : `${value.toFixed(1)} ms`);
  const failure = c.failure ? ` · failure ${c.failure.code}: ${c.failure.message}` : "";
  $("#try-meta").textContent =
    `finish: ${c.finish_reason ?? "none"} · input tokens ${c.input_tokens ?? "—"} · output tokens ${c.output_tokens ?? "—"}` +
    ` · generation ${ms(c.generation_ms)} · first token ${ms(c.time_to_first_token_ms)}` +
    ` · bridge overhead ${ms(result.timing?.bridge_overhead_ms ?? null)}${failure}`;
  $("#try-status").textContent = `Finished: ${c.finish_reason ?? c.failure?.code ?? "no result"}.`;
  window.lab.lastModelResult = result;
}

// The panel's state: the catalogue, the WebGPU check, consents given, the per-file rows.
class ModelsPanel {
  constructor(request) {
    this.request = request;
    this.panel = $("#models");
    this.status = $("#model-status");
    this.files = new Map(); // file -> {row, bar, text}
    this.consented = new Set(); // spec keys the user agreed to in this session
    this.catalogue = { models: [], default_host: "https://huggingface.co/" };
    this.webgpu = { checked: false, available: false, why: "not checked yet", info: null };
    this.generating = false;
    this.changeListeners = new Set(); // called on every load / state change of the client
    // `fault=KIND@N,...`: fault-injection hooks for tests (workers/faults.js, docs/sweep.md)
    this.client = new ModelClient({ onEvent: (event) => this.onEvent(event), faults: params.get("fault") ?? "" });
    for (const problem of this.client.faults.errors) console.error(problem);
    const stepDelay = Number(params.get("model_step_delay_ms")) || 0;
    this.defaultDebug = stepDelay ? { step_delay_ms: stepDelay } : undefined;
  }

  setPanel(state, message) {
    this.panel.dataset.state = state;
    if (message !== undefined) this.status.textContent = message;
  }

  // ---- catalogue and choices -----------------------------------------------------------

  entry() {
    const key = $("#model-choice").value;
    return this.catalogue.models.find((model) => model.key === key) ?? null;
  }

  // The spec the client loads: from the catalogue entry, or the free-text id.
  currentSpec() {
    const chosen = this.entry();
    const dtype = $("#model-dtype").value;
    const host = $("#model-host").value.trim() || this.catalogue.default_host;
    const fixtureConfig = this.catalogue.fixture_config_sha256 ?? null;
    if (chosen) {
      const bundled = chosen.source === "bundled-fixture";
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
        fixture_config_sha256: fixtureConfig,
      };
    }
    const revision = $("#model-revision").value.trim() || "main";
    return {
      key: "other",
      label: "Other model",
      model_id: $("#model-id").value.trim(),
      revision,
      pinned: HEX40.test(revision),
      dtype,
      source: "hub",
      host,
      local_path: null,
      download_mb: null,
      licence: "see the model card",
      revision_note: null,
      fixture_config_sha256: fixtureConfig,
    };
  }

  fillDtypes() {
    const chosen = this.entry();
    const options = chosen ? chosen.dtypes[backend()] : backend() === "webgpu" ? ["q4f16", "q4", "fp32"] : ["q8", "q4", "fp32"];
    const select = $("#model-dtype");
    select.replaceChildren(...options.map((dtype) => new Option(dtype, dtype)));
    $("#model-other").hidden = chosen !== null;
    this.summarise();
  }

  summarise() {
    const spec = this.currentSpec();
    const size = spec.download_mb === null ? "size unknown" : `≈ ${spec.download_mb} MB`;
    const pin = spec.pinned ? `revision ${spec.revision.slice(0, 12)}` : `UNPINNED revision "${spec.revision}"`;
    const evidence = spec.source === "bundled-fixture" ? ` — ${FIXTURE_LABEL}` : "";
    $("#model-summary").textContent = `${spec.model_id} · ${pin} · ${spec.dtype} · ${size} · ${spec.licence}${evidence}`;
  }

  async checkWebGPU() {
    this.webgpu = await probeWebGPU();
    showWebGPU(this.webgpu);
  }

  async loadCatalogue() {
    const response = await fetch("./models.json", { cache: "no-cache" });
    this.catalogue = await response.json();
    if (params.get("model_host")) this.catalogue.default_host = params.get("model_host");
    const select = $("#model-choice");
    for (const model of this.catalogue.models) {
      const pin = model.source === "bundled-fixture" || HEX40.test(model.revision) ? "" : " — UNPINNED";
      select.append(new Option(`${model.label}${pin}`, model.key));
    }
    select.append(new Option("Other: type a model id", "other"));
    await this.checkWebGPU();
    this.fillDtypes();
  }

  // ---- consent and loading -------------------------------------------------------------

  async review() {
    const spec = this.currentSpec();
    const chosenBackend = backend();
    if (!spec.model_id) {
      this.setPanel("failed", "Type a model id first (org/name).");
      return;
    }
    if (chosenBackend === "webgpu" && this.webgpu.checked && !this.webgpu.available) {
      // Refuse before any consent or download; record it as a failed load (exportable).
      this.client.refuse(
        spec,
        "webgpu",
        "backend_unavailable",
        `WebGPU is not available (${this.webgpu.why}); nothing was downloaded and nothing ran on another backend. Choose WASM explicitly.`,
      );
      return;
    }
    if (this.consented.has(consentKey(spec, chosenBackend))) {
      this.startLoad(spec, chosenBackend, "reload");
      return;
    }
    this.askConsent(spec, chosenBackend);
  }

  askConsent(spec, chosenBackend) {
    detailRows($("#consent-details"), consentRows(spec, chosenBackend));
    const warning = $("#consent-warning");
    warning.hidden = !spec.revision_note;
    warning.textContent = spec.revision_note ? `About the revision: ${spec.revision_note}.` : "";
    const dialog = $("#consent-dialog");
    dialog.returnValue = "";
    dialog.showModal();
    $("#consent-decline").focus();
    dialog.addEventListener(
      "close",
      () => {
        if (dialog.returnValue === "accept") {
          this.consented.add(consentKey(spec, chosenBackend));
          this.startLoad(spec, chosenBackend, "consent");
        } else {
          this.status.textContent = "Not loaded: you declined.";
        }
      },
      { once: true },
    );
  }

  startLoad(spec, chosenBackend, reason) {
    this.files.clear();
    $("#model-files").replaceChildren();
    $("#model-provenance").hidden = true;
    this.client.load(spec, chosenBackend, reason);
  }

  progressRow(file) {
    if (this.files.has(file)) return this.files.get(file);
    const row = document.createElement("li");
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = 0;
    bar.setAttribute("aria-label", file);
    const text = document.createElement("span");
    row.append(bar, text);
    $("#model-files").append(row);
    const item = { row, bar, text };
    this.files.set(file, item);
    return item;
  }

  showProgress(event) {
    const item = this.progressRow(event.file);
    item.row.dataset.status = event.status;
    if (event.total) {
      item.bar.max = event.total;
      item.bar.value = event.loaded ?? 0;
    }
    if (event.status === "done") item.bar.value = item.bar.max;
    const amount = event.total ? ` ${Math.round((event.loaded ?? 0) / 1024)} / ${Math.round(event.total / 1024)} KB` : "";
    item.text.textContent = `${event.file}: ${event.status}${amount}`;
  }

  onEvent(event) {
    if (event.kind !== "progress") for (const listener of this.changeListeners) listener(event);
    if (event.kind === "progress") {
      this.showProgress(event);
      return;
    }
    if (event.kind === "state") {
      const spec = this.client.spec ?? {};
      if (event.state === "loading") {
        const why = event.reason === "reload-after-terminate" ? " again after the worker was terminated (no new consent needed)" : "";
        this.setPanel("loading", `Loading ${spec.model_id} on ${this.client.backend}${why}…`);
      } else if (event.state === "unloaded") {
        this.setPanel("unloaded", `Model unloaded: ${event.why}`);
      }
      return;
    }
    if (event.kind === "load") this.showLoad(event.record, event.result);
  }

  showLoad(record, result) {
    $("#model-diagnostics").disabled = false;
    const spec = this.client.spec ?? {};
    const fixture = spec.source === "bundled-fixture" ? ` (${FIXTURE_LABEL})` : "";
    if (!record.ok) {
      this.setPanel("failed", `Load failed [${record.error_code}]: ${record.error_message}`);
      $("#try-generate").disabled = true;
      return;
    }
    this.setPanel(
      "loaded",
      `Loaded ${spec.model_id}${fixture} on ${record.backend_actual} in ${seconds(record.setup_ms)} (load ${record.load_id}, ${record.reason}).`,
    );
    $("#try-generate").disabled = this.generating;
    detailRows($("#model-provenance"), provenanceRows(spec, fixture, record, result));
    $("#model-provenance").hidden = false;
  }

  // ---- try a prompt (Python path) ------------------------------------------------------

  async tryPrompt(event) {
    event.preventDefault();
    const caps = tryCaps();
    if (caps === null) return;
    this.generating = true;
    $("#try-generate").disabled = true;
    $("#try-cancel").disabled = false;
    const before = this.panel.dataset.state;
    this.setPanel("generating");
    $("#try-status").textContent = "Generating through Python…";
    $("#try-output").textContent = "";
    $("#try-meta").textContent = "";
    try {
      showTryResult(await this.request("model_generate", { prompt: $("#try-prompt").value, caps }, caps.timeout_ms + 120_000));
    } catch (error) {
      $("#try-status").textContent = `Generation failed: ${error.message}`;
    } finally {
      this.generating = false;
      $("#try-cancel").disabled = true;
      const client = this.client;
      const state = client.state === "loaded" ? "loaded" : client.state;
      this.setPanel(state === "none" ? before : state);
      $("#try-generate").disabled = client.state !== "loaded" && client.state !== "loading";
    }
  }

  // ---- wiring --------------------------------------------------------------------------

  wire() {
    $("#model-host").value = params.get("model_host") || "https://huggingface.co/";
    const fillDtypes = () => this.fillDtypes();
    const summarise = () => this.summarise();
    $("#model-choice").addEventListener("change", fillDtypes);
    for (const radio of document.querySelectorAll('input[name="backend"]')) radio.addEventListener("change", fillDtypes);
    $("#model-dtype").addEventListener("change", summarise);
    for (const id of ["#model-id", "#model-revision", "#model-host"]) $(id).addEventListener("input", summarise);
    $("#model-review").addEventListener("click", () => this.review());
    $("#model-diagnostics").addEventListener("click", () => downloadDiagnostics(this.client));
    $("#try-form").addEventListener("submit", (event) => this.tryPrompt(event));
    $("#try-cancel").addEventListener("click", () => {
      if (this.client.cancel()) $("#try-status").textContent = "Cancelling…";
    });
  }

  // The loaded model, for the experiment section and the sweep CLI (window.lab.models.state()).
  state() {
    const client = this.client;
    const spec = client.spec ?? {};
    const loaded = client.state === "loaded";
    return {
      state: client.state,
      loaded,
      model_id: spec.model_id ?? null,
      revision: spec.revision ?? null,
      dtype: spec.dtype ?? null,
      source: spec.source ?? null,
      // The client's provenance knows more than the spec: a hub download whose config.json is
      // the test fixture's is a fixture too.
      evidence: spec.source ? client.provenance().evidence : null,
      label: spec.source && client.provenance().evidence === "fixture" ? FIXTURE_LABEL : (spec.label ?? null),
      backend: client.backend,
      provenance: client.provenance(),
    };
  }

  subscribe(listener) {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }
}

export function setupModels({ request }) {
  const panel = new ModelsPanel(request);
  panel.wire();
  const ready = panel.loadCatalogue();
  // The one function Python calls through PyScript's sync channel.
  const modelCall = (requestJson) => panel.client.call(requestJson, panel.defaultDebug);
  return {
    client: panel.client,
    ready,
    modelCall,
    webgpu: () => panel.webgpu,
    state: () => panel.state(),
    subscribe: (listener) => panel.subscribe(listener),
  };
}
