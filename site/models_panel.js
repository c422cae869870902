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
// The client's events are PANEL_EVENTS records (pyapp/browser/model_messages.py), tagged by `type`.

import { ModelClient } from "./model_client.js";
import { MODEL_TYPE } from "./model_protocol.js";

const $ = (selector) => document.querySelector(selector);
const params = new URLSearchParams(location.search);
const HEX40 = /^[0-9a-f]{40}$/;
import { FIXTURE_LABEL } from "./lab_protocol.js";

// "the model's own, no options" or "enable_thinking: false" (part of the measurement condition).
export function templateOptionsText(options) {
  const entries = Object.entries(options ?? {});
  if (!entries.length) return "the model's own template, no options";
  return `the model's own template with ${entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ")}`;
}

export function setupModels({ request }) {
  const panel = $("#models");
  const status = $("#model-status");
  const files = new Map(); // file -> {row, bar, text}
  const consented = new Set(); // spec keys the user agreed to in this session
  let catalogue = { models: [], default_host: "https://huggingface.co/" };
  let architectures = {}; // model_type -> class the pinned transformers.js runs (build_site.py)
  let architectures_version = "?";
  let webgpu = { checked: false, available: false, why: "not checked yet", info: null };
  let generating = false;
  const changeListeners = new Set(); // called on every load / state change of the client

  // `fault=KIND@N,...`: fault-injection hooks for tests (workers/faults.js, docs/sweep.md)
  const client = new ModelClient({ onEvent, faults: params.get("fault") ?? "" });
  for (const problem of client.faults.errors) console.error(problem);
  const stepDelay = Number(params.get("model_step_delay_ms")) || 0;
  const threads = Number(params.get("model_threads")) || null; // WASM threads (bench); default: all cores
  const defaultDebug = stepDelay ? { step_delay_ms: stepDelay } : undefined;

  function setPanel(state, message) {
    panel.dataset.state = state;
    if (message !== undefined) status.textContent = message;
  }

  // ---- catalogue and choices -----------------------------------------------------------

  function entry() {
    const key = $("#model-choice").value;
    return catalogue.models.find((model) => model.key === key) ?? null;
  }

  function backend() {
    return document.querySelector('input[name="backend"]:checked').value;
  }

  function hostOf(url) {
    try {
      return new URL(url).host;
    } catch {
      return url;
    }
  }

  // The config.json hashes of the test fixtures (the tiny fixture and the stand-ins): a model
  // whose config.json is one of them is labelled a fixture wherever it was served from.
  function fixtureConfigs() {
    return [catalogue.fixture_config_sha256, ...Object.values(catalogue.standin_config_sha256 ?? {})].filter(Boolean);
  }

  // The spec the client loads: from the catalogue entry, or the free-text id.
  function currentSpec() {
    const chosen = entry();
    const dtype = $("#model-dtype").value;
    const host = $("#model-host").value.trim() || catalogue.default_host;
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
        fixture_config_sha256: fixtureConfigs(),
        supported_model_types: Object.keys(architectures),
        threads,
        chat_template_options: chosen.chat_template_options ?? {},
        architecture: chosen.architecture ?? null,
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
      fixture_config_sha256: fixtureConfigs(),
      supported_model_types: Object.keys(architectures),
      threads,
      chat_template_options: {},
      architecture: null,
    };
  }

  function fillDtypes() {
    const chosen = entry();
    const options = chosen ? chosen.dtypes[backend()] : backend() === "webgpu" ? ["q4f16", "q4", "fp32"] : ["q8", "q4", "fp32"];
    const select = $("#model-dtype");
    select.replaceChildren(...options.map((dtype) => new Option(dtype, dtype)));
    $("#model-other").hidden = chosen !== null;
    summarise();
  }

  function summarise() {
    const spec = currentSpec();
    const size = spec.download_mb === null ? "size unknown" : `≈ ${spec.download_mb} MB`;
    const pin = spec.pinned ? `revision ${spec.revision.slice(0, 12)}` : `UNPINNED revision "${spec.revision}"`;
    const evidence = spec.source === "bundled-fixture" ? ` — ${FIXTURE_LABEL}` : "";
    $("#model-summary").textContent = `${spec.model_id} · ${pin} · ${spec.dtype} · ${size} · ${spec.licence}${evidence}`;
  }

  async function checkWebGPU() {
    if (!("gpu" in navigator) || !navigator.gpu) {
      webgpu = { checked: true, available: false, why: "this browser has no navigator.gpu", info: null };
    } else {
      try {
        const adapter = await navigator.gpu.requestAdapter();
        webgpu = adapter
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
        webgpu = { checked: true, available: false, why: `requestAdapter() failed: ${error.message}`, info: null };
      }
    }
    const line = $("#backend-status");
    if (webgpu.available) {
      const fallback = webgpu.info.fallback ? " (a software fallback adapter: slow)" : "";
      line.textContent = `WebGPU available: ${webgpu.info.vendor || "unknown vendor"} ${webgpu.info.architecture || ""}${fallback}; shader-f16: ${webgpu.f16 ? "yes" : "no"}.`;
    } else {
      line.textContent = `WebGPU is not available (${webgpu.why}). Choose WASM to run on the CPU; the app never switches by itself.`;
    }
  }

  // ---- consent and loading -------------------------------------------------------------

  function consentKey(spec, chosenBackend) {
    const options = JSON.stringify(spec.chat_template_options ?? {});
    return [spec.model_id, spec.revision, spec.dtype, spec.source, spec.host, chosenBackend, options].join("|");
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

  async function review() {
    const spec = currentSpec();
    const chosenBackend = backend();
    if (!spec.model_id) {
      setPanel("failed", "Type a model id first (org/name).");
      return;
    }
    if (chosenBackend === "webgpu" && webgpu.checked && !webgpu.available) {
      // Refuse before any consent or download; record it as a failed load (exportable).
      client.refuse(
        spec,
        "webgpu",
        "backend_unavailable",
        `WebGPU is not available (${webgpu.why}); nothing was downloaded and nothing ran on another backend. Choose WASM explicitly.`,
      );
      return;
    }
    const type = spec.architecture?.model_type;
    if (type && !Object.hasOwn(architectures, type)) {
      // Refuse before any consent or download: the pinned transformers.js has no such model.
      client.refuse(
        spec,
        chosenBackend,
        "architecture_unsupported",
        `${spec.label} is a "${type}" model (${spec.architecture.class}), which the pinned transformers.js ${architectures_version} cannot run; nothing was downloaded.`,
      );
      return;
    }
    if (consented.has(consentKey(spec, chosenBackend))) {
      startLoad(spec, chosenBackend, "reload");
      return;
    }
    const source =
      spec.source === "bundled-fixture"
        ? `${location.host} (this site; bundled with the app)`
        : `${hostOf(spec.host)} (${spec.host}${spec.model_id}/resolve/${spec.revision}/…)`;
    detailRows($("#consent-details"), [
      ["Model", spec.model_id, spec.source === "bundled-fixture" ? "fixture-label" : ""],
      ["What it is", spec.source === "bundled-fixture" ? FIXTURE_LABEL : spec.label],
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
    const dialog = $("#consent-dialog");
    dialog.returnValue = "";
    dialog.showModal();
    $("#consent-decline").focus();
    dialog.addEventListener(
      "close",
      () => {
        if (dialog.returnValue === "accept") {
          consented.add(consentKey(spec, chosenBackend));
          startLoad(spec, chosenBackend, "consent");
        } else {
          status.textContent = "Not loaded: you declined.";
        }
      },
      { once: true },
    );
  }

  function startLoad(spec, chosenBackend, reason) {
    files.clear();
    $("#model-files").replaceChildren();
    $("#model-provenance").hidden = true;
    client.load(spec, chosenBackend, reason);
  }

  function progressRow(file) {
    if (files.has(file)) return files.get(file);
    const row = document.createElement("li");
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = 0;
    bar.setAttribute("aria-label", file);
    const text = document.createElement("span");
    row.append(bar, text);
    $("#model-files").append(row);
    const item = { row, bar, text };
    files.set(file, item);
    return item;
  }

  function onEvent(event) {
    if (event.type !== MODEL_TYPE.PROGRESS) for (const listener of changeListeners) listener(event);
    if (event.type === MODEL_TYPE.PROGRESS) {
      const item = progressRow(event.file);
      item.row.dataset.status = event.status;
      if (event.total) {
        item.bar.max = event.total;
        item.bar.value = event.loaded ?? 0;
      }
      if (event.status === "done") item.bar.value = item.bar.max;
      const amount = event.total ? ` ${Math.round((event.loaded ?? 0) / 1024)} / ${Math.round(event.total / 1024)} KB` : "";
      item.text.textContent = `${event.file}: ${event.status}${amount}`;
      return;
    }
    if (event.type === MODEL_TYPE.STATE) {
      const spec = client.spec ?? {};
      if (event.state === "loading") {
        const why = event.reason === "reload-after-terminate" ? " again after the worker was terminated (no new consent needed)" : "";
        setPanel("loading", `Loading ${spec.model_id} on ${client.backend}${why}…`);
      } else if (event.state === "unloaded") {
        setPanel("unloaded", `Model unloaded: ${event.why}`);
      }
      return;
    }
    if (event.type === MODEL_TYPE.LOAD_DONE) showLoad(event.record, event.result);
  }

  function showLoad(record, result) {
    $("#model-diagnostics").disabled = false;
    const spec = client.spec ?? {};
    // The bundled fixture, or a download recognised as a test fixture (a stand-in) by its config.json.
    const isFixture = spec.source === "bundled-fixture" || (record.ok && client.provenance().evidence === "fixture");
    const fixture = isFixture ? ` (${FIXTURE_LABEL})` : "";
    if (!record.ok) {
      setPanel("failed", `Load failed [${record.error_code}]: ${record.error_message}`);
      $("#try-generate").disabled = true;
      return;
    }
    const secs = (ms) => (ms === null ? "—" : `${(ms / 1000).toFixed(2)} s`);
    setPanel(
      "loaded",
      `Loaded ${spec.model_id}${fixture} on ${record.backend_actual} in ${secs(record.setup_ms)} (load ${record.load_id}, ${record.reason}).`,
    );
    $("#try-generate").disabled = generating;
    const adapter = result.adapter;
    detailRows($("#model-provenance"), [
      ["Model", `${spec.model_id}${fixture}`, isFixture ? "fixture-label" : ""],
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
    ]);
    $("#model-provenance").hidden = false;
  }

  function downloadDiagnostics() {
    const data = { provenance: client.provenance(), generated_at: new Date().toISOString() };
    const blob = new Blob([JSON.stringify(data, null, 2) + "\n"], { type: "application/json" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "model-load-diagnostics.json";
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  }

  // ---- try a prompt (Python path) ------------------------------------------------------

  async function tryPrompt(event) {
    event.preventDefault();
    const maxNew = Number($("#try-max-new").value);
    const timeoutS = Number($("#try-timeout").value);
    if (!Number.isInteger(maxNew) || maxNew < 1 || !(timeoutS > 0)) {
      $("#try-status").textContent = "Max new tokens must be a whole number ≥ 1 and the timeout > 0.";
      return;
    }
    const caps = { max_input_tokens: 1024, max_new_tokens: maxNew, max_output_bytes: 16384, timeout_ms: Math.round(timeoutS * 1000) };
    generating = true;
    $("#try-generate").disabled = true;
    $("#try-cancel").disabled = false;
    const before = panel.dataset.state;
    setPanel("generating");
    $("#try-status").textContent = "Generating through Python…";
    $("#try-output").textContent = "";
    $("#try-meta").textContent = "";
    try {
      const result = await request("model_generate", { prompt: $("#try-prompt").value, caps }, caps.timeout_ms + 120_000);
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
    } catch (error) {
      $("#try-status").textContent = `Generation failed: ${error.message}`;
    } finally {
      generating = false;
      $("#try-cancel").disabled = true;
      const state = client.state === "loaded" ? "loaded" : client.state;
      setPanel(state === "none" ? before : state);
      $("#try-generate").disabled = client.state !== "loaded" && client.state !== "loading";
    }
  }

  // ---- wiring --------------------------------------------------------------------------

  $("#model-host").value = params.get("model_host") || "https://huggingface.co/";
  $("#model-choice").addEventListener("change", fillDtypes);
  for (const radio of document.querySelectorAll('input[name="backend"]')) radio.addEventListener("change", fillDtypes);
  $("#model-dtype").addEventListener("change", summarise);
  for (const id of ["#model-id", "#model-revision", "#model-host"]) $(id).addEventListener("input", summarise);
  $("#model-review").addEventListener("click", review);
  $("#model-diagnostics").addEventListener("click", downloadDiagnostics);
  $("#try-form").addEventListener("submit", tryPrompt);
  $("#try-cancel").addEventListener("click", () => {
    if (client.cancel()) $("#try-status").textContent = "Cancelling…";
  });

  const ready = (async () => {
    const response = await fetch("./models.json", { cache: "no-cache" });
    catalogue = await response.json();
    const known = await fetch("./transformers/architectures.json", { cache: "no-cache" }).then((r) => r.json());
    architectures = known.causal_lm;
    architectures_version = known.transformers_js;
    if (params.get("model_host")) catalogue.default_host = params.get("model_host");
    const select = $("#model-choice");
    for (const model of catalogue.models) {
      const pin = model.source === "bundled-fixture" || HEX40.test(model.revision) ? "" : " — UNPINNED";
      select.append(new Option(`${model.label}${pin}`, model.key));
    }
    select.append(new Option("Other: type a model id", "other"));
    await checkWebGPU();
    fillDtypes();
  })();

  // The one function Python calls through PyScript's sync channel.
  const modelCall = (requestJson) => client.call(requestJson, defaultDebug);
  // The loaded model, for the experiment section and the sweep CLI (window.lab.models.state()).
  function state() {
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

  function subscribe(listener) {
    changeListeners.add(listener);
    return () => changeListeners.delete(listener);
  }

  return { client, ready, modelCall, webgpu: () => webgpu, state, subscribe };
}
