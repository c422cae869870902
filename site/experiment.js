// @ts-check
// The Experiment and Journal sections (main thread): the controller. Python owns the protocol
// (pyapp/browser/session.py: sweep_start, sweep_resume, sweep_run, sweep_freeze, sweep_state,
// sweep_header, sweep_trace, sweep_predictions, journal_generate); this file sends those
// requests, stores what comes back in IndexedDB (site/store.js) and hands it to the
// renderers (results_table.js, profile_views.js, record_view.js). It answers the two
// functions Python calls synchronously during a run:
//
//   {lab_event: json, texts, seq} (posted) -> - trial_start / trial_done / trial_interrupted / frozen,
//                                               posted without waiting once the page shares its
//                                               flags (the Cancel flag, the model client's version)
//                                               with Python (site/experiment_channel.js)
//   xworker.sync.session_event(json, posted, trial, change, receipt) -> text
//                                               the same event told (before the flags, or
//                                               after a posted one failed); answers at once
//                                               (EventAnswer: the Cancel flag and the model
//                                               client's version; stored and drawn off the
//                                               trial path: experiment_state.js)
//   xworker.sync.cancel_requested(posted) -> bool  the Cancel flag, where neither tells it
//   (both calls are answered once every event posted before them has arrived: in order)
//
// An event holds no document: what it brings travels beside it as Python's JSON text (`texts`:
// the trial of a trial_done, the records that joined the header — a HeaderChange —, a freeze
// receipt). The page stores those texts as they are (one IndexedDB record per trial, the
// changes beside the sweep's header, written in batches) and parses a trial only to draw its
// row. The whole trace is assembled on demand, by Python only: a download asks for it
// (`sweep_trace`, saved as Python wrote it), a resume hands the stored texts back.
//
// The state API (window.lab.experiment; docs/page.md), every method async, plain JSON:
//   start({seed, params?, conditions})  -> state
//   run(phase)                          -> {state, cancelled, notice}   phase: measure | heldout | all
//                                          (Python's RunEnded; state.paused names a pause's cause)
//   freeze()                            -> {frozen, predictions, header_json, state}
//   state()  trace()  predictions()     -> state | trace document | predictions document
//   text(kind)                          -> Python's JSON text of "header" | "trace" | "predictions"
//   resume()                            -> state | null  (the latest unfinished stored sweep)
//   resumeFrom({header_json, changes_json?, trials_json}, inFlight) -> state
//   persisted()                         -> {header_json, changes_json, trials_json, summary, in_flight,
//                                           run_id, phase, finished, updated_at} | null
//   cancel()                            -> {cancelling}
//   onEvent(callback(event, text, texts)) -> unsubscribe function (text: the event as Python sent
//                                          it; texts: {trial, change, receipt} beside it)
//   journal(prompt)                     -> {entry, journal}     (exploration only)
//   ledger()                            -> [{key, model_id, revision, revision_served, condition, task_ids}]
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
//
// The controller is three classes, one file each: ExperimentState (site/experiment_state.js:
// the sweep as the page holds and stores it, Python's events), ExperimentView
// (site/experiment_view.js: progress, controls, tables, an opened trace, the resume prompt)
// and Experiment here (the requests to Python, the API above, the buttons).

import { $, downloadJson } from "./dom.js";
import { messageOf } from "./common/errors.js";
import { renderReceipt } from "./receipt_view.js";
import { addJournalEntry } from "./profile_views.js";
import { fileName } from "./runs_panel.js";
import { Trials, withStateAware } from "./experiment_state.js";
import { ExperimentView } from "./experiment_view.js";
import { askAboutUnfinished } from "./unfinished_dialog.js";


/** @import { Opened } from "./experiment_view.js" */
/** @import { ModelProvenance, Receipt, StudySealChoice, SweepStart, SweepState, Trace, TraceHeader, Trial } from "./lab_types.js" */
/** @import { StoredTexts, SweepStatus } from "./store.js" */
/** @import { ExperimentParts, Listener } from "./page_types.js" */

/** @typedef {"measure" | "heldout" | "all"} Phase */
/** @typedef {"header" | "trace" | "predictions"} TextKind */
/** @typedef {Omit<SweepStart, "type" | "id" | "environment" | "faults">} StartOptions */
/** @typedef {{ header_json?: string | null, changes_json?: string[] | null, trials_json?: string[] | null }} Stored what a driver hands over (checked) */
const RUN_TIMEOUT_MS = 2_000_000_000; // a sweep of a real model can take hours; Cancel stops it
// transformers.js keeps downloaded model files in this Cache Storage entry.
const MODEL_CACHE = "transformers-cache";
const LEDGER_WARNING =
  "Clear the ledger of observed held-out tasks? This browser then forgets which held-out tasks it has " +
  "already observed for each model, so a later freeze of those models is marked CONFIRMATORY although " +
  "the tasks were seen. This cannot be undone.";

/** @typedef {ReturnType<typeof setupExperiment>} ExperimentHandle the experiment as site/app.js set it up */

/** @param {ExperimentParts} parts */
export function setupExperiment({ request, models, environment, currentSeed, currentParams }) {
  const controller = new Experiment({ request, models, environment, currentSeed, currentParams });
  controller.wire();
  return {
    api: controller.api(),
    // Python's events: told (after every event posted before, `posted`) or posted (message)
    /** @param {string} json @param {number} posted @param {string | null} [trial] @param {string | null} [change] @param {string | null} [receipt] */
    sessionEvent: (json, posted, trial = null, change = null, receipt = null) =>
      controller.channel.answerAfter(posted, () => controller.sessionEvent(json, { trial, change, receipt })),
    /** @param {unknown} data */
    workerMessage: (data) => controller.channel.message(data),
    // site/runs_panel.js: the runs IndexedDB holds
    store: controller.store,
    liveRunId: () => controller.header?.run.run_id ?? null,
    busy: () => Boolean(controller.busy),
    /** @param {() => void} callback */
    onStoredChange: (callback) => controller.storedListeners.add(callback),
    /** @param {number} posted */
    cancelRequested: (posted) => controller.channel.answerAfter(posted, () => controller.cancelFlag || controller.stopReached),
    // site/viewer.js ("Open a trace"): draw a run read from disk with these renderers
    /** @param {Opened} opened */
    showOpened: (opened) => controller.showOpened(opened),
    // site/runs_panel.js: Resume a stored sweep (asked first when the live one is unfinished)
    /** @param {SweepStatus} record */
    resumeStored: (record) => controller.resumeStored(record),
    closeOpened: () => controller.closeOpened(),
    // called once Python is ready: offer to resume a stored unfinished sweep
    ready: () =>
      controller
        .offerResume()
        .then(() => controller.storedChanged())
        .catch((error) => console.error("[composition-lab] reading IndexedDB failed", error)),
  };
}

class Experiment extends ExperimentView {
  // ---- API: start, run, freeze, resume -------------------------------------------------

  // `previously_observed` ({condition: [task ids]}, e.g. the sweep CLI's ledger file) joins
  // this browser's own ledger, sent whole: Python keeps the entries of this model, however
  // spelled (pyapp/predict/exploratory.py same_model: the one rule).
  /** @param {StartOptions} [options] @returns {Promise<SweepState>} */
  async start({ seed, params = undefined, conditions = undefined, previously_observed = undefined, chain_protocol = undefined, sealed = undefined, study_seal = undefined } = {}) {
    return this.exclusive("start", async () => {
      this.requireLoaded();
      this.clearError();
      this.notice(null);
      const ledger = await this.store.ledger();
      const checked = document.querySelectorAll('input[name="condition"]:checked');
      /** @type {Omit<SweepStart, "type" | "id">} */
      const fields = {
        seed: seed ?? this.currentSeed(),
        conditions: conditions ?? [...checked].map((box) => (box instanceof HTMLInputElement ? box.value : "")),
        environment: this.environment(),
        previously_observed: previously_observed ?? {},
        ledger,
        faults: this.models.client.faults.hooks, // injected test faults: recorded in the trace
        // the controlled chain's protocol, chosen explicitly in step 2 (recorded in the trace)
        chain_protocol: chain_protocol ?? this.chosenChainProtocol(),
        // sealed: held-out tasks drawn after every freeze (step 2's choice; recorded in the trace)
        sealed: sealed ?? $("#sweep-sealed", HTMLInputElement).checked,
      };
      const chosen = params ?? this.currentParams();
      if (chosen) fields.params = chosen;
      // a study-level seal (the matrix's `sealed = "study"`): the draw waits for it
      if (study_seal) fields.study_seal = study_seal;
      /** @type {SweepState} */
      let s;
      try {
        s = this.useState(await this.request("sweep_start", fields));
        this.useHeader((await this.request("sweep_header")).header_json);
      } catch (error) {
        this.showError(`Starting the sweep failed: ${messageOf(error)}`);
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
      this.status(`Sweep ${s.run_id.slice(0, 8)} started: seed ${s.seed}, ${s.conditions.join(", ")}; ${s.measure_left} profile trials to measure.`);
      this.storedChanged();
      return s;
    });
  }

  // One sweep_run request; the caller holds `busy`. Python's notice (a run that made no trial
  // although asked) is shown as it is.
  /** @param {Phase} phase */
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

  /** @param {Phase} [phase] @returns {Promise<import("./lab_types.js").RunEnded>} */
  async run(phase = "all") {
    if (!["measure", "heldout", "all"].includes(phase)) throw new Error("phase must be measure, heldout or all");
    return this.exclusive("run", async () => {
      if (!this.state) throw new Error("start a sweep first");
      this.requireLoaded();
      this.clearError();
      this.notice(null);
      this.cancelFlag = false;
      this.channel.set("trouble", 0); // a new run posts its events again (experiment_channel.js)
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
        this.showError(`The ${phase} run failed: ${messageOf(error)}`);
        await this.refresh().catch(() => {}); // Python may be gone; what is stored survives
        this.setData("error");
        throw error;
      }
      this.stopProgress();
      this.storedChanged();
      const s = this.sweepState(); // as refreshed
      const interrupted = s.interruptions ? ` ${s.interruptions} interrupted trial(s) recorded, never scored (each is attempted again as the sweep goes on).` : "";
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
        this.showError(`Freezing failed: ${messageOf(error)}`);
        throw error;
      }
    });
  }

  // Continue a sweep from its stored texts ({header_json, changes_json?, trials_json}:
  // IndexedDB's records, or the sweep CLI's trace.json header and trials.jsonl lines); Python
  // puts them together (pyapp/records/stored.py).
  /**
   * @param {Stored | null} stored @param {string | null} [inFlight]
   * @param {StudySealChoice | null} [studySeal] the matrix's study-level seal (a driver's; the page never makes one)
   * @param {{ [condition: string]: string[] } | null} [previouslyObserved] another ledger's keys (the sweep CLI's file): a sealed sweep matches them at its draw
   * @returns {Promise<SweepState>}
   */
  async resumeFrom(stored, inFlight = null, studySeal = null, previouslyObserved = null) {
    if (typeof stored?.header_json !== "string" || !Array.isArray(stored.trials_json)) {
      throw new Error("resumeFrom needs {header_json, trials_json} (Python's JSON texts)");
    }
    const given = { header_json: stored.header_json, changes_json: stored.changes_json ?? [], trials_json: stored.trials_json };
    return this.exclusive("resume", async () => {
      this.clearError();
      this.notice(null);
      /** @type {Partial<ModelProvenance>} */
      const provenance = /** @type {TraceHeader} */ (JSON.parse(given.header_json)).model ?? {}; // Python's header
      const ledger = await this.store.ledger(); // Python keeps this model's entries
      let texts;
      try {
        await this.followSyntheticModel(provenance);
        const sealed = studySeal ? { study_seal: studySeal } : {};
        const seen = previouslyObserved ? { previously_observed: previouslyObserved } : {};
        this.useState(await this.request("sweep_resume", { ...given, in_flight: inFlight ?? null, ledger, ...sealed, ...seen }));
        texts = await this.resumedTexts(given);
      } catch (error) {
        this.showError(`Resuming failed: ${messageOf(error)}`);
        throw error;
      }
      const header = this.useHeader(texts.header_json);
      this.record = (await this.store.getSweep(header.run.run_id)) ?? null;
      this.receiptJson = this.record?.receipt_json ?? null; // the receipt made at its freeze, kept
      renderReceipt(this.receiptJson);
      this.clearTables();
      this.shownPredictions = new Map();
      this.useTrials(texts.trials_json);
      if (texts.upgraded || this.record?.trials !== this.trials.size) {
        // a sweep new to this browser (the CLI's --resume), or one Python upgraded from an
        // older trace version: store every trial (again), as Python wrote it
        const trialId = (/** @type {string} */ json) => /** @type {Trial} */ (JSON.parse(json)).trial_id; // Python's Trial record
        const trials = texts.trials_json.map((json, seq) => ({ seq, trial_id: trialId(json), json }));
        await this.persist({}, { header: true, trials });
      }
      await this.refresh({ headerJson: texts.header_json });
      this.hideResumePrompt();
      const interrupted = inFlight && this.sweepHeader().interruptions.some((i) => i.trial_id === inFlight) ? ` The trial in flight (${inFlight}) is recorded as interrupted and will be attempted again.` : "";
      const s = this.sweepState();
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
  /** @param {Partial<ModelProvenance>} provenance */
  async followSyntheticModel(provenance) {
    const wanted = provenance.source === "synthetic" ? (provenance.revision ?? null) : null;
    if (wanted !== (this.model().synthetic ?? null)) await this.models.useSynthetic(wanted);
  }

  // What a resume moves back: Python's header (it may record the in-flight trial's
  // interruption), asked once; the trials only when Python upgraded a stored trace of an
  // older schema (trace/1, e.g. converted from IndexedDB version 1) as it resumed it: the
  // page then takes Python's texts of every trial, so that what is stored is one schema.
  /** @param {StoredTexts} stored @returns {Promise<{ header_json: string, trials_json: string[], upgraded: boolean }>} */
  async resumedTexts(stored) {
    const header = (await this.request("sweep_header")).header_json;
    const version = (/** @type {string} */ text) => /** @type {TraceHeader} */ (JSON.parse(text)).schema_version; // Python's headers
    if (version(header) === version(stored.header_json)) {
      return { header_json: header, trials_json: stored.trials_json, upgraded: false };
    }
    const { header_json, trials_json } = await this.request("sweep_trace", { split: true }, 120_000);
    if (header_json === null || trials_json === null) throw new Error("sweep_trace split without its texts");
    return { header_json, trials_json, upgraded: true };
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
  /** @param {TextKind} kind @returns {Promise<string>} */
  async text(kind) {
    if (kind === "header") return (await this.request("sweep_header")).header_json;
    if (kind === "trace") return String((await this.request("sweep_trace", {}, 120_000)).trace_json);
    if (kind === "predictions") return (await this.request("sweep_predictions", {}, 120_000)).predictions_json;
    throw new Error(`text(kind): kind is header, trace or predictions, not ${kind}`);
  }

  // Python's trace; while Python is busy (a run), the texts it assembles one from (the page
  // never assembles a second, different trace).
  async getTrace() {
    if (!this.header) return null;
    if (this.busy || !this.state) return this.heldTexts();
    return /** @type {Trace} */ (JSON.parse(await this.text("trace"))); // Python's trace document
  }

  // What the page holds of the live sweep, as Python's texts (what `sweep_resume` takes).
  heldTexts() {
    return { header_json: this.headerJson, changes_json: [...this.changes], trials_json: this.trials.list() };
  }

  async getPredictions() {
    if (this.busy || !this.state) return this.predictionsDoc;
    await this.loadPredictions(true); // Python refuses (not_frozen) before a freeze
    return this.predictionsDoc;
  }

  // What IndexedDB holds of the current (or latest) sweep: its status and its texts as stored
  // (Python assembles the trace from them: pyapp/records/stored.py).
  async persisted() {
    await this.writer.settled(); // what the events wrote so far
    const stored = this.header ? await this.store.getSweep(this.header.run.run_id) : (await this.store.sweeps())[0];
    if (!stored) return null;
    const texts = await this.store.storedTexts(stored.run_id);
    if (!texts) return null;
    const { in_flight, run_id, phase, finished, updated_at, summary = null } = stored;
    return { run_id, in_flight, phase, finished, updated_at: updated_at ?? null, summary, ...texts };
  }

  // ---- the pause at the freeze, and no run lost (issue 41) ----------------------------------

  // Plain Run, "run through" unticked: measure and freeze, then stop with the receipt shown
  // beside the buttons, so that it can be kept before any held-out result; pressed again (or
  // "3. Run held-out"), the held-out phase. A driver's run("all") (the sweep CLI through
  // window.lab.send) runs through: the pause is this button's.
  async runToFreeze() {
    if (this.sweepState().can_run_heldout) return this.run("heldout");
    if (this.sweepState().measure_left) {
      const measured = await this.run("measure");
      const s = this.sweepState();
      if (measured.cancelled || s.paused || s.measure_left) return measured;
    }
    if (!this.sweepState().can_freeze) return this.run("all"); // nothing to freeze (the control only): Python decides
    await this.freeze();
    this.status(
      `Frozen, paused before the held-out tasks: keep the receipt now (Copy or Download, above), then press Run or ` +
        `"3. Run held-out". Tick "run through" to run without this pause.`,
    );
    $("#receipt-view").scrollIntoView({ block: "nearest" });
    return { state: this.sweepState(), cancelled: false, notice: null };
  }

  // The live sweep's state when it is unfinished (some trials observed, not done), also while a
  // shown run keeps it aside; else null.
  liveUnfinished() {
    const s = this.viewing ? this.viewing.live.state : this.state;
    return s && s.stage !== "done" && s.trials > 0 ? s : null;
  }

  // Run pressed while another run is shown: back to the live sweep first; if it is unfinished,
  // ask whether Run continues it or starts a new one (it stays stored either way). False:
  // the reader cancelled.
  /** @param {string} action */
  async backToLive(action) {
    if (!this.viewing) return true;
    this.closeOpened();
    const unfinished = this.liveUnfinished();
    if (!unfinished) return true;
    const choice = await askAboutUnfinished(unfinished, { action });
    if (choice === "cancel") return false;
    if (choice === "new") await this.start({});
    return true;
  }

  // The runs list's Resume: another stored sweep becomes the live one (asked first when the
  // live one is unfinished); the reader presses Run to continue it.
  /** @param {SweepStatus} record */
  async resumeStored(record) {
    if (this.viewing) this.closeOpened();
    const unfinished = this.liveUnfinished();
    if (unfinished && unfinished.run_id !== record.run_id) {
      const choice = await askAboutUnfinished(unfinished, { action: `Resume ${record.run_id.slice(0, 8)}`, offerContinue: false });
      if (choice !== "new") return null;
    }
    const texts = await this.store.storedTexts(record.run_id);
    if (!texts) throw new Error(`run ${record.run_id.slice(0, 8)} has no stored header`);
    const state = await this.resumeFrom(texts, record.in_flight ?? null);
    this.status(`${$("#experiment-status").textContent} Press Run to continue it.`);
    $("#step-run").scrollIntoView({ block: "start" });
    return state;
  }

  // The freeze receipt, saved as Python wrote it, named after the run's evidence and id.
  downloadReceipt() {
    if (!this.receiptJson || this.viewing) return;
    const header = this.sweepHeader();
    downloadJson(this.receiptJson, fileName("receipt", header.model?.evidence ?? null, header.run.run_id));
  }

  // Copy the receipt's text to the clipboard; where the browser refuses, select the fingerprint
  // so that it can be copied by hand.
  async copyReceipt() {
    const said = $("#receipt-status");
    if (!this.receiptJson) return;
    try {
      await navigator.clipboard.writeText(this.receiptJson);
      const receipt = /** @type {Receipt} */ (JSON.parse(this.receiptJson));
      said.textContent = `Copied the receipt (fingerprint ${receipt.fingerprint}).`;
    } catch (error) {
      const range = document.createRange();
      range.selectNodeContents($("#receipt-fingerprint"));
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      said.textContent = `The browser refused the clipboard (${messageOf(error)}): the fingerprint is selected — copy it with Ctrl+C, or download the receipt.`;
    }
  }

  // ---- journal -------------------------------------------------------------------------

  /** @param {string} prompt */
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

  // ---- downloads, resume prompt, clear -----------------------------------------------------

  // Python's text, saved as it is: 1.0 stays 1.0.
  // Its name says the evidence kind: trace-fixture-<run id>.json.
  // A shown run (opened or stored): its own texts, never the live sweep's.
  /** @param {TextKind} kind */
  async download(kind) {
    const header = this.sweepHeader();
    const own = this.viewing?.texts;
    const text = own ? (kind === "trace" ? own.trace : kind === "predictions" ? own.predictions : null) : await this.text(kind);
    if (text) downloadJson(text, fileName(kind, header.model?.evidence ?? null, header.run.run_id));
  }

  async acceptResume() {
    const chosen = this.offered;
    if (!chosen) return;
    try {
      await this.resumeFrom(await this.store.storedTexts(chosen.run_id), chosen.in_flight);
    } catch {
      return; // shown by resumeFrom
    }
    const phase = chosen.phase;
    if ((phase === "measure" || phase === "heldout" || phase === "all") && this.model().loaded) {
      await this.run(phase).catch(() => {});
    } else if (chosen.phase) {
      this.waitingFor = chosen.model_id ?? null;
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
    const cleared = await this.store.clear();
    const counts = { ...cleared, model_cache: "caches" in self ? await caches.delete(MODEL_CACHE) : false };
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
  /** @param {{ confirmed?: boolean }} [options] */
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
    /** @param {() => unknown} work */
    const ui = (work) => async () => {
      try {
        await work();
      } catch (error) {
        if (this.section.dataset.state !== "error") this.showError(error);
      }
    };
    const ensureSweep = async () => {
      if (!this.state || this.finished()) await this.start({});
    };
    /** @param {string} selector @param {() => unknown} work */
    const on = (selector, work) => $(selector).addEventListener("click", ui(work));
    on("#sweep-run-all", async () => {
      if (!(await this.backToLive("Run"))) return;
      await ensureSweep();
      await ($("#sweep-run-through", HTMLInputElement).checked ? this.run("all") : this.runToFreeze());
    });
    on("#sweep-measure", async () => {
      await ensureSweep();
      await this.run("measure");
    });
    on("#sweep-freeze", () => this.freeze());
    on("#sweep-heldout", () => this.run("heldout"));
    on("#sweep-new", async () => {
      if (this.viewing) this.closeOpened();
      const unfinished = this.liveUnfinished();
      const choice = unfinished ? await askAboutUnfinished(unfinished, { action: "New sweep", offerContinue: false }) : "new";
      if (choice === "new") await this.start({});
    });
    $("#sweep-cancel").addEventListener("click", () => this.cancel());
    on("#download-sweep-trace", () => this.download("trace"));
    on("#download-predictions", () => this.download("predictions"));
    on("#download-receipt", () => this.downloadReceipt());
    on("#download-receipt-results", () => this.downloadReceipt());
    on("#copy-receipt", () => this.copyReceipt());
    on("#clear-stored", () => this.clearStored());
    on("#clear-ledger", () => this.clearLedger());
    on("#resume-accept", () => this.acceptResume());
    on("#resume-discard", () => this.discardResume());
    $("#viewing-close").addEventListener("click", () => this.closeOpened());
    $("#journal-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const prompt = $("#journal-prompt", HTMLTextAreaElement).value;
      $("#journal-status").textContent = "Generating (journal)…";
      this.journal(prompt).then(
        (result) => ($("#journal-status").textContent = `Journal entry ${result.journal} kept (exploration only).`),
        (error) => ($("#journal-status").textContent = `Journal generation failed: ${messageOf(error)}`),
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
      /** @param {StartOptions} [options] */
      start: (options) => this.start(options),
      /** @param {Phase} [phase] */
      run: (phase) => this.run(phase),
      freeze: () => this.freeze(),
      state: () => this.getState(),
      trace: () => this.getTrace(),
      predictions: () => this.getPredictions(),
      /** @param {TextKind} kind */
      text: (kind) => this.text(kind),
      resume: () => this.resume(),
      /** @param {Stored} stored @param {string | null} [inFlight] @param {StudySealChoice | null} [studySeal] @param {{ [condition: string]: string[] } | null} [seen] */
      resumeFrom: (stored, inFlight, studySeal, seen) => this.resumeFrom(stored, inFlight, studySeal, seen),
      cancel: () => this.cancel(),
      // the Cancel once the `trials`-th trial_done from now is sent (null: no stop); Python reads it
      // before each trial (the shared flag `stop_at`, or a told event's answer)
      /** @param {number | null} trials */
      stopAfter: (trials) => {
        this.stopAt = trials === null ? 0 : this.doneSeen + Math.max(1, trials);
        this.channel.set("stop_at", this.stopAt);
      },
      persisted: () => this.persisted(),
      /** @param {Listener} callback */
      onEvent: (callback) => {
        this.listeners.add(callback);
        return () => this.listeners.delete(callback);
      },
      /** @param {string} prompt */
      journal: (prompt) => this.journal(prompt),
      clearStored: () => this.clearStored(),
      /** @param {{ confirmed?: boolean }} [options] */
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
