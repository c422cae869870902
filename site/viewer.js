// @ts-check
// "Open a trace" and "Compare runs" (main thread). Files are read from the reader's disk with
// the File API and handed to the page's own Python: nothing is uploaded, nothing is fetched.
//
// Open a trace: a trace.json (and optionally its predictions.json), dropped or picked. Python
// re-derives it (`trace_open`: pyapp.browser.viewer.open_run — the code of `python -m pyapp
// reproduce` and `score`); this panel says "re-derived exactly" or lists every mismatch, and
// step 4 shows the run as the live run is shown (the experiment's own renderers), with its
// provenance, interruptions and journal under the viewing banner.
//
// Compare runs: several predictions.json files, each with its trace.json when given (paired by
// run id; Python checks the predictions' task set against the trace). Python lays them side by side
// (`compare_runs`: pyapp.browser.viewer.compare_runs — the code of `python -m pyapp compare`),
// with each run's two plots as Python drew them (pyapp/report/plots.py), on shared axes, each
// with its "Export SVG / PNG" (site/plot_export.js).

import { plotSvg } from "./profile_views.js";
import { addExport } from "./plot_export.js";
import { $, dl, evidenceLabel, h, table } from "./dom.js";
import { messageOf } from "./common/errors.js";

/** @import { ComparedRuns, OpenedTrace, RequestFunction, Trace } from "./lab_types.js" */
/** @import { ExperimentHandle } from "./experiment.js" */

/** @typedef {{ name: string, text: string, kind: unknown, runId: unknown, json: boolean }} ReadFile */
/** @typedef {{ name: string, text(): Promise<string> }} FileLike a File, or a stored run's text (site/runs_panel.js) */

const TRACE_KIND = "composition-lab-trace";
const PREDICTIONS_KIND = "composition-lab-predictions";

// Every file as {name, text, kind, runId}; kind is the document's `kind` field, or null;
// runId the run it is of (a trace's run.run_id, a predictions document's trace_run_id), to
// pair a trace with its predictions. `json`: whether the file parses as JSON at all.
/** @param {Iterable<FileLike>} files @returns {Promise<ReadFile[]>} */
async function readFiles(files) {
  const read = [];
  for (const file of files) {
    const text = await file.text();
    /** @type {unknown} */
    let kind = null;
    let runId = null;
    let json = true;
    try {
      const parsed = /** @type {unknown} */ (JSON.parse(text));
      const object = typeof parsed === "object" && parsed !== null ? parsed : null;
      kind = (object ? Reflect.get(object, "kind") : null) ?? null;
      const run = object ? Reflect.get(object, "run") : null;
      runId = (object ? Reflect.get(object, "trace_run_id") : null) ?? (typeof run === "object" && run !== null ? Reflect.get(run, "run_id") : null) ?? null;
    } catch {
      json = false;
    }
    read.push({ name: file.name, text, kind, runId, json });
  }
  return read;
}

/** @param {HTMLElement} zone @param {HTMLInputElement} input @param {(files: FileLike[]) => unknown} onFiles */
function dropZone(zone, input, onFiles) {
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    onFiles([...(event.dataTransfer?.files ?? [])]);
  });
  input.addEventListener("change", () => {
    onFiles([...(input.files ?? [])]);
    input.value = "";
  });
}

// Each part of the verdict with its own mark: the trace, the recorded fields it contradicts,
// the predictions document (or the one line that says it is of another run).
/** @param {OpenedTrace} result @returns {[boolean, string][]} */
function verdictLines(result) {
  /** @type {[boolean, string][]} */
  const lines = [];
  const traceOk = !result.trace_mismatches.length;
  lines.push([traceOk, traceOk ? "The trace re-derived exactly from its seed and raw trials." : `The trace does not re-derive: ${result.trace_mismatches.length} mismatch(es).`]);
  if (result.corrections.length) {
    lines.push([false, `${result.corrections.length} recorded trial field(s) contradict re-derivation: every number is shown and scored as re-derived, the recorded value beside it.`]);
  }
  if (result.derive_error) lines.push([false, `The predictions cannot be derived: ${result.derive_error}`]);
  if (result.predictions_other_run) lines.push([false, `The opened predictions.json is not this run's: ${result.predictions_other_run.replace(/^the predictions document is of another run: /, "")}.`]);
  else if (result.predictions_mismatches) {
    const ok = !result.predictions_mismatches.length;
    lines.push([ok, ok ? "Every number in the opened predictions.json re-derived exactly." : `The opened predictions.json differs from the re-derived numbers: ${result.predictions_mismatches.length} mismatch(es).`]);
  }
  // `reproduce`'s INCOMPLETE lines: held-out tasks a frozen profile listed with no trial
  for (const line of result.incomplete ?? []) lines.push([false, `Incomplete: ${line}.`]);
  return lines;
}

/** @param {OpenedTrace} result @returns {HTMLElement[]} */
function verificationView(result) {
  /** @type {HTMLElement[]} */
  const lines = verdictLines(result).map(([ok, text]) => h("p", `${ok ? "✓" : "✗"} ${text}`, { class: ok ? "correct" : "incorrect" }));
  const mismatches = [...result.trace_mismatches, ...(result.predictions_mismatches ?? [])];
  if (mismatches.length) {
    const list = h("ul", null, { class: "mismatches" });
    for (const m of mismatches) list.append(h("li", m));
    lines.push(list);
  }
  return lines;
}

// Everything re-deriving a shown run found against it, as the page's re-derivation returned
// it (the trace's and the opened predictions document's mismatches; predictions that cannot
// be derived): what every mark in step 4 points to. A predictions.json of another run is not
// one (its one line says so; what is drawn is derived from the trace).
/** @param {OpenedTrace} result @returns {string[]} */
function mismatchesOf(result) {
  const found = [...result.trace_mismatches, ...(result.predictions_mismatches ?? [])];
  if (result.derive_error) found.push(`the predictions cannot be derived: ${result.derive_error}`);
  return found;
}

// The verdict at the top of step 4, one line: what a reader must know before any number;
// below it, folded, the list every mark points to.
/** @param {OpenedTrace} result @param {string} name @param {string[]} mismatches */
function stepVerdict(result, name, mismatches) {
  const bad = verdictLines(result).filter(([ok]) => !ok);
  const line = $("#viewing-verdict");
  line.className = bad.length ? "incorrect" : "correct";
  line.textContent = bad.length
    ? `✗ ${name} failed re-derivation: ${bad.map(([, text]) => text).join(" ")}`
    : `✓ ${name} re-derived exactly: every number below is re-derived from its seed and raw trials.`;
  const fold = $("#viewing-mismatches");
  fold.hidden = !mismatches.length;
  $("#viewing-mismatches-summary").textContent = `Mismatches (${mismatches.length}): what re-deriving this run found`;
  $("#viewing-mismatch-list").replaceChildren(...mismatches.map((m) => h("li", m)));
}

// A failed open leaves nothing of the previous one on the page.
/** @param {ExperimentHandle} experiment */
function clearOpened(experiment) {
  const view = $("#open-view");
  view.replaceChildren();
  view.hidden = true;
  experiment.closeOpened();
}

// `evidence`: what Python shows the run as (trace_open); the model's own label is shown beside it.
/** @param {Trace} trace @param {string} evidence */
function provenanceView(trace, evidence) {
  const r = trace.run;
  const m = trace.model;
  const env = trace.environment;
  return dl([
    ["Run", `${r.run_id} · created ${r.created_at} · seed ${r.seed} · ${r.generator_version}`],
    ["Conditions", r.conditions.join(", ")],
    ["Model", m ? `${m.model_id} @ ${m.revision} (${m.source}, ${m.dtype}, ${m.backend_actual ?? "no backend"}); recorded evidence: ${m.evidence}` : "none (supplied-program control)"],
    ["Evidence", evidenceLabel(evidence)],
    ["Environment", `${env.runtime} · Python ${env.python} · pyapp ${env.pyapp_version}${env.browser ? ` · ${env.browser.user_agent}` : ""}`],
    ["Prompt templates", Object.entries(r.prompt_templates).map(([id, sha]) => `${id} ${sha.slice(0, 12)}…`).join("; ")],
  ]);
}

/** @param {Trace} trace */
function interruptionsView(trace) {
  if (!trace.interruptions.length) return h("p", "Interruptions: none.", { class: "muted" });
  return table(
    ["Trial", "At", "Reason", "Partial outcome"],
    trace.interruptions.map((i) => [i.trial_id, i.at, i.reason, i.partial ? i.partial.outcome : "none"]),
    "interruptions",
  );
}

/** @param {Trace} trace */
function journalView(trace) {
  if (!trace.journal.length) return h("p", "Journal: no entries.", { class: "muted" });
  return table(
    ["At", "Prompt", "Reply", "Finish"],
    trace.journal.map((e) => [e.at, e.prompt, e.completion.text, e.completion.finish_reason ?? e.completion.failure?.code ?? "—"]),
    "journal-entries",
  );
}

/** A run's name as part of a file name: letters, digits, dot, dash and underscore kept.
 * @param {string} name */
function fileStem(name) {
  return name.replace(/[^A-Za-z0-9._-]+/g, "_") || "run";
}

// What Compare shows, as `python -m pyapp compare` says it: its refusal first, then the lines
// it prints with --describe-anyway (pyapp/predict/compare.py: refusal, lead_lines), then the
// compact summary, every row folded, and each run's plots on shared axes.
/** @param {ComparedRuns} result */
function drawComparison(result) {
  const view = $("#compare-view");
  // the compact summary leads: one row per run and condition, the run column fixed
  const lead = h("div", null, { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Comparison summary" });
  lead.append(table(result.summary_header, result.summary_rows, "compare-summary fixed-first"));
  if (result.summary_note) lead.append(h("p", result.summary_note, { class: "muted compare-note" }));
  const all = h("details", null, { class: "compare-all" });
  all.append(h("summary", `All rows (profiles, held-out tasks, scores): ${result.rows.length}`));
  const wrap = h("div", null, { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Comparison table" });
  wrap.append(table(result.header, result.rows, "compare-table fixed-first"));
  all.append(wrap);
  // every run's plots, drawn by Python on the same axes
  const plots = h("div", null, { class: "compare-plots" });
  result.plots.forEach((drawn, i) => {
    const figure = h("figure", null, { class: "plot" });
    figure.append(h("figcaption", result.names[i]));
    // each plot with its own "Export SVG / PNG" (site/plot_export.js, as in step 4)
    for (const [kind, svgText] of /** @type {const} */ ([["calibration", drawn.calibration_svg], ["cost", drawn.cost_svg]])) {
      const one = h("div", null, { class: "compare-plot", "data-plot": kind });
      one.append(plotSvg(svgText));
      addExport(one, `${kind}-${fileStem(result.names[i])}`);
      figure.append(one);
    }
    plots.append(figure);
  });
  const shared = h("p", "The plots share their axes: a point at the same place means the same numbers in every run.", { class: "muted" });
  // what `python -m pyapp compare` says: its refusal first, then the lines it prints with
  // --describe-anyway (pyapp/predict/compare.py: refusal, lead_lines), then the tables
  const said = [
    ...(result.refusal ? [h("p", result.refusal, { class: "compare-refusal incorrect" })] : []),
    ...(result.lines ?? []).map((line) => h("p", line, { class: line === result.disclaimer ? "compare-line notice" : line.startsWith("WARNING") || line.startsWith("NOT POOLED") || line.startsWith("DESCRIBED") ? "compare-line incorrect" : "compare-line" })),
  ];
  view.replaceChildren(...said, lead, all, shared, plots);
}

/** @param {{ request: RequestFunction, experiment: ExperimentHandle }} parts */
export function setupViewer({ request, experiment }) {
  const status = $("#open-status");

  // `source`: "file" (picked or dropped) or "browser" (a run stored here: site/runs_panel.js)
  /** @param {Iterable<FileLike>} files @param {string} [source] */
  async function open(files, source = "file") {
    const read = await readFiles(files);
    const traces = read.filter((f) => f.kind === TRACE_KIND);
    const predictions = read.filter((f) => f.kind === PREDICTIONS_KIND);
    const other = read.filter((f) => f.kind !== TRACE_KIND && f.kind !== PREDICTIONS_KIND);
    clearOpened(experiment);
    const broken = read.filter((f) => !f.json);
    if (broken.length) {
      status.textContent = `Cannot open ${broken.map((f) => f.name).join(", ")}: not valid JSON.`;
      return;
    }
    if (traces.length !== 1 || predictions.length > 1 || other.length) {
      status.textContent =
        `Open one trace.json, and optionally its predictions.json (got ${traces.length} trace(s), ` +
        `${predictions.length} predictions document(s)${other.length ? `, and ${other.map((f) => f.name).join(", ")} which is neither` : ""}).`;
      return;
    }
    status.textContent = `Re-deriving ${traces[0].name}${predictions.length ? ` and ${predictions[0].name}` : ""} in this page's Python…`;
    let result;
    try {
      result = await request("trace_open", { trace_json: traces[0].text, predictions_json: predictions[0]?.text ?? null }, 600_000);
    } catch (error) {
      status.textContent = `Cannot open ${traces[0].name}: ${messageOf(error)}`;
      return;
    }
    const trace = /** @type {Trace} */ (JSON.parse(traces[0].text)); // it re-derived in Python (trace_open)
    const view = $("#open-view");
    view.replaceChildren(
      h("h3", `Opened: ${traces[0].name}${predictions.length ? ` + ${predictions[0].name}` : ""}`),
      h("p", `Evidence: ${evidenceLabel(result.evidence)}.`, { class: result.evidence === "model" ? "" : "fixture-label" }),
      ...verificationView(result),
    );
    view.hidden = false;
    // the run itself is drawn in step 4, as a live run: its provenance, interruptions and
    // journal under the viewing banner, its results by the experiment's renderers
    $("#viewing-details").replaceChildren(
      h("h3", "Provenance, interruptions and journal of the opened run"),
      provenanceView(trace, result.evidence),
      interruptionsView(trace),
      journalView(trace),
    );
    experiment.showOpened({
      name: traces[0].name,
      evidence: result.evidence,
      headerJson: result.header_json,
      trialsJson: result.trials_json,
      predictionsJson: result.predictions_json,
      plots: result.plots ?? null,
      corrections: result.corrections,
      source,
      mismatches: mismatchesOf(result),
      traceText: traces[0].text,
    });
    stepVerdict(result, traces[0].name, mismatchesOf(result));
    status.textContent = `${traces[0].name}: ${result.summary}. Its results are shown in step 4.`;
  }

  /** @param {Iterable<FileLike>} files */
  async function compare(files) {
    const read = await readFiles(files);
    const docs = read.filter((f) => f.kind === PREDICTIONS_KIND);
    const traces = read.filter((f) => f.kind === TRACE_KIND);
    const cstatus = $("#compare-status");
    if (!docs.length || docs.length + traces.length !== read.length) {
      cstatus.textContent = "Compare takes predictions.json files (one per finished run), each with its trace.json if you have it.";
      return;
    }
    // a run is its predictions and its trace (matched by run id): Python checks the task set
    // against the trace; a predictions document alone is said to have an unverified task set
    /** @param {ReadFile} d */
    const traceOf = (d) => traces.find((t) => t.runId !== null && t.runId === d.runId)?.text ?? null;
    let result;
    try {
      result = await request("compare_runs", { runs: docs.map((d) => ({ name: d.name, predictions_json: d.text, trace_json: traceOf(d) })) });
    } catch (error) {
      cstatus.textContent = `Cannot compare: ${messageOf(error)}`;
      return;
    }
    drawComparison(result);
    $("#compare-view").hidden = false;
    cstatus.textContent = `${docs.length} run(s) side by side.`;
  }

  /** @param {Iterable<FileLike>} files @param {string} [source] */
  const opening = (files, source = "file") => open(files, source).catch((error) => (status.textContent = messageOf(error)));
  /** @param {Iterable<FileLike>} files */
  const comparing = (files) => compare(files).catch((error) => ($("#compare-status").textContent = messageOf(error)));
  dropZone($("#open-drop"), $("#open-files", HTMLInputElement), opening);
  dropZone($("#compare-drop"), $("#compare-files", HTMLInputElement), comparing);
  // site/runs_panel.js shows and compares stored runs through the same paths
  return { open: opening, compare: comparing };
}
