// @ts-check
// The experiment controller's state (main thread): what the page holds of the live sweep, how
// it is stored in IndexedDB (site/store.js), and the event Python sends after each step of a
// run (`sessionEvent`: trial_start / trial_done / trial_interrupted / frozen). An event returns
// at once (issue 22 §3: Python never waits for the page's storing or drawing): what it changes
// joins the next IndexedDB batch (store.js SweepWriter, one transaction, in order), its row and
// counters are drawn a few times a second, and the experiment's listeners (onEvent: the sweep
// CLI, tests, benches) are told once it is stored and drawn. The base class of
// ExperimentView (site/experiment_view.js: progress, controls, tables, an opened trace) and of
// Experiment (site/experiment.js: the requests, the API, the buttons). It calls methods the
// view defines: renderAll, renderProgress, refreshControls, closeOpened, showFrozen,
// resultsCaption and openRecord.

import { entryOf, notEvidenceLabel } from "./dom.js";
import { SweepStore, SweepWriter } from "./store.js";
import { EVENT_TYPES, EVIDENCE_ROW_TAGS } from "./lab_protocol.js";
import { ResultsTable, rowOf } from "./results_table.js";
import { fillObservation } from "./profile_views.js";
import { EventChannel } from "./experiment_channel.js";
import { $ } from "./dom.js";
import { messageOf } from "./common/errors.js";

/** @import { Event as LabEvent, EventTexts, HeldoutPredictions, Prediction, PredictionsDocument, RunPlots, Summary, SweepState, TaskRecord, TraceHeader, Trial, TrialDone } from "./lab_types.js" */
/** @import { Observed, SweepStatus, TrialText } from "./store.js" */
/** @import { Eta } from "./eta.js" */
/** @import { ExperimentParts, Listener, LiveCopy, ShownPrediction, Texts, Viewing } from "./page_types.js" */


const DRAW_EVERY_MS = 200;

// The trials of one sweep as the page holds them: Python's text per trial. Adding a trial is
// constant work. The counts the caption shows are Python's (`summary` of each trial_done event
// and of the state), never counted here. The page never assembles a trace: Python does, from
// the texts the page holds (pyapp/records/stored.py).
export class Trials {
  constructor() {
    /** @type {Map<string, string>} */
    this.texts = new Map(); // trial id -> JSON text
  }

  /** @param {Pick<Trial, "trial_id">} trial @param {string} text */
  add(trial, text) {
    this.texts.set(trial.trial_id, text);
  }

  get size() {
    return this.texts.size;
  }

  /** @param {string} trialId */
  has(trialId) {
    return this.texts.has(trialId);
  }

  /** @param {string} trialId @returns {Trial | null} */
  get(trialId) {
    const text = this.texts.get(trialId);
    return text === undefined ? null : /** @type {Trial} */ (JSON.parse(text)); // Python's Trial record
  }

  // Python's texts of every trial, in the order they arrived.
  list() {
    return [...this.texts.values()];
  }
}

// Both frozen predictors' probabilities for one condition: each product prediction with the
// state-aware one beside it (`state_aware_probability`; null where there is none).
/**
 * @param {Pick<HeldoutPredictions, "predictions" | "state_aware"> | { predictions: Prediction[], state_aware?: Prediction[] | null }} both
 * @returns {ShownPrediction[]}
 */
export function withStateAware({ predictions, state_aware: stateAware }) {
  return predictions.map((p, i) => ({ ...p, state_aware_probability: stateAware?.[i]?.probability ?? null }));
}

export class ExperimentState {
  /** @param {ExperimentParts} parts */
  constructor({ request, models, environment, currentSeed, currentParams = () => undefined }) {
    this.request = request;
    this.models = models;
    // Python's posted events and the flags it shares with the page (site/experiment_channel.js)
    this.cancelling = false;
    this.unloading = false;
    this.channel = new EventChannel((json, texts) => this.sessionEvent(json, texts));
    this.channel.set("model_version", models.client ? models.client.version + 1 : 0);
    models.subscribe?.(() => this.channel.modelChanged(models.client.version));
    this.environment = environment;
    this.currentSeed = currentSeed;
    this.currentParams = currentParams;
    this.section = $("#experiment");
    this.store = new SweepStore();
    this.writer = new SweepWriter(this.store); // the live sweep's writes, batched, in order
    /** @type {{ text: string, n: number }[]} */
    this.toDraw = []; // [{text, n}]: trial texts whose rows the next draw adds (drawPending)
    this.events = 0; // events handled so far (n: each event's number)
    this.toldUpTo = 0; // the number of the last event listeners were told of
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.drawTimer = undefined;
    /** @type {Set<Listener>} */
    this.listeners = new Set();
    /** @type {Set<() => void>} */
    this.storedListeners = new Set(); // told when the stored runs change (site/runs_panel.js)
    const table = $("#sweep-results", HTMLTableElement);
    this.results = new ResultsTable({ table, pager: $("#sweep-results-pager"), onOpen: (id) => this.openRecord(id) });
    /** @type {string | null} */
    this.receiptJson = null; // the latest freeze receipt (Python's JSON text), shown at the freeze
    /** @type {SweepState | null} */
    this.state = null; // Python's sweep state (pyapp.browser.session.Session.state)
    /** @type {TraceHeader | null} */
    this.header = null; // the sweep's header (the trace without its trials), parsed
    /** @type {string | null} */
    this.headerJson = null; // ... and as Python wrote it
    /** @type {string[]} */
    this.changes = []; // the records that joined it since, one HeaderChange text per event (Python's)
    /** @type {Map<string, TaskRecord>} */
    this.tasks = new Map(); // task id -> task record of the header
    this.trials = new Trials();
    /** @type {Summary | null} */
    this.summary = null; // Python's counts over the trials (state.summary, trial_done.summary)
    /** @type {SweepStatus | null} */
    this.record = null; // the IndexedDB status record of the current sweep
    /** @type {PredictionsDocument | null} */
    this.predictionsDoc = null; // the latest predictions document (after a freeze)
    /** @type {RunPlots | null} */
    this.plots = null; // its two plots as Python drew them (RunPlots: SVG text), or null
    /** @type {Map<string, ShownPrediction[]>} */
    this.shownPredictions = new Map(); // condition -> [Prediction] shown in the table
    /** @type {Map<string, HTMLTableRowElement>} */
    this.predictionRows = new Map(); // trial id -> row of the predictions table
    /** @type {string | null} */
    this.busy = null; // the name of the request in flight ("run", "freeze", ...)
    this.cancelFlag = false;
    this.doneSeen = 0; // trial_done events received from this worker, in all (for stopAt)
    this.stopAt = 0; // stopAfter: the Cancel once doneSeen reaches it (0: no stop)
    /** @type {string | null} */
    this.lastError = null;
    this.lastCancelled = false;
    /** @type {{ done: number, total: number, started: number, current: string, timer: ReturnType<typeof setInterval> | undefined, eta: Eta | null }} */
    this.progress = { done: 0, total: 0, started: 0, current: "", timer: undefined, eta: null };
    /** @type {string | null} */
    this.waitingFor = null; // a resumed sweep's model id, until a model is loaded
    /** @type {SweepStatus | null} */
    this.offered = null; // the stored record the resume prompt offers
    /** @type {Viewing | null} */
    this.viewing = null; // an opened trace being shown: {name, evidence, label, live: the live sweep's copy}
    // Once the page is going away (reload, tab closed), later events are the teardown's doing
    // (a generation cut off by the dying model worker): they are not stored, so the stored
    // trial_start stays in flight and is recorded as interrupted on resume.
    window.addEventListener("pagehide", () => {
      this.unloading = true;
      this.channel.cancel(true); // no further trial starts
    });
  }

  // The Cancel flag, shared with Python as it is set (site/experiment_channel.js).
  get cancelFlag() {
    return this.cancelling;
  }

  /** @param {boolean} flag */
  set cancelFlag(flag) {
    this.cancelling = flag;
    this.channel?.cancel(flag || this.unloading);
  }

  // ---- drawn by the view (site/experiment_view.js defines each; never called here) --------

  /** @returns {void} */
  renderAll() {
    throw new Error("ExperimentView draws");
  }

  /** @returns {void} */
  renderProgress() {
    throw new Error("ExperimentView draws");
  }

  /** @returns {void} */
  refreshControls() {
    throw new Error("ExperimentView draws");
  }

  /** @returns {void} */
  closeOpened() {
    throw new Error("ExperimentView draws");
  }

  /** @param {HeldoutPredictions[]} _predictions @param {string | null} [_receiptJson] @returns {void} */
  showFrozen(_predictions, _receiptJson) {
    throw new Error("ExperimentView draws");
  }

  /** @returns {string} */
  resultsCaption() {
    throw new Error("ExperimentView draws");
  }

  /** @param {string} _trialId @returns {void} */
  openRecord(_trialId) {
    throw new Error("ExperimentView draws");
  }

  // ---- small helpers -------------------------------------------------------------------

  /** @param {string} value */
  setData(value) {
    this.section.dataset.state = value;
  }

  // Python decides where the protocol stands (state.stage, or paused); the page shows it.
  derivedState() {
    return this.state?.paused ? "paused" : (this.state?.stage ?? "idle");
  }

  /** @param {string} text */
  status(text) {
    $("#experiment-status").textContent = text;
  }

  /** @param {string | null} text */
  notice(text) {
    const line = $("#experiment-notice");
    line.hidden = !text;
    line.textContent = text ?? "";
  }

  /** @param {unknown} error */
  showError(error) {
    this.lastError = messageOf(error);
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

  // What each results row carries beside its condition (EVIDENCE_ROW_TAGS: the label, the
  // reference subject's shortened; the caption carries it whole), or null for model evidence.
  rowTag() {
    const evidence = this.viewing ? this.viewing.evidence : (this.header?.model?.evidence ?? this.model().evidence);
    return evidence ? (entryOf(EVIDENCE_ROW_TAGS, evidence) ?? notEvidenceLabel(evidence)) || null : null;
  }

  /** @param {string} what */
  requireIdle(what) {
    if (this.busy) throw new Error(`cannot ${what} while "${this.busy}" is in progress`);
  }

  requireLoaded() {
    if (!this.model().loaded) throw new Error("load a model (with consent) in the Models panel first");
  }

  /** @template T @param {string} name @param {() => Promise<T>} work @returns {Promise<T>} */
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

  /** @param {LabEvent} event @param {string} text @param {Texts} texts */
  emit(event, text, texts) {
    for (const callback of this.listeners) {
      try {
        callback(event, text, texts);
      } catch (error) {
        console.error("[composition-lab] experiment listener failed", error);
      }
    }
  }

  // ---- an opened trace in place of the live sweep (site/experiment_view.js draws them) ----

  /**
   * A run read from disk becomes what the page shows; the live sweep is kept aside (once).
   * @param {Omit<Viewing, "live">} viewing
   * @param {string} headerJson
   * @param {string[]} trialsJson
   * @param {PredictionsDocument | null} predictions
   * @param {RunPlots | null} plots
   */
  useOpened(viewing, headerJson, trialsJson, predictions, plots) {
    this.viewing = { ...viewing, live: this.viewing?.live ?? this.liveCopy() };
    this.state = null;
    const header = this.useHeader(headerJson);
    this.useTrials(trialsJson);
    this.summary = header.summary; // the opened trace's own counts, as Python wrote them
    this.predictionsDoc = predictions;
    this.plots = plots;
    this.shownPredictions = new Map();
  }

  /** @returns {LiveCopy} */
  liveCopy() {
    return {
      state: this.state,
      header: this.header,
      headerJson: this.headerJson,
      tasks: this.tasks,
      trials: this.trials,
      summary: this.summary,
      predictionsDoc: this.predictionsDoc,
      plots: this.plots,
      shown: this.shownPredictions,
      rows: [...this.results.rows],
      data: this.section.dataset.state,
    };
  }

  // The live sweep again, in place of an opened trace: what was kept aside, or null when no
  // trace was open.
  /** @returns {LiveCopy | null} */
  restoreLive() {
    const live = this.viewing?.live;
    if (!live) return null;
    this.viewing = null;
    this.state = live.state;
    this.header = live.header;
    this.headerJson = live.headerJson;
    this.tasks = live.tasks;
    this.trials = live.trials;
    this.summary = live.summary;
    this.predictionsDoc = live.predictionsDoc;
    this.plots = live.plots;
    this.shownPredictions = live.shown;
    return live;
  }

  // A resumed sweep's model arrived: the id it waited for, no longer waited for.
  /** @returns {string | null} */
  stopWaiting() {
    const waited = this.waitingFor;
    this.waitingFor = null;
    return waited;
  }

  // ---- persistence -----------------------------------------------------------------------

  finished() {
    return this.state?.stage === "done";
  }

  // Python's header, whole: the changes stored since are in it.
  /** @param {string} text @returns {TraceHeader} */
  useHeader(text) {
    this.headerJson = text;
    this.changes = [];
    const header = /** @type {TraceHeader} */ (JSON.parse(text)); // Python's trace, less its trials
    this.header = header;
    this.tasks = new Map(header.tasks.map((task) => [task.id, task]));
    return header;
  }

  // The status record (small), plus the header text, a header change, new trial records or new
  // ledger records when given, joined to the next batch; resolves once it is committed.
  // `after` runs then.
  /**
   * @param {Partial<SweepStatus>} [fields]
   * @param {{ header?: boolean, change?: string | null, trials?: TrialText[], observed?: Observed[], after?: (() => void) | null }} [writes]
   * @returns {Promise<void>}
   */
  persist(fields = {}, { header = false, change = null, trials = [], observed = [], after = null } = {}) {
    if (!this.header) {
      after?.();
      return Promise.resolve();
    }
    const runId = this.header.run.run_id;
    const model = this.header.model;
    /** @type {SweepStatus} */
    const record = {
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
      // the freeze receipt as Python made it at the freeze (the runs list downloads it)
      receipt_json: this.receiptJson ?? (this.record?.run_id === runId ? (this.record.receipt_json ?? null) : null),
      ...fields,
    };
    this.record = record;
    const changes = change ? [change] : [];
    return this.writer.write(record, { header: header ? this.headerJson : null, changes, trials, observed, after });
  }

  // A checkpoint: Python's current header, stored.
  /** @param {Partial<SweepStatus>} [fields] */
  async checkpoint(fields = {}) {
    this.useHeader((await this.request("sweep_header")).header_json);
    await this.persist(fields, { header: true });
  }

  // Python says which trials the ledger records (trial_done.heldout_observed) and under what
  // key: the held-out task's content (heldout_content), never its id, which repeats across
  // seeds and presets. The rule is Python's (pyapp/predict/exploratory.py). The ledger
  // records to write with the trial.
  /** @param {Pick<TrialDone, "condition" | "task_id">} event @param {string | null} content @returns {Observed[]} */
  observedRecords({ condition, task_id }, content) {
    const model = this.header?.model;
    return model ? [{ model_id: model.model_id, revision: model.revision, revision_served: model.revision_served ?? null, condition, task_id: content ?? task_id }] : [];
  }

  // Python's state, and the counts it carries.
  /** @param {SweepState} state */
  useState(state) {
    this.state = state;
    this.summary = state.summary;
    return state;
  }

  // Python's state of the sweep: a sweep has been started (a caller's precondition).
  /** @returns {SweepState} */
  sweepState() {
    if (!this.state) throw new Error("start a sweep first");
    return this.state;
  }

  // The sweep's header: a sweep has been started or opened (a caller's precondition).
  /** @returns {TraceHeader} */
  sweepHeader() {
    if (!this.header) throw new Error("start a sweep first");
    return this.header;
  }

  // Python's state, header (unless the caller just had it: `headerJson`) and predictions,
  // stored and drawn.
  /** @param {{ withPredictions?: boolean, headerJson?: string | null }} [how] */
  async refresh({ withPredictions = true, headerJson = null } = {}) {
    await this.writer.flush(); // every event's write first (a failed one is thrown here)
    this.drawPending();
    const state = await this.request("sweep_state");
    this.useState(state);
    this.useHeader(headerJson ?? (await this.request("sweep_header")).header_json);
    // a sweep stopped at its freeze for a study seal has no held-out tasks to predict yet
    await this.loadPredictions(withPredictions && state.frozen.length > 0 && !state.awaiting_study_seal);
    await this.persist({ phase: this.record?.phase ?? null }, { header: true });
    this.renderAll();
  }

  /** @param {boolean} wanted */
  async loadPredictions(wanted) {
    const reply = wanted ? await this.request("sweep_predictions") : null;
    this.predictionsDoc = reply ? /** @type {PredictionsDocument} */ (JSON.parse(reply.predictions_json)) : null;
    this.plots = reply?.plots ?? null;
  }

  // Every stored trial of a sweep (resume): one pass, one table draw.
  /** @param {string[]} texts */
  useTrials(texts) {
    this.toDraw = [];
    this.trials = new Trials();
    const rows = [];
    for (const text of texts) {
      const trial = /** @type {Trial} */ (JSON.parse(text)); // Python's Trial record
      this.trials.add(trial, text);
      rows.push(this.rowOf(trial));
    }
    this.results.setAll(rows);
  }

  /** @param {Trial} trial */
  rowOf(trial) {
    const corrected = this.viewing?.corrections?.get(trial.trial_id) ?? null;
    return rowOf(trial, { label: this.rowTag(), split: this.tasks.get(trial.task_id)?.split, corrected });
  }

  // ---- the function Python calls after each step of a run ---------------------------------

  // An event Python posted (site/experiment_channel.js) or told, and the documents it brings
  // beside it as Python's text (`texts`: {trial, change, receipt}). Returns at once, with the
  // page's answer (pyapp.protocol.messages.EventAnswer, JSON text; a told event's): the Cancel
  // flag, which Python's next Cancel check reads, and the model client's version, while which
  // Python keeps the provenance it read (a call to the page fewer each). Nothing here waits
  // for IndexedDB or the DOM. A write that failed earlier is thrown here, so the run stops at
  // the next event rather than going on unstored (a posted one: at the event after it).
  /** @param {string} json @param {Partial<EventTexts>} [texts] @returns {string} */
  sessionEvent(json, texts = {}) {
    if (this.unloading) return this.answer(true); // the page is going away: no further trial starts
    const event = /** @type {LabEvent} */ (JSON.parse(json)); // one of Python's event records, checked next
    if (!EVENT_TYPES.includes(event.type)) throw new Error(`unknown event from Python: ${String(event.type)}`);
    const n = ++this.events;
    const beside = { trial: texts.trial ?? null, change: texts.change ?? null, receipt: texts.receipt ?? null };
    const after = () => this.tell(event, json, beside, n);
    if (event.type === "trial_start") {
      this.progress.current = `${event.condition} · ${event.task_id} (${event.phase})`;
      const { phase, condition, answer_tokens = null, calls = null } = event;
      this.progress.eta?.started(phase, condition, performance.now(), answer_tokens, calls);
      this.persist({ in_flight: event.trial_id }, { after });
    } else if (event.type === "trial_done") {
      this.doneSeen += 1;
      this.trialDone(event, beside, after, n);
    } else {
      // trial_interrupted or frozen: a Cancel or an infrastructure failure (event.code) cut a
      // trial short (Python keeps it under `interruptions`, never scored, and attempts it
      // again), or Python froze the profiles: the records that joined the header come beside
      // the event (`change`), stored beside the header as they are.
      if (beside.change) this.changes.push(beside.change);
      this.persist({ in_flight: null }, { change: beside.change, after });
      if (event.type === "frozen") this.showFrozen(event.predictions ?? [], beside.receipt);
    }
    this.scheduleDraw();
    return this.answer(this.cancelFlag || this.stopReached);
  }

  // A driver's stop (stopAfter, window.lab.send's sweep_stop) is reached: Python ends the run
  // before its next trial, as on a Cancel, but no generation in flight is interrupted.
  get stopReached() {
    return this.stopAt > 0 && this.doneSeen >= this.stopAt;
  }

  // The EventAnswer record (pyapp/protocol/messages.py; its keys are EVENT_ANSWER_FIELDS).
  /** @param {boolean} cancel */
  answer(cancel) {
    return JSON.stringify({ cancel, model_version: this.models.client?.version ?? null });
  }

  // The trial's text is kept and stored as Python wrote it; it is parsed only to draw its row.
  /** @param {TrialDone} event @param {Texts} texts @param {() => void} after @param {number} n */
  trialDone(event, { trial: text, change }, after, n) {
    if (text === null) throw new Error(`trial_done without its trial (${event.trial_id})`);
    const { trial_id, condition, heldout_observed, heldout_content = null, summary, phase } = event;
    this.progress.eta?.finished(phase, condition, performance.now());
    const seq = this.trials.size;
    this.trials.add({ trial_id }, text);
    this.summary = summary;
    // a reload's load record joined the hash chain before this trial: it comes along (`change`)
    if (change) this.changes.push(change);
    const observed = heldout_observed ? this.observedRecords(event, heldout_content) : [];
    this.persist({ in_flight: null }, { change, trials: [{ seq, trial_id, json: text }], observed, after });
    this.progress.done += 1;
    this.toDraw.push({ text, n });
  }

  // Listeners are told of an event once it is stored, and once what it changed is drawn: with
  // a listener (the sweep CLI, a test), pending rows are drawn as their batch commits, up to
  // that event (a batch can hold later events: a listener sees the page as of its event).
  /** @param {LabEvent} event @param {string} json @param {Texts} texts @param {number} n */
  tell(event, json, texts, n) {
    if (!this.listeners.size) return;
    this.toldUpTo = n;
    this.drawPending(n);
    this.emit(event, json, texts);
  }

  // Rows, the caption and the counters are drawn a few times a second, in an animation frame,
  // off the trial path (a frame per trial would lay the page out per trial).
  scheduleDraw() {
    const upTo = () => (this.listeners.size ? this.toldUpTo : Infinity);
    this.drawTimer ??= setTimeout(() => requestAnimationFrame(() => this.drawPending(upTo())), DRAW_EVERY_MS);
  }

  // The pending rows of events up to number `upTo`.
  /** @param {number} [upTo] */
  drawPending(upTo = Infinity) {
    clearTimeout(this.drawTimer);
    this.drawTimer = undefined;
    const texts = this.toDraw.filter((item) => item.n <= upTo).map((item) => item.text);
    this.toDraw = this.toDraw.filter((item) => item.n > upTo);
    for (const text of texts) {
      const trial = /** @type {Trial} */ (JSON.parse(text)); // Python's Trial record
      if (!this.trials.has(trial.trial_id)) continue; // the table was reset since
      this.results.add(this.rowOf(trial));
      fillObservation(this.predictionRows, trial);
    }
    if (texts.length) $("#sweep-results-caption").textContent = this.resultsCaption();
    this.renderProgress();
  }
}
