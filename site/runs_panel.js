// @ts-check
// "Runs stored in this browser" (step 4): every sweep IndexedDB holds (site/store.js), finished
// or not, listed with its model, seed, calibration preset, evidence and when it was last
// written; each can be shown (re-derived by this page's Python and drawn in step 4 as an
// opened trace is: site/viewer.js), downloaded, reported (the code of `python -m pyapp
// report`), compared with others (Compare runs) or deleted. Nothing leaves this browser.

import { $, downloadJson, evidenceLabel, h } from "./dom.js";
import { PRESETS } from "./lab_protocol.js";
import { messageOf } from "./common/errors.js";

/** @import { RequestFunction, TaskParams } from "./lab_types.js" */
/** @import { ExperimentHandle } from "./experiment.js" */
/** @import { SweepStatus } from "./store.js" */
/** @import { FileLike, setupViewer } from "./viewer.js" */

/** @typedef {(record: SweepStatus) => Promise<unknown>} Action */
/** @typedef {"show" | "download" | "predictions" | "receipt" | "resume" | "report" | "delete"} ActionName */

// The calibration preset a sweep's task parameters are (a preset's overrides all match; the
// preset with the most overrides first, so a ladder's rung is not taken for the
// calibration-300 profile it shares), or "custom" with its size; older status records carry
// no parameters ("—").
/** @param {TaskParams | null | undefined} params */
export function presetOf(params) {
  if (!params) return "—";
  /** @param {unknown} a @param {unknown} b */
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const bySpecificity = Object.entries(PRESETS).sort((a, b) => Object.keys(b[1]).length - Object.keys(a[1]).length);
  for (const [name, overrides] of bySpecificity) {
    /** @type {Record<string, unknown>} */
    const wanted = overrides;
    const keys = Object.keys(wanted);
    if (keys.length && keys.every((key) => same(Reflect.get(params, key), wanted[key]))) return name;
  }
  return params.primitives_per_op === 2 ? "design" : `custom (${params.primitives_per_op} per op)`;
}

// The file name of a download: what it is, its evidence, the run (trace-fixture-<run id>.json).
/** @param {string} kind @param {string | null | undefined} evidence @param {string} runId @param {string} [extension] */
export function fileName(kind, evidence, runId, extension = "json") {
  return `${kind}-${evidence ?? "control"}-${runId}.${extension}`;
}

// One action button of a stored run; a failure is said in the panel's status line.
/** @param {string} text @param {string} label @param {Action} work @param {SweepStatus} record @param {HTMLElement} note */
function actionButton(text, label, work, record, note) {
  const b = h("button", text, { type: "button", "aria-label": `${label} ${record.run_id.slice(0, 8)}` });
  b.addEventListener("click", () =>
    work(record).catch((error) => {
      note.textContent = `${text} failed: ${messageOf(error)}`;
    }),
  );
  return b;
}

// One row of the stored runs table: the run (with its compare box), what it is, its actions.
/** @param {SweepStatus} record @param {Record<ActionName, Action>} actions @param {HTMLElement} note */
function runRow(record, actions, note) {
  const tr = h("tr");
  tr.dataset.runId = record.run_id;
  const box = h("input", null, { type: "checkbox", class: "compare-run", value: record.run_id, "aria-label": `Compare run ${record.run_id.slice(0, 8)}` });
  const first = h("th", null, { scope: "row" });
  first.append(box, ` ${record.run_id.slice(0, 8)}`);
  tr.append(first);
  const state = record.finished ? "finished" : `unfinished (${record.trials} trials)`;
  const cells = [
    `${record.model_id ?? "—"}${record.revision ? ` @ ${String(record.revision).slice(0, 12)}` : ""}`,
    record.seed ?? "—",
    presetOf(record.task_params),
    record.evidence ? evidenceLabel(record.evidence) : "—",
    record.updated_at ? record.updated_at.replace("T", " ").slice(0, 19) + " UTC" : "—",
    state,
  ];
  for (const text of cells) tr.append(h("td", String(text)));
  const td = h("td", null, { class: "actions" });
  if (!record.finished) td.append(actionButton("Resume", "Resume run", actions.resume, record, note));
  td.append(
    actionButton("Show", "Show run", actions.show, record, note),
    actionButton("Download trace", "Download trace of run", actions.download, record, note),
    actionButton("Download predictions", "Download predictions of run", actions.predictions, record, note),
    actionButton("Download receipt", "Download receipt of run", actions.receipt, record, note),
    actionButton("Report", "Download the report of run", actions.report, record, note),
    actionButton("Delete", "Delete run", actions.delete, record, note),
  );
  tr.append(td);
  return tr;
}

/** @param {{ request: RequestFunction, experiment: ExperimentHandle, viewer: ReturnType<typeof setupViewer> }} parts */
export function setupRuns({ request, experiment, viewer }) {
  const store = experiment.store;
  const view = $("#stored-runs");
  const note = $("#stored-runs-status");

  // The stored sweep as one trace document: Python assembles it from the stored texts (the one
  // assembly, pyapp/records/stored.py) and writes it (1.0 stays 1.0).
  /** @param {SweepStatus} record @returns {Promise<string>} */
  async function traceText(record) {
    const texts = await store.storedTexts(record.run_id);
    if (!texts) throw new Error(`run ${record.run_id.slice(0, 8)} has no stored header`);
    return String((await request("stored_trace", texts, 600_000)).trace_json);
  }

  /** @param {string} name @param {string} text @returns {FileLike} */
  const asFile = (name, text) => ({ name, text: async () => text });

  /** @type {Record<ActionName, Action>} */
  const actions = {
    show: async (record) => {
      await viewer.open([asFile(`stored run ${record.run_id.slice(0, 8)}`, await traceText(record))], "browser");
      $("#step-results").scrollIntoView();
    },
    download: async (record) => downloadJson(await traceText(record), fileName("trace", record.evidence, record.run_id)),
    // the predictions derived from its trace by this page's Python (what `score` writes)
    predictions: async (record) => {
      const opened = await request("trace_open", { trace_json: await traceText(record), predictions_json: null }, 600_000);
      if (!opened.predictions_json) throw new Error(`run ${record.run_id.slice(0, 8)} has no predictions yet (nothing frozen)`);
      downloadJson(opened.predictions_json, fileName("predictions", record.evidence, record.run_id));
      note.textContent = `Predictions of ${record.run_id.slice(0, 8)} saved, derived from its stored trace.`;
    },
    // the receipt made at its freeze when this browser kept it; else made again from its trace,
    // which after the held-out phase proves nothing about timing, and says so
    receipt: async (record) => {
      const short = record.run_id.slice(0, 8);
      if (record.receipt_json) {
        downloadJson(record.receipt_json, fileName("receipt", record.evidence, record.run_id));
        note.textContent = `Receipt of ${short} saved, as made at its freeze.`;
        return;
      }
      const remade = await request("receipt_remake", { trace_json: await traceText(record) }, 600_000);
      downloadJson(remade.receipt_json, remade.name);
      note.textContent = remade.after_heldout
        ? `Receipt of ${short} RE-MADE AFTER ITS HELD-OUT PHASE (saved as ${remade.name}): the one made at the freeze was not kept here, and this one proves nothing about timing.`
        : `Receipt of ${short} made again from its trace (saved as ${remade.name}); no held-out trial was observed yet.`;
    },
    resume: async (record) => {
      if (experiment.busy()) throw new Error("a request is in progress: wait for it or cancel it");
      await experiment.resumeStored(record);
    },
    report: async (record) => {
      note.textContent = `Writing the report of ${record.run_id.slice(0, 8)} in this page's Python…`;
      const report = await request("run_report", { trace_json: await traceText(record) }, 600_000);
      const blob = new Blob([report.html], { type: "text/html" });
      const link = h("a", null, { href: URL.createObjectURL(blob), download: report.name });
      document.body.append(link);
      link.click();
      link.remove();
      note.textContent = `Report of ${record.run_id.slice(0, 8)} saved as ${report.name}.`;
    },
    delete: async (record) => {
      if (experiment.liveRunId() === record.run_id && experiment.busy()) throw new Error("this sweep is running: cancel it first");
      if (!window.confirm(`Delete the stored run ${record.run_id.slice(0, 8)} (${record.model_id}, ${record.trials} trials) from this browser? The ledger of observed held-out tasks is kept.`)) return;
      await store.deleteSweep(record.run_id);
      note.textContent = `Deleted run ${record.run_id.slice(0, 8)} from this browser.`;
      await refresh();
    },
  };

  // Compare the checked runs: each one's predictions derived from its trace by this page's
  // Python (trace_open), then laid side by side by Compare runs.
  async function compareChecked() {
    const checked = [...view.querySelectorAll("input.compare-run:checked")].map((box) => (box instanceof HTMLInputElement ? box.value : ""));
    const records = (await store.sweeps()).filter((r) => checked.includes(r.run_id));
    if (records.length < 2) {
      note.textContent = "Check two or more runs to compare.";
      return;
    }
    const files = [];
    for (const record of records) {
      const trace = await traceText(record);
      const opened = await request("trace_open", { trace_json: trace, predictions_json: null }, 600_000);
      if (!opened.predictions_json) {
        note.textContent = `Run ${record.run_id.slice(0, 8)} has no scores to compare (not frozen and observed yet).`;
        return;
      }
      // the run with its trace: Compare checks the task set against it
      files.push(asFile(fileName("predictions", record.evidence, record.run_id), opened.predictions_json));
      files.push(asFile(fileName("trace", record.evidence, record.run_id), trace));
    }
    await viewer.compare(files);
    $("#compare-runs").scrollIntoView();
    note.textContent = `${records.length} stored runs compared under Compare runs.`;
  }

  async function refresh() {
    const records = await store.sweeps();
    if (!records.length) {
      view.replaceChildren(h("p", "No runs stored in this browser.", { class: "muted" }));
      return records;
    }
    const t = h("table", null, { id: "stored-runs-table" });
    t.append(h("caption", `${records.length} run(s) stored in this browser (from this browser's sweeps), newest first`));
    const head = t.createTHead().insertRow();
    for (const name of ["Run (check to compare)", "Model", "Seed", "Calibration set", "Evidence", "Last written", "State", "Actions"]) head.append(h("th", name, { scope: "col" }));
    const body = t.createTBody();
    for (const record of records) body.append(runRow(record, actions, note));
    const wrap = h("div", null, { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Runs stored in this browser" });
    wrap.append(t);
    const compare = h("button", "Compare the checked runs", { type: "button", id: "stored-runs-compare" });
    compare.addEventListener("click", () => compareChecked().catch((error) => (note.textContent = `Compare failed: ${messageOf(error)}`)));
    const actionsLine = h("p", null, { class: "actions" });
    view.replaceChildren(wrap, actionsLine);
    actionsLine.append(compare);
    return records;
  }

  experiment.onStoredChange(() => refresh().catch((error) => console.error("[composition-lab] listing stored runs failed", error)));
  return { refresh };
}
