// The Experiment and Journal sections (main thread): the controller. Python owns the protocol
// (pyapp/browser/session.py: sweep_start, sweep_resume, sweep_run, sweep_freeze, sweep_state,
// sweep_header, sweep_trace, sweep_predictions, journal_generate); this file sends those
// requests, stores what comes back in IndexedDB (site/store.js) and hands it to the
// renderers (results_table.js, profile_views.js, record_view.js). It answers the two
// functions Python calls synchronously during a run:
//
//   xworker.sync.session_event(json)  -> true   trial_start / trial_done / trial_interrupted / frozen
//                                               (awaited: the trial is stored before the next one starts)
//   xworker.sync.cancel_requested()   -> bool   the Cancel flag, polled before every model call
//
// A trial event carries that trial only, as Python's JSON text (`trial_json`): the page stores
// the text as it is (one IndexedDB record per trial, beside the sweep's header) and parses it
// only to draw one table row. The whole trace is assembled on demand: a download asks Python
// for it (`sweep_trace`, saved as Python wrote it), a resume hands the stored texts back.
//
// The state API (window.lab.experiment; docs/page.md), every method async, plain JSON:
//   start({seed, params?, conditions})  -> state
//   run(phase)                          -> {state, cancelled, notice}   phase: measure | heldout | all
//                                          (Python's RunEnded; state.paused names a pause's cause)
//   freeze()                            -> {frozen, predictions, header_json, state}
//   state()  trace()  predictions()     -> state | trace document | predictions document
//   text(kind)                          -> Python's JSON text of "header" | "trace" | "predictions"
//   resume()                            -> state | null  (the latest unfinished stored sweep)
//   resumeFrom({header_json, trials_json}, inFlight) -> state
//   persisted()                         -> {trace, in_flight, run_id, phase, finished} | null
//   cancel()                            -> {cancelling}
//   onEvent(callback(event, text))      -> unsubscribe function (text: the event as Python sent it)
//   journal(prompt)                     -> {entry, journal}     (exploration only)
//   ledger()                            -> [{key, model_id, revision, condition, task_ids}]
//   clearLedger({confirmed})            -> {ledger}  the ledger alone, after a confirm() that says
//                                                    what is lost (confirmed: true skips it)
//   clearStored()                       -> {sweeps, ledger: 0, model_cache}  (the ledger is kept; model_cache:
//                                                                  whether cached model files were deleted)
//
// #experiment carries data-state = idle | running | measured | frozen | done | cancelled |
// paused | error, or viewing while a trace opened from disk is shown (site/viewer.js). `paused`:
// three infrastructure failures in a row (worker, load, bridge...) stopped the sweep; nothing
// was scored; the same buttons resume it.
//
// "all" is one sweep_run request: Python runs measure → freeze → held-out and announces the
// freeze with a `frozen` event carrying the predictions, which the page shows at once — before
// the first held-out result.

import { downloadJson, evidenceLabel, meaningOf, notEvidenceLabel } from "./dom.js";
import { SweepStore } from "./store.js";
import { CONTROL_LABEL, EVENT_TYPES } from "./lab_protocol.js";
import { ResultsTable, rowOf } from "./results_table.js";
import { addJournalEntry, fillObservation, renderFreeze, renderPredictions, renderScores } from "./profile_views.js";
import { showRecord } from "./record_view.js";
import { renderReceipt } from "./receipt_view.js";
import { Eta, etaText } from "./eta.js";
import { fileName } from "./runs_panel.js";

const $ = (selector) => document.querySelector(selector);
const RUN_TIMEOUT_MS = 2_000_000_000; // a sweep of a real model can take hours; Cancel stops it
// transformers.js keeps downloaded model files in this Cache Storage entry.
const MODEL_CACHE = "transformers-cache";
const LEDGER_WARNING =
  "Clear the ledger of observed held-out tasks? This browser then forgets which held-out tasks it has " +
  "already observed for each model, so a later freeze of those models is marked CONFIRMATORY although " +
  "the tasks were seen. This cannot be undone.";

// The trials of one sweep as the page holds them: Python's text per trial. Adding a trial is
// constant work. The counts the caption shows are Python's (`summary` of each trial_done event
// and of the state), never counted here.
class Trials {
  constructor() {
    this.texts = new Map(); // trial id -> JSON text
  }

  add(trial, text) {
    this.texts.set(trial.trial_id, text);
  }

  get size() {
    return this.texts.size;
  }

  get(trialId) {
    const text = this.texts.get(trialId);
    return text === undefined ? null : JSON.parse(text);
  }

  // The whole trace, assembled here (only while Python is busy: otherwise Python answers),
  // with Python's latest counts.
  assemble(header, summary) {
    return { ...header, trials: [...this.texts.values()].map((text) => JSON.parse(text)), summary };
  }
}

// Both frozen predictors' probabilities for one condition: each product prediction with the
// state-aware one beside it (`state_aware_probability`; null where there is none).
function withStateAware({ predictions, state_aware: stateAware }) {
  return predictions.map((p, i) => ({ ...p, state_aware_probability: stateAware?.[i]?.probability ?? null }));
}

export function setupExperiment({ request, models, environment, currentSeed, currentParams }) {
  const controller = new Experiment({ request, models, environment, currentSeed, currentParams });
  controller.wire();
  return {
    api: controller.api(),
    sessionEvent: (json) => controller.sessionEvent(json),
    // site/runs_panel.js: the runs IndexedDB holds
    store: controller.store,
    liveRunId: () => controller.header?.run.run_id ?? null,
    busy: () => Boolean(controller.busy),
    onStoredChange: (callback) => controller.storedListeners.add(callback),
    cancelRequested: () => controller.cancelFlag,
    // site/viewer.js ("Open a trace"): draw a run read from disk with these renderers
    showOpened: (opened) => controller.showOpened(opened),
    closeOpened: () => controller.closeOpened(),
    // called once Python is ready: offer to resume a stored unfinished sweep
    ready: () =>
      controller
        .offerResume()
        .then(() => controller.storedChanged())
        .catch((error) => console.error("[composition-lab] reading IndexedDB failed", error)),
  };
}

class Experiment {
  constructor({ request, models, environment, currentSeed, currentParams = () => undefined }) {
    this.request = request;
    this.models = models;
    this.environment = environment;
    this.currentSeed = currentSeed;
    this.currentParams = currentParams;
    this.section = $("#experiment");
    this.store = new SweepStore();
    this.listeners = new Set();
    this.storedListeners = new Set(); // told when the stored runs change (site/runs_panel.js)
    this.results = new ResultsTable({ table: $("#sweep-results"), pager: $("#sweep-results-pager"), onOpen: (id) => this.openRecord(id) });
    this.receiptJson = null; // the latest freeze receipt (Python's JSON text), shown at the freeze
    this.state = null; // Python's sweep state (pyapp.browser.session.Session.state)
    this.header = null; // the sweep's header (the trace without its trials), parsed
    this.headerJson = null; // ... and as Python wrote it
    this.tasks = new Map(); // task id -> task record of the header
    this.trials = new Trials();
    this.summary = null; // Python's counts over the trials (state.summary, trial_done.summary)
    this.record = null; // the IndexedDB status record of the current sweep
    this.predictionsDoc = null; // the latest predictions document (after a freeze)
    this.shownPredictions = new Map(); // condition -> [Prediction] shown in the table
    this.predictionRows = new Map(); // trial id -> row of the predictions table
    this.busy = null; // the name of the request in flight ("run", "freeze", ...)
    this.cancelFlag = false;
    this.lastError = null;
    this.lastCancelled = false;
    this.progress = { done: 0, total: 0, started: 0, current: "", timer: null, eta: null };
    this.waitingFor = null; // a resumed sweep's model id, until a model is loaded
    this.offered = null; // the stored record the resume prompt offers
    this.viewing = null; // an opened trace being shown: {name, evidence, label, live: the live sweep's copy}
    // Once the page is going away (reload, tab closed), later events are the teardown's doing
    // (a generation cut off by the dying model worker): they are not stored, so the stored
    // trial_start stays in flight and is recorded as interrupted on resume.
    this.unloading = false;
    window.addEventListener("pagehide", () => (this.unloading = true));
  }

  // ---- small helpers -------------------------------------------------------------------

  setData(value) {
    this.section.dataset.state = value;
  }

  // Python decides where the protocol stands (state.stage, or paused); the page shows it.
  derivedState() {
    return this.state?.paused ? "paused" : (this.state?.stage ?? "idle");
  }

  status(text) {
    $("#experiment-status").textContent = text;
  }

  notice(text) {
    const line = $("#experiment-notice");
    line.hidden = !text;
    line.textContent = text ?? "";
  }

  showError(error) {
    this.lastError = error?.message ?? String(error);
    const line = $("#experiment-error");
    line.hidden = false;
    line.textContent = this.lastError;
    this.setData("error");
  }

  clearError() {
    this.lastError = null;
    $("#experiment-error").hidden = true;
  }

  model() {
    return this.models.state();
  }

  // The label beside every number of the sweep shown, or null for model evidence: an opened
  // trace's evidence is Python's decision (trace_open's `evidence`), a live sweep's its model's.
  notEvidence() {
    const evidence = this.viewing ? this.viewing.evidence : (this.header?.model?.evidence ?? this.model().evidence);
    return evidence ? notEvidenceLabel(evidence) : null;
  }

  requireIdle(what) {
    if (this.busy) throw new Error(`cannot ${what} while "${this.busy}" is in progress`);
  }

  requireLoaded() {
    if (!this.model().loaded) throw new Error("load a model (with consent) in the Models panel first");
  }

  async exclusive(name, work) {
    this.requireIdle(name);
    this.closeOpened(); // a sweep action returns to the live sweep
    this.busy = name;
    this.refreshControls();
    try {
      return await work();
    } finally {
      this.busy = null;
      this.refreshControls();
    }
  }

  // The stored runs changed (a sweep started, ended a run, froze, was resumed or deleted); with
  // no live sweep, the status says what is stored instead of "No sweep yet".
  async storedChanged() {
    for (const callback of this.storedListeners) callback();
    if (this.state || this.viewing) return;
    try {
      const count = (await this.store.sweeps()).length;
      if (count) this.status(`No sweep in this page yet. ${count} run(s) are stored in this browser: see "Runs stored in this browser" in step 4.`);
    } catch (error) {
      console.error("[composition-lab] reading IndexedDB failed", error);
    }
  }

  emit(event, text) {
    for (const callback of this.listeners) {
      try {
        callback(event, text);
      } catch (error) {
        console.error("[composition-lab] experiment listener failed", error);
      }
    }
  }

  // ---- persistence -----------------------------------------------------------------------

  finished() {
    return this.state?.stage === "done";
  }

  useHeader(text) {
    this.headerJson = text;
    this.header = JSON.parse(text);
    this.tasks = new Map(this.header.tasks.map((task) => [task.id, task]));
  }

  // The status record (small), plus the header text or new trial records when given.
  async persist(fields = {}, { header = false, trials = [] } = {}) {
    if (!this.header) return;
    const runId = this.header.run.run_id;
    const model = this.header.model;
    this.record = {
      run_id: runId,
      in_flight: null,
      phase: this.record?.run_id === runId ? this.record.phase : null,
      finished: this.finished(),
      model_id: model?.model_id ?? null,
      revision: model?.revision ?? null,
      evidence: model?.evidence ?? null,
      seed: this.header.run.seed,
      task_params: this.header.run.task_params, // the runs panel names the calibration preset
      created_at: this.header.run.created_at,
      trials: this.trials.size,
      summary: this.summary, // Python's counts over those trials (persisted() shows them)
      ...fields,
    };
    await this.store.putSweep(this.record, { header: header ? this.headerJson : null, trials });
  }

  // A checkpoint: Python's current header, stored.
  async checkpoint(fields = {}) {
    this.useHeader((await this.request("sweep_header")).header_json);
    await this.persist(fields, { header: true });
  }

  // Python says which trials the ledger records (trial_done.heldout_observed) and under what
  // key: the held-out task's content (heldout_content), never its id, which repeats across
  // seeds and presets. The rule is Python's (pyapp/predict/exploratory.py).
  async noteObserved(trial, content) {
    const model = this.header.model;
    if (model) await this.store.addObserved(model.model_id, model.revision, trial.condition, [content ?? trial.task_id]);
  }

  // Python's state, and the counts it carries.
  useState(state) {
    this.state = state;
    this.summary = state.summary;
  }

  async refresh({ withPredictions = true } = {}) {
    this.useState(await this.request("sweep_state"));
    this.useHeader((await this.request("sweep_header")).header_json);
    await this.loadPredictions(withPredictions && this.state.frozen.length);
    await this.persist({ phase: this.record?.phase ?? null }, { header: true });
    this.renderAll();
  }

  async loadPredictions(wanted) {
    this.predictionsDoc = wanted ? JSON.parse((await this.request("sweep_predictions")).predictions_json) : null;
  }

  // Every stored trial of a sweep (resume): one pass, one table draw.
  useTrials(texts) {
    this.trials = new Trials();
    const rows = [];
    for (const text of texts) {
      const trial = JSON.parse(text);
      this.trials.add(trial, text);
      rows.push(this.rowOf(trial));
    }
    this.results.setAll(rows);
  }

  rowOf(trial) {
    const corrected = this.viewing?.corrections?.get(trial.trial_id) ?? null;
    return rowOf(trial, { label: this.notEvidence(), split: this.tasks.get(trial.task_id)?.split, corrected });
  }

  // ---- the function Python calls after each step of a run ---------------------------------

  async sessionEvent(json) {
    if (this.unloading) return false;
    const event = JSON.parse(json);
    if (!EVENT_TYPES.includes(event.type)) throw new Error(`unknown event from Python: ${String(event.type)}`);
    if (event.type === "trial_start") {
      this.progress.current = `${event.condition} · ${event.task_id} (${event.phase})`;
      this.progress.eta?.started(event.phase, event.condition, performance.now());
      await this.persist({ in_flight: event.trial_id });
    } else if (event.type === "trial_done") {
      await this.trialDone(event);
    } else if (event.type === "trial_interrupted" || event.type === "frozen") {
      // A Cancel or an infrastructure failure (event.code) cut a trial short (Python keeps it
      // under `interruptions`, never scored, and attempts it again), or Python froze the
      // profiles: the header changed.
      this.useHeader(event.header_json);
      await this.persist({ in_flight: null }, { header: true });
      if (event.type === "frozen") this.showFrozen(event.predictions ?? [], event.receipt_json ?? null);
    }
    this.renderProgress();
    this.emit(event, json);
    return true;
  }

  async trialDone({ trial_json: text, heldout_observed, heldout_content = null, summary, phase, header_json: headerJson = null }) {
    const trial = JSON.parse(text);
    this.progress.eta?.finished(phase, trial.condition, performance.now());
    const seq = this.trials.size;
    this.trials.add(trial, text);
    this.summary = summary;
    // a reload's load record joined the hash chain before this trial: its header comes along
    if (headerJson) this.useHeader(headerJson);
    await this.persist({ in_flight: null }, { header: Boolean(headerJson), trials: [{ seq, trial_id: trial.trial_id, json: text }] });
    if (heldout_observed) await this.noteObserved(trial, heldout_content);
    this.progress.done += 1;
    this.results.add(this.rowOf(trial));
    fillObservation(this.predictionRows, trial);
    $("#sweep-results-caption").textContent = this.resultsCaption();
  }

  // ---- API: start, run, freeze, resume -------------------------------------------------

  // `previously_observed` ({condition: [task ids]}, e.g. the sweep CLI's ledger file) joins
  // what this browser's own ledger holds for the model.
  async start({ seed, params = undefined, conditions = undefined, previously_observed = undefined } = {}) {
    return this.exclusive("start", async () => {
      this.requireLoaded();
      this.clearError();
      this.notice(null);
      const provenance = this.model().provenance;
      const previously = await this.store.observedFor(provenance.model_id, provenance.revision);
      for (const [condition, ids] of Object.entries(previously_observed ?? {})) {
        previously[condition] = [...new Set([...(previously[condition] ?? []), ...ids])];
      }
      const fields = {
        seed: seed ?? this.currentSeed(),
        conditions: conditions ?? [...document.querySelectorAll('input[name="condition"]:checked')].map((box) => box.value),
        environment: this.environment(),
        previously_observed: previously,
        faults: this.models.client.faults.hooks, // injected test faults: recorded in the trace
      };
      const chosen = params ?? this.currentParams();
      if (chosen) fields.params = chosen;
      try {
        this.useState(await this.request("sweep_start", fields));
        this.useHeader((await this.request("sweep_header")).header_json);
      } catch (error) {
        this.showError(`Starting the sweep failed: ${error.message}`);
        throw error;
      }
      this.predictionsDoc = null;
      this.shownPredictions = new Map();
      this.receiptJson = null;
      renderReceipt(null);
      this.lastCancelled = false;
      this.record = null;
      this.trials = new Trials();
      this.countFromState();
      await this.persist({ phase: null }, { header: true });
      this.clearTables();
      this.renderAll();
      const s = this.state;
      this.status(`Sweep ${s.run_id.slice(0, 8)} started: seed ${s.seed}, ${s.conditions.join(", ")}; ${s.measure_left} profile trials to measure.`);
      this.storedChanged();
      return s;
    });
  }

  // The counter is the sweep's (trials observed / all its trials); the ETA covers the phases
  // this run does, estimated per phase and condition (site/eta.js).
  startProgress(phase) {
    const s = this.state;
    const p = this.progress;
    this.countFromState();
    const phases = phase === "all" ? ["measure", "heldout"] : [phase];
    p.eta = new Eta((s.left ?? []).filter((group) => phases.includes(group.phase)));
    p.started = performance.now();
    p.current = "";
    clearInterval(p.timer);
    p.timer = setInterval(() => this.renderProgress(), 500);
    this.renderProgress();
  }

  // The counter from Python's state: observed trials of all the sweep's trials.
  countFromState() {
    const s = this.state;
    this.progress.done = s ? s.trials : 0;
    this.progress.total = s ? s.trials + s.measure_left + s.heldout_left : 0;
  }

  stopProgress() {
    clearInterval(this.progress.timer);
    this.progress.timer = null;
    this.progress.current = "";
    this.renderProgress();
  }

  // One sweep_run request; the caller holds `busy`. Python's notice (a run that made no trial
  // although asked) is shown as it is.
  async runOne(phase) {
    const result = await this.request("sweep_run", { phase }, RUN_TIMEOUT_MS);
    this.useState(result.state);
    if (result.notice) this.notice(result.notice);
    return result;
  }

  async doFreeze() {
    const result = await this.request("sweep_freeze");
    this.useState(result.state);
    this.shownPredictions = new Map(result.predictions.map((p) => [p.condition, withStateAware(p)]));
    this.receiptJson = result.receipt_json ?? null;
    renderReceipt(this.receiptJson);
    this.useHeader(result.header_json);
    await this.loadPredictions(true);
    await this.persist({}, { header: true });
    this.renderAll();
    return result;
  }

  // Python froze the profiles inside a run of phase "all": its predictions go on the page now,
  // before the first held-out result (Python is busy: the full view follows the run).
  // The freeze receipt is drawn here too, before Python starts the first held-out trial.
  showFrozen(predictions, receiptJson = null) {
    this.shownPredictions = new Map(predictions.map((p) => [p.condition, withStateAware(p)]));
    this.receiptJson = receiptJson;
    renderReceipt(receiptJson);
    this.predictionRows = renderPredictions(this.shownPredictions, null, this.notEvidence());
    this.status("Frozen; running held-out…");
  }

  async run(phase = "all") {
    if (!["measure", "heldout", "all"].includes(phase)) throw new Error("phase must be measure, heldout or all");
    return this.exclusive("run", async () => {
      if (!this.state) throw new Error("start a sweep first");
      this.requireLoaded();
      this.clearError();
      this.notice(null);
      this.cancelFlag = false;
      this.lastCancelled = false;
      await this.persist({ phase });
      this.setData("running");
      this.startProgress(phase);
      this.status(`Running ${phase === "all" ? "measure → freeze → held-out" : phase}…`);
      let result;
      try {
        // one request: for "all", Python orders measure → freeze → held-out itself (showFrozen)
        result = await this.runOne(phase);
        this.lastCancelled = result.cancelled;
        await this.refresh();
        await this.persist({ phase: null }); // only a page that died mid-run leaves a phase
      } catch (error) {
        this.stopProgress();
        this.showError(`The ${phase} run failed: ${error.message}`);
        await this.refresh().catch(() => {}); // Python may be gone; what is stored survives
        this.setData("error");
        throw error;
      }
      this.stopProgress();
      this.storedChanged();
      const s = this.state;
      const interrupted = s.interruptions ? ` ${s.interruptions} interrupted trial(s) recorded and attempted again.` : "";
      const summary = `${s.trials} trials observed; ${s.measure_left} profile and ${s.heldout_left} held-out left.${interrupted}`;
      if (s.paused) {
        const cause = s.paused;
        this.status(
          `Paused: ${cause.in_a_row} infrastructure failures in a row (last: ${cause.code} — ${cause.message}). ` +
            `Nothing was scored; the attempts are kept as interruptions. ${summary} Resume with the same buttons.`,
        );
        this.setData("paused");
        return { ...result, state: s };
      }
      this.status(result.cancelled ? `Cancelled. ${summary} Resume with the same buttons.` : `Finished ${phase}. ${summary}`);
      this.setData(result.cancelled ? "cancelled" : this.derivedState());
      return { ...result, state: s }; // Python's answer (RunEnded), with the state as refreshed
    });
  }

  async freeze() {
    return this.exclusive("freeze", async () => {
      if (!this.state) throw new Error("start a sweep first");
      this.clearError();
      this.notice(null);
      try {
        const result = await this.doFreeze();
        this.status(`Frozen: ${result.frozen.map((f) => `${f.profile.condition} ${f.sha256.slice(0, 12)}…${f.exploratory ? " (exploratory)" : ""}`).join("; ")}.`);
        this.setData(this.derivedState());
        return result;
      } catch (error) {
        this.showError(`Freezing failed: ${error.message}`);
        throw error;
      }
    });
  }

  // Continue a sweep from its stored texts ({header_json, trials_json}: IndexedDB's records,
  // or the sweep CLI's trace.json header and trials.jsonl lines).
  async resumeFrom(stored, inFlight = null) {
    if (typeof stored?.header_json !== "string" || !Array.isArray(stored.trials_json)) {
      throw new Error("resumeFrom needs {header_json, trials_json} (Python's JSON texts)");
    }
    return this.exclusive("resume", async () => {
      this.clearError();
      this.notice(null);
      const provenance = JSON.parse(stored.header_json).model ?? {};
      const previously = provenance.model_id ? await this.store.observedFor(provenance.model_id, provenance.revision) : {};
      let texts;
      try {
        await this.followSyntheticModel(provenance);
        this.useState(await this.request("sweep_resume", { ...stored, in_flight: inFlight ?? null, previously_observed: previously }));
        texts = await this.upgradedTexts(stored);
      } catch (error) {
        this.showError(`Resuming failed: ${error.message}`);
        throw error;
      }
      this.useHeader(texts.header_json);
      this.record = (await this.store.getSweep(this.header.run.run_id)) ?? null;
      this.clearTables();
      this.shownPredictions = new Map();
      this.useTrials(texts.trials_json);
      if (texts !== stored || this.record?.trials !== this.trials.size) {
        // a sweep new to this browser (the CLI's --resume), or one Python upgraded from an
        // older trace version: store every trial (again), as Python wrote it
        const trials = texts.trials_json.map((json, seq) => ({ seq, trial_id: JSON.parse(json).trial_id, json }));
        await this.persist({}, { header: true, trials });
      }
      await this.refresh();
      this.hideResumePrompt();
      const interrupted = inFlight && this.header.interruptions.some((i) => i.trial_id === inFlight) ? ` The trial in flight (${inFlight}) is recorded as interrupted and will be attempted again.` : "";
      const s = this.state;
      this.countFromState();
      this.renderProgress();
      this.storedChanged();
      this.status(`Resumed sweep ${s.run_id.slice(0, 8)}: ${s.trials} trials kept; ${s.measure_left} profile and ${s.heldout_left} held-out left.${interrupted}`);
      this.setData(this.derivedState());
      return s;
    });
  }

  // A synthetic sweep continues with its synthetic model (its spec is the trace's revision:
  // nothing to download or consent to); any other sweep with the loaded model.
  async followSyntheticModel(provenance) {
    const wanted = provenance.source === "synthetic" ? provenance.revision : null;
    if (wanted !== (this.model().synthetic ?? null)) await this.models.useSynthetic(wanted);
  }

  // Python upgrades a stored trace of an older schema (trace/1, e.g. converted from IndexedDB
  // version 1) as it resumes it: the page then takes Python's texts of the header and every
  // trial, so that what is stored is one schema. Otherwise the stored texts are kept.
  async upgradedTexts(stored) {
    const header = (await this.request("sweep_header")).header_json;
    if (JSON.parse(header).schema_version === JSON.parse(stored.header_json).schema_version) return stored;
    const { header_json, trials_json } = await this.request("sweep_trace", { split: true }, 120_000);
    return { header_json, trials_json };
  }

  async resume() {
    this.requireIdle("resume");
    const stored = await this.store.latestUnfinished();
    if (!stored) return null;
    return this.resumeFrom(await this.store.storedTexts(stored.run_id), stored.in_flight);
  }

  cancel() {
    const cancelling = this.busy === "run";
    this.cancelFlag = true;
    if (cancelling) {
      this.models.client.cancel(); // stops the generation in flight (interrupt, then terminate)
      this.status("Cancelling: the generation in flight is stopped; no new trial starts.");
    }
    return Promise.resolve({ cancelling });
  }

  async getState() {
    if (this.busy || !this.state) return this.state;
    this.useState(await this.request("sweep_state"));
    return this.state;
  }

  // Python's JSON text of a document: what downloads save and the sweep CLI writes.
  async text(kind) {
    if (kind === "header") return (await this.request("sweep_header")).header_json;
    if (kind === "trace") return (await this.request("sweep_trace", {}, 120_000)).trace_json;
    if (kind === "predictions") return (await this.request("sweep_predictions", {}, 120_000)).predictions_json;
    throw new Error(`text(kind): kind is header, trace or predictions, not ${kind}`);
  }

  async getTrace() {
    if (!this.header) return null;
    if (this.busy || !this.state) return this.trials.assemble(this.header, this.summary);
    return JSON.parse(await this.text("trace"));
  }

  async getPredictions() {
    if (this.busy || !this.state) return this.predictionsDoc;
    await this.loadPredictions(true); // Python refuses (not_frozen) before a freeze
    return this.predictionsDoc;
  }

  // What IndexedDB holds of the current (or latest) sweep, its trace assembled from the records.
  async persisted() {
    const stored = this.header ? await this.store.getSweep(this.header.run.run_id) : (await this.store.sweeps())[0];
    if (!stored) return null;
    const texts = await this.store.storedTexts(stored.run_id);
    const trials = new Trials();
    for (const text of texts.trials_json) trials.add(JSON.parse(text), text);
    // the header's summary counts no trial: the counts are Python's last, stored with the status
    const header = JSON.parse(texts.header_json);
    const trace = trials.assemble(header, stored.summary ?? header.summary);
    const { in_flight, run_id, phase, finished, updated_at } = stored;
    return { trace, in_flight, run_id, phase, finished, updated_at };
  }

  // ---- journal -------------------------------------------------------------------------

  async journal(prompt) {
    return this.exclusive("journal", async () => {
      this.requireLoaded();
      const result = await this.request("journal_generate", { prompt }, 600_000);
      addJournalEntry(result.entry);
      if (this.state) {
        await this.checkpoint();
        this.useState(await this.request("sweep_state"));
      }
      return result;
    });
  }

  // ---- drawing ---------------------------------------------------------------------------

  renderProgress() {
    const p = this.progress;
    const bar = $("#sweep-bar");
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
    $("#sweep-eta").textContent = p.eta ? etaText(p.eta.estimate(performance.now())) : "";
  }

  // A resumed sweep waited for its model: once it is loaded the status says what to do now.
  modelArrived() {
    const m = this.model();
    if (!this.waitingFor || !m.loaded || this.busy || !this.state) return;
    const matches = m.model_id === this.waitingFor;
    const s = this.state;
    this.status(
      `${m.model_id} loaded: press Run to continue sweep ${s.run_id.slice(0, 8)} ` +
        `(${s.trials} / ${s.trials + s.measure_left + s.heldout_left} trials observed)` +
        `${matches ? "" : `; note: the sweep was recorded with ${this.waitingFor}`}.`,
    );
    this.waitingFor = null;
  }

  refreshControls() {
    const focused = document.activeElement; // kept: a button disabled below must not drop focus to <body>
    this.drawControls();
    if (focused instanceof HTMLButtonElement && focused.disabled && this.section.contains(focused)) {
      const cancel = $("#sweep-cancel");
      (cancel.disabled ? $("#experiment-status") : cancel).focus();
    }
  }

  drawControls() {
    const m = this.model();
    const loaded = m.loaded;
    const idle = !this.busy;
    const hasSweep = Boolean(this.state);
    $("#sweep-run-all").disabled = !(loaded && idle);
    $("#sweep-measure").disabled = !(loaded && idle);
    $("#sweep-freeze").disabled = !(idle && hasSweep && this.state.can_freeze);
    $("#sweep-heldout").disabled = !(loaded && idle && hasSweep && this.state.can_run_heldout);
    $("#sweep-new").disabled = !(loaded && idle);
    $("#sweep-cancel").disabled = this.busy !== "run";
    for (const box of document.querySelectorAll('input[name="condition"]')) box.disabled = !(loaded && idle);
    $("#journal-generate").disabled = !(loaded && idle) || Boolean(m.synthetic); // a synthetic model answers trials only
    $("#download-sweep-trace").disabled = !(idle && this.header);
    $("#download-predictions").disabled = !(idle && this.predictionsDoc);
    $("#resume-accept").disabled = !idle;
    const viewing = $("#viewing-banner");
    viewing.hidden = !this.viewing;
    if (this.viewing) {
      $("#viewing-text").textContent = `Showing ${this.viewing.name}, opened from disk (${this.viewing.label}) — not the live sweep.`;
      for (const id of ["#sweep-measure", "#sweep-freeze", "#sweep-heldout", "#download-sweep-trace", "#download-predictions"]) $(id).disabled = true;
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
    return `Sweep ${this.header.run.run_id.slice(0, 8)}: ${trials} trials: ${correct} correct, ${incorrect} wrong (a result, not the answer), ${failed} failed (no result)${label}. Supplied-program rows: ${CONTROL_LABEL}.`;
  }

  openRecord(trialId) {
    const trial = this.trials.get(trialId);
    if (trial) showRecord(trial, this.notEvidence());
  }

  clearTables() {
    this.results.reset();
    $("#predictions-table tbody").replaceChildren();
    this.predictionRows = new Map();
  }

  renderAll() {
    $("#sweep-results-caption").textContent = this.resultsCaption();
    renderFreeze(this.predictionsDoc, this.notEvidence());
    if (!this.shownPredictions.size && this.predictionsDoc) {
      this.shownPredictions = new Map(
        this.predictionsDoc.conditions.map((c) => [c.frozen.profile.condition, withStateAware({ predictions: c.predictions, state_aware: c.state_aware?.predictions })]),
      );
    }
    this.predictionRows = renderPredictions(this.shownPredictions, this.predictionsDoc, this.notEvidence());
    renderScores(this.predictionsDoc, this.notEvidence());
    this.renderProgress();
    this.refreshControls();
  }

  // ---- an opened trace (site/viewer.js: "Open a trace") -----------------------------------
  // A finished run read from disk, drawn by the same renderers as the live run from the texts
  // Python re-derived it from, under the evidence Python decided it is (`evidence`: never
  // model evidence for a fixture or a synthetic model). The live sweep's copy is kept aside
  // and drawn again on close.

  showOpened({ name, evidence, headerJson, trialsJson, predictionsJson, corrections = [] }) {
    this.requireIdle("open a trace");
    this.viewing ??= {
      live: {
        state: this.state,
        header: this.header,
        headerJson: this.headerJson,
        tasks: this.tasks,
        trials: this.trials,
        summary: this.summary,
        predictionsDoc: this.predictionsDoc,
        shown: this.shownPredictions,
        rows: [...this.results.rows],
        data: this.section.dataset.state,
      },
    };
    const corrected = new Map();
    for (const c of corrections) corrected.set(c.trial_id, [...(corrected.get(c.trial_id) ?? []), c]);
    Object.assign(this.viewing, { name, evidence, label: evidenceLabel(evidence), corrections: corrected });
    this.state = null;
    this.useHeader(headerJson);
    this.useTrials(trialsJson);
    this.summary = this.header.summary; // the opened trace's own counts, as Python wrote them
    this.predictionsDoc = predictionsJson ? JSON.parse(predictionsJson) : null;
    this.shownPredictions = new Map();
    this.renderAll();
    this.setData("viewing");
  }

  closeOpened() {
    const live = this.viewing?.live;
    if (!live) return;
    this.viewing = null;
    this.state = live.state;
    this.header = live.header;
    this.headerJson = live.headerJson;
    this.tasks = live.tasks;
    this.trials = live.trials;
    this.summary = live.summary;
    this.predictionsDoc = live.predictionsDoc;
    this.shownPredictions = live.shown;
    this.results.setAll(live.rows);
    this.renderAll();
    this.setData(live.data);
  }

  // ---- downloads, resume prompt, clear -----------------------------------------------------

  // Python's text, saved as it is: 1.0 stays 1.0.
  // Its name says the evidence kind: trace-fixture-<run id>.json.
  async download(kind) {
    downloadJson(await this.text(kind), fileName(kind, this.header.model?.evidence, this.header.run.run_id));
  }

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

  async acceptResume() {
    const chosen = this.offered;
    if (!chosen) return;
    try {
      await this.resumeFrom(await this.store.storedTexts(chosen.run_id), chosen.in_flight);
    } catch {
      return; // shown by resumeFrom
    }
    if (chosen.phase && this.model().loaded) {
      await this.run(chosen.phase).catch(() => {});
    } else if (chosen.phase) {
      this.waitingFor = chosen.model_id;
      this.status(`${$("#experiment-status").textContent} Load ${chosen.model_id} and press Run to continue.`);
    }
  }

  async discardResume() {
    if (!this.offered) return;
    await this.store.deleteSweep(this.offered.run_id);
    $("#stored-status").textContent = `Discarded stored sweep ${this.offered.run_id.slice(0, 8)}.`;
    this.storedChanged();
    await this.offerResume();
  }

  // Stored sweeps and cached model files; the ledger stays (it is what marks a later freeze
  // exploratory when its held-out tasks were already seen here).
  async clearStored() {
    const counts = await this.store.clear();
    counts.model_cache = "caches" in self ? await caches.delete(MODEL_CACHE) : false;
    this.record = null;
    this.hideResumePrompt();
    const kept = (await this.store.ledger()).length;
    this.storedChanged();
    $("#stored-status").textContent =
      `Deleted ${counts.sweeps} stored sweep(s) from this browser${counts.model_cache ? ", and the cached model files" : " (no cached model files)"}. ` +
      `The ledger of observed held-out tasks (${kept} entr${kept === 1 ? "y" : "ies"}) is kept.`;
    return counts;
  }

  // The separate, confirmed action: what is lost is said before anything is deleted.
  async clearLedger({ confirmed = false } = {}) {
    if (!confirmed && !window.confirm(LEDGER_WARNING)) {
      $("#stored-status").textContent = "The ledger was kept.";
      return { ledger: 0 };
    }
    const ledger = await this.store.clearLedger();
    $("#stored-status").textContent = `Deleted ${ledger} ledger entr${ledger === 1 ? "y" : "ies"}: later freezes no longer know what this browser observed.`;
    return { ledger };
  }

  // ---- wiring ----------------------------------------------------------------------------

  wire() {
    const ui = (work) => async () => {
      try {
        await work();
      } catch (error) {
        if (this.section.dataset.state !== "error") this.showError(error.message);
      }
    };
    const ensureSweep = async () => {
      if (!this.state || this.finished()) await this.start({});
    };
    const on = (selector, work) => $(selector).addEventListener("click", ui(work));
    on("#sweep-run-all", async () => {
      await ensureSweep();
      await this.run("all");
    });
    on("#sweep-measure", async () => {
      await ensureSweep();
      await this.run("measure");
    });
    on("#sweep-freeze", () => this.freeze());
    on("#sweep-heldout", () => this.run("heldout"));
    on("#sweep-new", () => this.start({}));
    $("#sweep-cancel").addEventListener("click", () => this.cancel());
    on("#download-sweep-trace", () => this.download("trace"));
    on("#download-predictions", () => this.download("predictions"));
    on("#download-receipt", () => this.receiptJson && downloadJson(this.receiptJson, `receipt-${this.header.run.run_id}.json`));
    on("#clear-stored", () => this.clearStored());
    on("#clear-ledger", () => this.clearLedger());
    on("#resume-accept", () => this.acceptResume());
    on("#resume-discard", () => this.discardResume());
    $("#viewing-close").addEventListener("click", () => this.closeOpened());
    $("#journal-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const prompt = $("#journal-prompt").value;
      $("#journal-status").textContent = "Generating (journal)…";
      this.journal(prompt).then(
        (result) => ($("#journal-status").textContent = `Journal entry ${result.journal} kept (exploration only).`),
        (error) => ($("#journal-status").textContent = `Journal generation failed: ${error.message}`),
      );
    });
    this.models.subscribe(() => {
      this.refreshControls();
      this.modelArrived();
    });
    this.refreshControls();
  }

  api() {
    return {
      start: (options) => this.start(options),
      run: (phase) => this.run(phase),
      freeze: () => this.freeze(),
      state: () => this.getState(),
      trace: () => this.getTrace(),
      predictions: () => this.getPredictions(),
      text: (kind) => this.text(kind),
      resume: () => this.resume(),
      resumeFrom: (stored, inFlight) => this.resumeFrom(stored, inFlight),
      cancel: () => this.cancel(),
      persisted: () => this.persisted(),
      onEvent: (callback) => {
        this.listeners.add(callback);
        return () => this.listeners.delete(callback);
      },
      journal: (prompt) => this.journal(prompt),
      clearStored: () => this.clearStored(),
      clearLedger: (options) => this.clearLedger(options),
      ledger: () => this.store.ledger(),
      // for tests and the bench: what the page shows, without asking Python
      snapshot: () => ({
        state: this.state,
        data_state: this.section.dataset.state,
        busy: this.busy,
        error: this.lastError,
        cancelled: this.lastCancelled,
        trials: this.trials.size,
      }),
    };
  }
}
