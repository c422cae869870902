// @ts-check
// The experiment controller's drawing (main thread): the progress bar and ETA, the buttons'
// state, the results caption and tables, the predictions shown at the freeze, a trace opened
// from disk (site/viewer.js) drawn in place of the live sweep, and the resume prompt. Between
// ExperimentState (site/experiment_state.js) and Experiment (site/experiment.js), which holds
// the requests to Python and the API.

import { $, evidenceLabel, meaningOf } from "./dom.js";
import { CONTROL_LABEL } from "./lab_protocol.js";
import { renderFreeze, renderPredictions, renderScores } from "./profile_views.js";
import { showRecord } from "./record_view.js";
import { renderReceipt } from "./receipt_view.js";
import { Eta, etaRange, etaText } from "./eta.js";
import { ExperimentState, withStateAware } from "./experiment_state.js";
import { markNode, markNotRederived, renderAnswer } from "./results_answer.js";

/** @import { CorrectedField, HeldoutPredictions, PredictionsDocument, RunPlots, Trial } from "./lab_types.js" */
/** @import { CorrectedField as Correction } from "./lab_types.js" */

/**
 * A run read from disk, as site/viewer.js hands it over (Python's texts, re-derived).
 * @typedef {object} Opened
 * @property {string} name
 * @property {string} evidence Python's decision
 * @property {string} headerJson
 * @property {string[]} trialsJson
 * @property {string | null} predictionsJson
 * @property {RunPlots | null} [plots]
 * @property {CorrectedField[]} [corrections]
 * @property {string} [source] "file" (opened from disk) or "browser" (a stored run shown)
 * @property {string[]} [mismatches] what re-deriving it found
 * @property {string | null} [traceText] the trace as opened
 */

/** @param {string} selector */
const button = (selector) => $(selector, HTMLButtonElement);

export class ExperimentView extends ExperimentState {
  // ---- progress ------------------------------------------------------------------------

  // The counter is the sweep's (trials observed / all its trials); the ETA covers the phases
  // this run does, estimated per phase and condition (site/eta.js).
  /** @param {string} phase */
  startProgress(phase) {
    const s = this.state;
    if (!s) return;
    const p = this.progress;
    this.countFromState();
    const phases = phase === "all" ? ["measure", "heldout"] : [phase];
    p.eta = new Eta((s.left ?? []).filter((group) => phases.includes(group.phase)), this.timedTrials());
    p.started = performance.now();
    p.current = "";
    clearInterval(p.timer);
    p.timer = setInterval(() => this.renderProgress(), 500);
    this.renderProgress();
  }

  // The sweep's trials already observed (an earlier run, an earlier session before a resume) as
  // the ETA counts them: [phase, condition, ms, model calls, answer tokens] (site/eta.js; the
  // tokens as Python's `answer_tokens` counts them before a trial: a model-only answer's
  // characters, a chain's steps' exact values' — those of the steps it made, on their actual
  // operands, which are a completed route's planned ones — none for a program or the control).
  timedTrials() {
    /** @type {[string, string, number, number, number | null][]} */
    const done = [];
    for (const text of this.trials.list()) {
      const t = /** @type {Trial} */ (JSON.parse(text));
      const phase = this.tasks.get(t.task_id)?.split === "heldout" ? "heldout" : "measure";
      const ms = Date.parse(t.ended_at ?? "") - Date.parse(t.started_at ?? "");
      const calls = t.chain ? t.chain.planned_calls : t.condition === "supplied-program" ? 0 : 1;
      const size = t.chain
        ? t.chain.calls.reduce((n, call) => n + String(call.local_expected).length, 0)
        : t.condition === "model-only"
          ? String(t.expected).length
          : null;
      if (Number.isFinite(ms)) done.push([phase, t.condition, ms, calls, size]);
    }
    return done;
  }

  // The counter from Python's state: observed trials of all the sweep's trials.
  countFromState() {
    const s = this.state;
    this.progress.done = s ? s.trials : 0;
    this.progress.total = s ? s.trials + s.measure_left + s.heldout_left : 0;
  }

  stopProgress() {
    clearInterval(this.progress.timer);
    this.progress.timer = undefined;
    this.progress.current = "";
    this.renderProgress();
  }

  // Python froze the profiles inside a run of phase "all": its predictions go on the page now,
  // before the first held-out result (Python is busy: the full view follows the run).
  // The freeze receipt is drawn here too, before Python starts the first held-out trial.
  /** @param {HeldoutPredictions[]} predictions @param {string | null} [receiptJson] */
  showFrozen(predictions, receiptJson = null) {
    this.shownPredictions = new Map(predictions.map((p) => [p.condition, withStateAware(p)]));
    this.receiptJson = receiptJson;
    renderReceipt(receiptJson);
    this.predictionRows = renderPredictions(this.shownPredictions, null, this.notEvidence());
    this.status("Frozen; running held-out…");
  }

  // ---- drawing ---------------------------------------------------------------------------

  renderProgress() {
    const p = this.progress;
    const bar = $("#sweep-bar", HTMLProgressElement);
    bar.max = Math.max(p.total, 1);
    bar.value = p.done;
    $("#sweep-count").textContent = `${p.done} / ${p.total} trials`;
    $("#sweep-current").textContent = p.current ? `now: ${p.current}` : "";
    if (!p.timer) {
      $("#sweep-elapsed").textContent = "";
      $("#sweep-eta").textContent = "";
      return;
    }
    const elapsed = (performance.now() - p.started) / 1000;
    $("#sweep-elapsed").textContent = `elapsed ${elapsed.toFixed(0)} s`;
    const estimate = p.eta ? p.eta.estimate(performance.now()) : null;
    $("#sweep-eta").textContent = p.eta ? etaText(estimate) : "";
    $("#sweep-eta").title = p.eta ? etaRange(estimate) : "";
  }

  // A resumed sweep waited for its model: once it is loaded the status says what to do now.
  modelArrived() {
    const m = this.model();
    if (!this.waitingFor || !m.loaded || this.busy || !this.state) return;
    const waited = this.stopWaiting();
    const s = this.state;
    this.status(
      `${m.model_id} loaded: press Run to continue sweep ${s.run_id.slice(0, 8)} ` +
        `(${s.trials} / ${s.trials + s.measure_left + s.heldout_left} trials observed)` +
        `${m.model_id === waited ? "" : `; note: the sweep was recorded with ${waited}`}.`,
    );
  }

  refreshControls() {
    const focused = document.activeElement; // kept: a button disabled below must not drop focus to <body>
    this.drawControls();
    if (focused instanceof HTMLButtonElement && focused.disabled && this.section.contains(focused)) {
      const cancel = button("#sweep-cancel");
      (cancel.disabled ? $("#experiment-status") : cancel).focus();
    }
  }

  drawControls() {
    const m = this.model();
    const loaded = m.loaded;
    const idle = !this.busy;
    const state = this.state;
    button("#sweep-run-all").disabled = !(loaded && idle);
    button("#sweep-measure").disabled = !(loaded && idle);
    button("#sweep-freeze").disabled = !(idle && state?.can_freeze);
    button("#sweep-heldout").disabled = !(loaded && idle && state?.can_run_heldout);
    button("#sweep-new").disabled = !(loaded && idle);
    $("#sweep-run-through", HTMLInputElement).disabled = !idle;
    button("#sweep-cancel").disabled = this.busy !== "run";
    for (const box of document.querySelectorAll('input[name="condition"]')) {
      if (box instanceof HTMLInputElement) box.disabled = !(loaded && idle);
    }
    $("#chain-protocol", HTMLSelectElement).disabled = !(loaded && idle);
    $("#sweep-sealed", HTMLInputElement).disabled = !(loaded && idle);
    button("#journal-generate").disabled = !(loaded && idle) || Boolean(m.synthetic); // a synthetic model answers trials only
    button("#download-sweep-trace").disabled = !(idle && this.header);
    button("#download-predictions").disabled = !(idle && this.predictionsDoc);
    button("#download-receipt-results").disabled = !(idle && this.receiptJson);
    button("#resume-accept").disabled = !idle;
    const viewing = $("#viewing-banner");
    viewing.hidden = !this.viewing;
    // nothing of another run in a shown run's view: the live sweep's receipt and progress wait
    $("#receipt-view").hidden = Boolean(this.viewing) || !this.receiptJson;
    $("#sweep-progress").hidden = Boolean(this.viewing);
    if (this.viewing) {
      // the shown run's own files: the trace as opened, the predictions derived from it
      const texts = this.viewing.texts;
      button("#download-sweep-trace").disabled = !texts?.trace;
      button("#download-predictions").disabled = !texts?.predictions;
      const from = this.viewing.source === "browser" ? "stored in this browser" : `opened from a file (${this.viewing.name})`;
      $("#viewing-text").textContent = `Showing run ${this.viewing.runId}, ${from} (${this.viewing.label}) — not the live sweep.`;
      for (const id of ["#sweep-measure", "#sweep-freeze", "#sweep-heldout", "#download-receipt-results"]) button(id).disabled = true;
    }
    const evidence = $("#experiment-evidence");
    const label = this.header || m.loaded ? this.notEvidence() : null;
    evidence.hidden = !label;
    const kind = this.viewing ? this.viewing.evidence : (this.header?.model?.evidence ?? m.evidence);
    evidence.textContent = label ? `This sweep is labelled "${label}": every number below is ${meaningOf(kind)}.` : "";
    $("#experiment-hint").textContent = loaded
      ? `Model: ${m.model_id}${m.evidence !== "model" ? ` (${evidenceLabel(m.evidence)})` : ""}. Seed, calibration set and conditions from step 2.`
      : "Load a model above first: the bundled reference subject (locally trained on primitives only) is the suggested first run offline; the test fixture works too, but is not model evidence.";
  }

  resultsCaption() {
    if (!this.header) return "No trials yet.";
    const { trials, correct, incorrect, failed } = this.summary ?? { trials: 0, correct: 0, incorrect: 0, failed: 0 };
    const notEvidence = this.notEvidence();
    const label = notEvidence ? ` — ${notEvidence}` : "";
    // the chain protocol the sweep runs under (trace/4's run.terms; older traces: the design's)
    const protocol = this.header.run.terms?.chain_protocol ?? "chain-design/1";
    const sealed = this.header.run.terms?.sealed ? ", sealed: held-out tasks drawn after the freeze" : "";
    return `Sweep ${this.header.run.run_id.slice(0, 8)} (chain protocol ${protocol}${sealed}): ${trials} trials: ${correct} correct, ${incorrect} wrong (a result, not the answer), ${failed} failed (no result)${label}. Supplied-program rows: ${CONTROL_LABEL}.`;
  }

  /** The chain protocol step 2 chose (`design` or `extended`), sent with `sweep_start`. */
  chosenChainProtocol() {
    return $("#chain-protocol", HTMLSelectElement).value;
  }

  /** @param {string} trialId */
  openRecord(trialId) {
    const trial = this.trials.get(trialId);
    if (!trial) return;
    showRecord(trial, this.notEvidence());
    const mismatches = this.viewing?.mismatches ?? [];
    if (mismatches.length) $("#record-body").prepend(markNode(mismatches.length));
  }

  clearTables() {
    this.toDraw = [];
    this.results.reset();
    $("#predictions-table tbody").replaceChildren();
    this.predictionRows = new Map();
  }

  renderAll() {
    $("#sweep-results-caption").textContent = this.resultsCaption();
    renderFreeze(this.predictionsDoc, this.notEvidence());
    const doc = this.predictionsDoc;
    if (!this.shownPredictions.size && doc) {
      this.shownPredictions = new Map(
        doc.conditions.map((c) => [c.frozen.profile.condition, withStateAware({ predictions: c.predictions, state_aware: c.state_aware?.predictions })]),
      );
    }
    this.predictionRows = renderPredictions(this.shownPredictions, this.predictionsDoc, this.notEvidence());
    renderScores(this.predictionsDoc, this.notEvidence(), this.plots);
    const names = { evidence: this.header?.model?.evidence ?? "control", runId: this.header?.run.run_id ?? "none" };
    renderAnswer(this.plots, names);
    const mismatches = this.viewing?.mismatches ?? [];
    if (mismatches.length) markNotRederived(mismatches.length);
    this.renderProgress();
    this.refreshControls();
  }

  // ---- an opened trace (site/viewer.js: "Open a trace") -----------------------------------
  // A finished run read from disk, drawn by the same renderers as the live run from the texts
  // Python re-derived it from, under the evidence Python decided it is (`evidence`: never
  // model evidence for a fixture or a synthetic model). The live sweep's copy is kept aside
  // and drawn again on close.

  // `source`: where the run came from ("file": opened from disk; "browser": stored here);
  // `mismatches`: what re-deriving it found (marked on everything drawn of it when any);
  // `traceText`: the trace as opened (what its download saves).
  /** @param {Opened} opened */
  showOpened({ name, evidence, headerJson, trialsJson, predictionsJson, plots = null, corrections = [], source = "file", mismatches = [], traceText = null }) {
    this.requireIdle("open a trace");
    /** @type {Map<string, Correction[]>} */
    const corrected = new Map();
    for (const c of corrections) corrected.set(c.trial_id, [...(corrected.get(c.trial_id) ?? []), c]);
    const predictions = predictionsJson ? /** @type {PredictionsDocument} */ (JSON.parse(predictionsJson)) : null;
    const texts = { trace: traceText, predictions: predictionsJson };
    const shown = { name, evidence, label: evidenceLabel(evidence), corrections: corrected, source, mismatches, texts };
    this.useOpened(shown, headerJson, trialsJson, predictions, plots);
    if (this.viewing) this.viewing.runId = this.sweepHeader().run.run_id;
    this.renderAll();
    this.setData("viewing");
  }

  closeOpened() {
    const live = this.restoreLive();
    if (!live) return;
    this.results.setAll(live.rows);
    this.renderAll();
    this.setData(live.data ?? "idle");
  }

  // ---- the resume prompt -----------------------------------------------------------------

  async offerResume() {
    this.offered = await this.store.latestUnfinished();
    const offered = this.offered;
    if (!offered || (this.header && offered.run_id === this.header.run.run_id)) {
      this.hideResumePrompt();
      return;
    }
    const fixture = offered.evidence && offered.evidence !== "model" ? ` (${evidenceLabel(offered.evidence)})` : "";
    $("#resume-text").textContent =
      `An unfinished sweep is stored in this browser: ${offered.run_id.slice(0, 8)}, ` +
      `${offered.model_id}${fixture}, seed ${offered.seed}, ${offered.trials} trials observed` +
      `${offered.in_flight ? `; ${offered.in_flight} was in flight (it will be recorded as interrupted)` : ""}. ` +
      `Resume continues with the next unobserved trial${offered.phase && offered.evidence !== "synthetic" ? ` (load ${offered.model_id} first to continue running)` : ""}` +
      `${offered.evidence === "synthetic" ? ", with its synthetic model (nothing to load)" : ""}.`;
    $("#resume-prompt").hidden = false;
  }

  hideResumePrompt() {
    this.offered = null;
    $("#resume-prompt").hidden = true;
  }
}
