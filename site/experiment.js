// The Experiment and Journal sections (main thread). Python owns the protocol
// (pyapp/session.py: sweep_start, sweep_resume, sweep_run, sweep_freeze, sweep_state,
// sweep_trace, sweep_predictions, journal_generate); this file sends those requests, draws
// what comes back, persists every trace in IndexedDB (site/store.js) and answers the two
// functions Python calls synchronously during a run:
//
//   xworker.sync.session_event(json)  -> true   a trial_start / trial_done / trial_interrupted event (awaited:
//                                               the trace is stored before the next trial)
//   xworker.sync.cancel_requested()   -> bool   the Cancel flag, polled before every model call
//
// The state API (window.lab.experiment; docs/page.md), every method async, plain JSON:
//   start({seed, params?, conditions})  -> state
//   run(phase)                          -> {state, cancelled}   phase: measure | heldout | all
//   freeze()                            -> {frozen, predictions, state}
//   state()  trace()  predictions()     -> state | trace document | predictions document
//   resume()                            -> state | null  (the latest unfinished stored sweep)
//   resumeFrom(trace, inFlight)         -> state
//   persisted()                         -> {trace, in_flight, run_id, phase, finished} | null
//   cancel()                            -> {cancelling}
//   onEvent(callback)                   -> unsubscribe function
//   journal(prompt)                     -> {entry, journal}     (exploration only)
//   ledger()                            -> [{key, model_id, revision, condition, task_ids}]
//   clearStored()                       -> {sweeps, ledger: 0, model_cache}  (counts deleted; model_cache:
//                                                                  whether cached model files were deleted;
//                                                                  the ledger is kept)
//   clearLedger({confirmed})            -> {ledger}  the ledger alone, after a confirm() that says what
//                                                    is lost (confirmed: true skips it, for tests)
//
// #experiment carries data-state = idle | running | measured | frozen | done | cancelled |
// paused | error. `paused`: three infrastructure failures in a row (worker, load, bridge...)
// stopped the sweep; nothing was scored; the same buttons resume it.
//
// "all" is run as measure → freeze → held-out (three requests, each answered by Python), so
// that the frozen profile's predictions are on the page before the first held-out result.

import { SweepStore } from "./store.js";
import { calibrationPlot, costPlot } from "./plots.js";

const $ = (selector) => document.querySelector(selector);
const FIXTURE_LABEL = "test fixture — not model evidence";
const CONTROL_LABEL = "control — not model evidence";
const ALL_CONDITIONS = ["supplied-program", "model-only", "model-program", "controlled-chain"];
const MODEL_CONDITIONS = ALL_CONDITIONS.slice(1);
const RUN_TIMEOUT_MS = 2_000_000_000; // a sweep of a real model can take hours; Cancel stops it
const BUTTONS = ["#sweep-run-all", "#sweep-measure", "#sweep-freeze", "#sweep-heldout", "#sweep-new"];

const fmt = (value, digits = 3) => (typeof value === "number" ? value.toFixed(digits) : "—");
const yesNo = (value) => (value === true ? "yes" : value === false ? "no" : "—");

export function setupExperiment({ request, models, environment, currentSeed }) {
  const section = $("#experiment");
  const store = new SweepStore();
  const listeners = new Set();

  let state = null; // Python's sweep state (pyapp.session.Session.state)
  let trace = null; // the latest trace document
  let record = null; // the IndexedDB record of the current sweep
  let tasks = new Map(); // task id -> task record of the current trace
  let predictionsDoc = null; // the latest predictions document (after a freeze)
  let shownPredictions = new Map(); // condition -> [Prediction] shown in the table
  let busy = null; // the name of the request in flight ("run", "freeze", ...)
  let cancelFlag = false;
  let lastError = null;
  let lastCancelled = false;
  const progress = { done: 0, total: 0, started: 0, current: "", timer: null };

  // ---- small helpers -------------------------------------------------------------------

  function setData(value) {
    section.dataset.state = value;
  }

  function derivedState() {
    if (!state) return "idle";
    const models = state.conditions.filter((c) => MODEL_CONDITIONS.includes(c));
    const allFrozen = models.every((c) => state.frozen.includes(c));
    if (state.measure_left === 0 && state.heldout_left === 0 && allFrozen) return "done";
    if (state.frozen.length > 0 && allFrozen) return "frozen";
    if (state.measure_left === 0) return "measured";
    return "idle";
  }

  function status(text) {
    $("#experiment-status").textContent = text;
  }

  function notice(text) {
    const line = $("#experiment-notice");
    line.hidden = !text;
    line.textContent = text ?? "";
  }

  function showError(error) {
    lastError = error?.message ?? String(error);
    const line = $("#experiment-error");
    line.hidden = false;
    line.textContent = lastError;
    setData("error");
  }

  function clearError() {
    lastError = null;
    $("#experiment-error").hidden = true;
  }

  function model() {
    return models.state();
  }

  function isFixture() {
    return (trace?.model?.evidence ?? model().evidence) === "fixture";
  }

  function requireIdle(what) {
    if (busy) throw new Error(`cannot ${what} while "${busy}" is in progress`);
  }

  function requireLoaded() {
    if (!model().loaded) throw new Error("load a model (with consent) in the Models panel first");
  }

  async function exclusive(name, work) {
    requireIdle(name);
    busy = name;
    refreshControls();
    try {
      return await work();
    } finally {
      busy = null;
      refreshControls();
    }
  }

  function selectedConditions() {
    return [...document.querySelectorAll('input[name="condition"]:checked')].map((box) => box.value);
  }

  function emit(event) {
    for (const callback of listeners) {
      try {
        callback(event);
      } catch (error) {
        console.error("[composition-lab] experiment listener failed", error);
      }
    }
  }

  // ---- persistence -----------------------------------------------------------------------

  function finished() {
    return Boolean(state && state.measure_left === 0 && state.heldout_left === 0 && derivedState() === "done");
  }

  async function persist(fields = {}) {
    if (!trace) return;
    record = {
      run_id: trace.run.run_id,
      trace,
      in_flight: null,
      phase: record?.run_id === trace.run.run_id ? record.phase : null,
      finished: finished(),
      model_id: trace.model?.model_id ?? null,
      revision: trace.model?.revision ?? null,
      trials: trace.trials.length,
      ...fields,
    };
    await store.putSweep(record);
  }

  async function noteObserved(trial) {
    const task = tasks.get(trial.task_id);
    if (!task || task.split !== "heldout" || !MODEL_CONDITIONS.includes(trial.condition) || !trace.model) return;
    await store.addObserved(trace.model.model_id, trace.model.revision, trial.condition, [trial.task_id]);
  }

  function useTrace(document) {
    trace = document;
    tasks = new Map(trace.tasks.map((task) => [task.id, task]));
  }

  async function refresh({ withPredictions = true } = {}) {
    state = await request("sweep_state");
    useTrace((await request("sweep_trace")).trace);
    predictionsDoc = withPredictions && state.frozen.length ? (await request("sweep_predictions")).predictions : null;
    await persist({ phase: record?.phase ?? null });
    renderAll();
  }

  // ---- the functions Python calls --------------------------------------------------------

  // Once the page is going away (reload, tab closed), later events are the teardown's doing
  // (a generation cut off by the dying model worker): they are not stored, so the stored
  // trial_start stays in flight and is recorded as interrupted on resume.
  let unloading = false;
  window.addEventListener("pagehide", () => (unloading = true));

  async function sessionEvent(json) {
    if (unloading) return false;
    const event = JSON.parse(json);
    if (event.event === "trial_start") {
      progress.current = `${event.condition} · ${event.task_id} (${event.phase})`;
      await persist({ in_flight: event.trial_id });
    } else if (event.event === "trial_done") {
      useTrace(event.trace);
      await persist({ in_flight: null });
      await noteObserved(event.trial);
      progress.done += 1;
      addResultRow(event.trial);
      fillObservation(event.trial);
      $("#sweep-results-caption").textContent = resultsCaption();
    } else if (event.event === "trial_interrupted") {
      // The user's Cancel or an infrastructure failure (worker, load, bridge: event.code)
      // cut this trial short: Python kept it under `interruptions` (never scored) and will
      // attempt it again; it is no longer in flight.
      useTrace(event.trace);
      await persist({ in_flight: null });
    }
    renderProgress();
    emit(event);
    return true;
  }

  function cancelRequested() {
    return cancelFlag;
  }

  // ---- API: start, run, freeze, resume -------------------------------------------------

  // `previously_observed` ({condition: [task ids]}, e.g. the sweep CLI's ledger file) joins
  // what this browser's own ledger holds for the model.
  async function start({ seed, params = undefined, conditions = undefined, previously_observed = undefined } = {}) {
    return exclusive("start", async () => {
      requireLoaded();
      clearError();
      notice(null);
      const provenance = model().provenance;
      const previously = await store.observedFor(provenance.model_id, provenance.revision);
      for (const [condition, ids] of Object.entries(previously_observed ?? {})) {
        previously[condition] = [...new Set([...(previously[condition] ?? []), ...ids])];
      }
      const fields = {
        seed: seed ?? currentSeed(),
        conditions: conditions ?? selectedConditions(),
        environment: environment(),
        previously_observed: previously,
        faults: models.client.faults.hooks, // injected test faults: recorded in the trace
      };
      if (params) fields.params = params;
      try {
        state = await request("sweep_start", fields);
        useTrace((await request("sweep_trace")).trace);
      } catch (error) {
        showError(`Starting the sweep failed: ${error.message}`);
        throw error;
      }
      predictionsDoc = null;
      shownPredictions = new Map();
      lastCancelled = false;
      record = null;
      progress.done = 0;
      progress.total = state.measure_left + state.heldout_left;
      await persist({ phase: null });
      clearTables();
      renderAll();
      status(`Sweep ${state.run_id.slice(0, 8)} started: seed ${state.seed}, ${state.conditions.join(", ")}; ${state.measure_left} profile trials to measure.`);
      return state;
    });
  }

  function pendingFor(phase) {
    if (phase === "measure") return state.measure_left;
    if (phase === "heldout") return state.heldout_left;
    return state.measure_left + state.heldout_left;
  }

  function startProgress(phase) {
    progress.done = 0;
    progress.total = pendingFor(phase);
    progress.started = performance.now();
    progress.current = "";
    clearInterval(progress.timer);
    progress.timer = setInterval(renderProgress, 500);
    renderProgress();
  }

  function stopProgress() {
    clearInterval(progress.timer);
    progress.timer = null;
    progress.current = "";
    renderProgress();
  }

  // One sweep_run request; the caller holds `busy`.
  async function runOne(phase) {
    const trialsBefore = state.trials;
    const result = await request("sweep_run", { phase }, RUN_TIMEOUT_MS);
    state = result.state;
    if (phase === "heldout" && state.trials === trialsBefore && !result.cancelled && !state.paused && state.heldout_left === 0) {
      notice(
        "Refused: every held-out task has already been observed and scored once under this frozen profile. " +
          "No new trial was made (each held-out task is scored once per frozen profile).",
      );
    }
    return result;
  }

  async function doFreeze() {
    const result = await request("sweep_freeze");
    state = result.state;
    shownPredictions = new Map(result.predictions.map((p) => [p.condition, p.predictions]));
    useTrace((await request("sweep_trace")).trace);
    predictionsDoc = (await request("sweep_predictions")).predictions;
    await persist();
    renderAll();
    return result;
  }

  async function run(phase = "all") {
    if (!["measure", "heldout", "all"].includes(phase)) throw new Error("phase must be measure, heldout or all");
    return exclusive("run", async () => {
      if (!state) throw new Error("start a sweep first");
      requireLoaded();
      clearError();
      notice(null);
      cancelFlag = false;
      lastCancelled = false;
      await persist({ phase });
      setData("running");
      startProgress(phase);
      status(`Running ${phase === "all" ? "measure → freeze → held-out" : phase}…`);
      let result;
      try {
        if (phase === "all") {
          result = await runOne("measure");
          const halted = () => result.cancelled || state.paused;
          if (!halted() && state.can_freeze) await doFreeze();
          if (!halted()) result = await runOne("heldout");
        } else {
          result = await runOne(phase);
        }
        lastCancelled = result.cancelled;
        await refresh();
        await persist({ phase: null }); // only a page that died mid-run leaves a phase
      } catch (error) {
        stopProgress();
        showError(`The ${phase} run failed: ${error.message}`);
        try {
          await refresh();
        } catch {
          // Python may be gone; the stored trace is what survives
        }
        setData("error");
        throw error;
      }
      stopProgress();
      const interrupted = state.interruptions ? ` ${state.interruptions} interrupted trial(s) recorded and attempted again.` : "";
      const summary = `${state.trials} trials observed; ${state.measure_left} profile and ${state.heldout_left} held-out left.${interrupted}`;
      if (state.paused) {
        const cause = state.paused;
        status(
          `Paused: ${cause.in_a_row} infrastructure failures in a row (last: ${cause.code} — ${cause.message}). ` +
            `Nothing was scored; the attempts are kept as interruptions. ${summary} Resume with the same buttons.`,
        );
        setData("paused");
        return { state, cancelled: false, paused: cause };
      }
      status(result.cancelled ? `Cancelled. ${summary} Resume with the same buttons.` : `Finished ${phase}. ${summary}`);
      setData(result.cancelled ? "cancelled" : derivedState());
      return { state, cancelled: result.cancelled, paused: null };
    });
  }

  async function freeze() {
    return exclusive("freeze", async () => {
      if (!state) throw new Error("start a sweep first");
      clearError();
      notice(null);
      try {
        const result = await doFreeze();
        status(`Frozen: ${result.frozen.map((f) => `${f.profile.condition} ${f.sha256.slice(0, 12)}…${f.exploratory ? " (exploratory)" : ""}`).join("; ")}.`);
        setData(derivedState());
        return result;
      } catch (error) {
        showError(`Freezing failed: ${error.message}`);
        throw error;
      }
    });
  }

  async function resumeFrom(traceDocument, inFlight = null) {
    return exclusive("resume", async () => {
      clearError();
      notice(null);
      const provenance = traceDocument?.model ?? {};
      const previously = provenance.model_id ? await store.observedFor(provenance.model_id, provenance.revision) : {};
      try {
        state = await request("sweep_resume", { trace: traceDocument, in_flight: inFlight ?? null, previously_observed: previously });
      } catch (error) {
        showError(`Resuming failed: ${error.message}`);
        throw error;
      }
      const stored = await store.getSweep(traceDocument.run.run_id);
      record = stored ?? null;
      clearTables();
      shownPredictions = new Map();
      await refresh();
      if (predictionsDoc) {
        shownPredictions = new Map(predictionsDoc.conditions.map((c) => [c.frozen.profile.condition, c.predictions]));
        renderPredictions();
      }
      hideResumePrompt();
      const interrupted = inFlight && trace.interruptions.some((i) => i.trial_id === inFlight) ? ` The trial in flight (${inFlight}) is recorded as interrupted and will be attempted again.` : "";
      status(`Resumed sweep ${state.run_id.slice(0, 8)}: ${state.trials} trials kept; ${state.measure_left} profile and ${state.heldout_left} held-out left.${interrupted}`);
      setData(derivedState());
      return state;
    });
  }

  async function resume() {
    requireIdle("resume");
    const stored = await store.latestUnfinished();
    if (!stored) return null;
    return resumeFrom(stored.trace, stored.in_flight);
  }

  function cancel() {
    const cancelling = busy === "run";
    cancelFlag = true;
    if (cancelling) {
      models.client.cancel(); // stops the generation in flight (interrupt, then terminate)
      status("Cancelling: the generation in flight is stopped; no new trial starts.");
    }
    return Promise.resolve({ cancelling });
  }

  async function getState() {
    if (busy || !state) return state;
    state = await request("sweep_state");
    return state;
  }

  async function getTrace() {
    if (busy || !state) return trace;
    useTrace((await request("sweep_trace")).trace);
    return trace;
  }

  async function getPredictions() {
    if (busy || !state) return predictionsDoc;
    if (!state.frozen.length) throw new Error("not_frozen: nothing is frozen yet");
    predictionsDoc = (await request("sweep_predictions")).predictions;
    return predictionsDoc;
  }

  async function persisted() {
    const stored = trace ? await store.getSweep(trace.run.run_id) : (await store.sweeps())[0];
    if (!stored) return null;
    const { trace: storedTrace, in_flight, run_id, phase, finished: done, updated_at } = stored;
    return { trace: storedTrace, in_flight, run_id, phase, finished: done, updated_at };
  }

  // ---- journal -------------------------------------------------------------------------

  async function journal(prompt) {
    return exclusive("journal", async () => {
      requireLoaded();
      const result = await request("journal_generate", { prompt }, 600_000);
      addJournalEntry(result.entry);
      if (state) {
        useTrace((await request("sweep_trace")).trace);
        state = await request("sweep_state");
        await persist();
      }
      return result;
    });
  }

  // ---- drawing: progress and controls -----------------------------------------------------

  function renderProgress() {
    const bar = $("#sweep-bar");
    bar.max = Math.max(progress.total, 1);
    bar.value = progress.done;
    $("#sweep-count").textContent = `${progress.done} / ${progress.total} trials`;
    $("#sweep-current").textContent = progress.current ? `now: ${progress.current}` : "";
    if (!progress.timer) {
      $("#sweep-elapsed").textContent = "";
      $("#sweep-eta").textContent = "";
      return;
    }
    const elapsed = (performance.now() - progress.started) / 1000;
    $("#sweep-elapsed").textContent = `elapsed ${elapsed.toFixed(0)} s`;
    const left = progress.total - progress.done;
    $("#sweep-eta").textContent = progress.done > 0 ? `ETA ${((elapsed / progress.done) * left).toFixed(0)} s` : "ETA —";
  }

  function refreshControls() {
    const m = model();
    const loaded = m.loaded;
    const idle = !busy;
    const running = busy === "run";
    const hasSweep = Boolean(state);
    $("#sweep-run-all").disabled = !(loaded && idle);
    $("#sweep-measure").disabled = !(loaded && idle);
    $("#sweep-freeze").disabled = !(idle && hasSweep && state.can_freeze);
    $("#sweep-heldout").disabled = !(loaded && idle && hasSweep && state.can_run_heldout);
    $("#sweep-new").disabled = !(loaded && idle);
    $("#sweep-cancel").disabled = !running;
    for (const box of document.querySelectorAll('input[name="condition"]')) box.disabled = !(loaded && idle);
    $("#journal-generate").disabled = !(loaded && idle);
    $("#download-sweep-trace").disabled = !(idle && trace);
    $("#download-predictions").disabled = !(idle && predictionsDoc);
    $("#resume-accept").disabled = !idle;
    const evidence = $("#experiment-evidence");
    const fixture = trace ? trace.model?.evidence === "fixture" : m.loaded && m.evidence === "fixture";
    evidence.hidden = !fixture;
    evidence.textContent = fixture ? `This sweep uses the ${FIXTURE_LABEL}: every number below is a pipeline check, ${FIXTURE_LABEL}.` : "";
    $("#experiment-hint").textContent = loaded
      ? `Model: ${m.model_id}${m.evidence === "fixture" ? ` (${FIXTURE_LABEL})` : ""}. Seed from the Tasks section.`
      : "Load a model above first (the test fixture works, but is not model evidence).";
  }

  // ---- drawing: results table and the raw record ---------------------------------------

  function conditionLabel(condition) {
    if (condition === "supplied-program") return `supplied program (${CONTROL_LABEL})`;
    return isFixture() ? `${condition} (${FIXTURE_LABEL})` : condition;
  }

  function verdictOf(trial) {
    if (trial.correct) return ["correct", "correct"];
    if (trial.failure) return ["failed", "incorrect"];
    return ["wrong", "incorrect"];
  }

  function outcomeText(trial) {
    const f = trial.failure ?? trial.chain?.halt;
    if (trial.chain?.status === "unsupported") return "unsupported (no route; zero model calls)";
    if (!f) return trial.outcome;
    const limit = f.limit ? ` (${f.limit}${f.maximum !== null ? ` > ${f.maximum}` : ""})` : "";
    return `${trial.outcome}${trial.outcome === f.code ? "" : ` [halt: ${f.code}]`}${limit} — ${f.stage}`;
  }

  function resultsCaption() {
    if (!trace) return "No trials yet.";
    const { trials, correct, failed } = trace.summary;
    const label = isFixture() ? ` — ${FIXTURE_LABEL}` : "";
    return `Sweep ${trace.run.run_id.slice(0, 8)}: ${trials} trials, ${correct} correct, ${failed} failed${label}. Supplied-program rows are the ${CONTROL_LABEL}.`;
  }

  function addResultRow(trial) {
    const body = $("#sweep-results tbody");
    const existing = body.querySelector(`tr[data-trial-id="${CSS.escape(trial.trial_id)}"]`);
    const row = document.createElement("tr");
    row.dataset.trialId = trial.trial_id;
    row.dataset.condition = trial.condition;
    row.dataset.evidence = trial.evidence;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = trial.task_id;
    row.append(th);
    const cell = (text, className) => {
      const td = row.insertCell();
      td.textContent = text;
      if (className) td.className = className;
      return td;
    };
    cell(conditionLabel(trial.condition), trial.evidence === "model" ? "" : "fixture-label");
    cell(tasks.get(trial.task_id)?.split ?? "");
    const [verdict, className] = verdictOf(trial);
    cell(verdict, className);
    cell(outcomeText(trial));
    cell(`${trial.input_tokens ?? "—"} / ${trial.output_tokens ?? "—"}`, "num");
    cell(fmt(trial.timings.total_ms, 1), "num");
    const open = document.createElement("button");
    open.type = "button";
    open.textContent = "Open";
    open.setAttribute("aria-label", `Open the raw record of ${trial.trial_id}`);
    open.addEventListener("click", () => openRecord(trial.trial_id));
    row.insertCell().append(open);
    if (existing) existing.replaceWith(row);
    else body.append(row);
  }

  function renderResults() {
    $("#sweep-results tbody").replaceChildren();
    for (const trial of trace?.trials ?? []) addResultRow(trial);
    $("#sweep-results-caption").textContent = resultsCaption();
  }

  function h(tag, text, attrs = {}) {
    const node = document.createElement(tag);
    if (text !== null && text !== undefined) node.textContent = text;
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    return node;
  }

  function dl(rows) {
    const list = h("dl", null, { class: "facts" });
    for (const [term, value] of rows) list.append(h("dt", term), h("dd", value === null || value === undefined ? "—" : String(value)));
    return list;
  }

  function table(headers, rows, className) {
    const t = h("table", null, className ? { class: className } : {});
    const head = t.createTHead().insertRow();
    for (const header of headers) head.append(h("th", header, { scope: "col" }));
    const body = t.createTBody();
    for (const cells of rows) {
      const row = body.insertRow();
      for (const value of cells) row.insertCell().textContent = value === null || value === undefined ? "—" : String(value);
    }
    return t;
  }

  function completionFacts(c) {
    return [
      ["Finish reason", c.finish_reason ?? "none"],
      ["Input / output tokens", `${c.input_tokens ?? "—"} / ${c.output_tokens ?? "—"}`],
      ["Generation ms", fmt(c.generation_ms, 1)],
      ["Failure", c.failure ? `${c.failure.code}: ${c.failure.message}` : "none"],
    ];
  }

  function openRecord(trialId) {
    const trial = trace?.trials.find((t) => t.trial_id === trialId);
    if (!trial) return;
    const body = $("#record-body");
    body.replaceChildren();
    body.dataset.trialId = trialId;
    body.append(
      dl([
        ["Trial", trial.trial_id],
        ["Evidence", `${trial.evidence}: ${trial.evidence_note}`],
        ["Verdict", `${verdictOf(trial)[0]} (${trial.outcome}); result ${trial.result ?? "none"}, expected ${trial.expected}`],
        ["Failure", trial.failure ? `${trial.failure.code} at ${trial.failure.stage}: ${trial.failure.message}` : "none"],
        ["Tokens in / out", `${trial.input_tokens ?? "—"} / ${trial.output_tokens ?? "—"}`],
        [
          "Timings ms",
          Object.entries(trial.timings)
            .map(([k, v]) => `${k.replace(/_ms$/, "")} ${fmt(v, 3)}`)
            .join(" · "),
        ],
      ]),
    );
    if (trial.prompt) {
      body.append(h("h4", `Prompt (${trial.prompt.template_id}, sha256 ${trial.prompt.template_sha256.slice(0, 12)}…)`));
      body.append(h("pre", trial.prompt.text, { class: "record-prompt" }));
    }
    if (trial.completion) {
      body.append(h("h4", "Raw completion"));
      body.append(h("pre", trial.completion.text, { class: "record-completion" }));
      body.append(dl(completionFacts(trial.completion)));
    }
    if (trial.condition !== "controlled-chain") {
      body.append(h("h4", "Parse result"));
      const parsed =
        trial.program !== null
          ? `program: ${JSON.stringify(trial.program)}`
          : trial.condition === "model-only" && trial.result !== null
            ? `integer: ${trial.result}`
            : trial.failure && ["parse", "generation"].includes(trial.failure.stage)
              ? `nothing parsed (${trial.failure.code}); no interpreter work`
              : "—";
      body.append(h("p", parsed, { class: "record-parse" }));
    }
    if (trial.steps.length) {
      body.append(h("h4", `Interpreter steps (${trial.steps.length})`));
      body.append(table(["Path", "Op", "Operands", "Result"], trial.steps.map((s) => [s.path, s.op, s.operands.join(", "), s.result])));
    }
    if (trial.chain) {
      const c = trial.chain;
      body.append(h("h4", `Chain route: ${c.status}`));
      body.append(
        dl([
          ["Calls", `${c.calls.length} made of ${c.planned_calls} planned; ${c.unobserved_calls} unobserved`],
          ["Halt", c.halt ? `${c.halt.code}: ${c.halt.message}` : "none"],
          ["First local error", c.first_local_error === null ? "none" : `call ${c.first_local_error}`],
          ["All steps correct", yesNo(c.all_steps_correct)],
          ["Final correct", yesNo(c.final_correct)],
          ["Reserved tokens in / out", `${c.reserved_input_tokens} / ${c.reserved_output_tokens}`],
          ["Used tokens in / out", `${c.used_input_tokens ?? "—"} / ${c.used_output_tokens ?? "—"}`],
        ]),
      );
      if (c.calls.length) {
        body.append(
          table(
            ["#", "Op", "Left (source)", "Right (source)", "Completion", "Finish", "Parsed", "Local expected", "Locally correct"],
            c.calls.map((call) => [
              call.index,
              call.op,
              `${call.left} (${call.left_source})`,
              `${call.right} (${call.right_source})`,
              JSON.stringify(call.completion.text),
              call.completion.finish_reason ?? call.completion.failure?.code ?? "—",
              call.parsed,
              call.local_expected,
              yesNo(call.local_correct),
            ]),
            "chain-calls",
          ),
        );
        for (const call of c.calls) {
          const details = h("details");
          details.append(h("summary", `Call ${call.index} prompt (${call.prompt.template_id})`), h("pre", call.prompt.text));
          body.append(details);
        }
      }
    }
    const raw = h("details");
    raw.append(h("summary", "Whole record as JSON"), h("pre", JSON.stringify(trial, null, 2), { class: "record-json" }));
    body.append(raw);
    $("#record-heading").textContent = `Raw record: ${trial.trial_id}`;
    $("#record-dialog").showModal();
  }

  // ---- drawing: freeze view, predictions, scores, plots --------------------------------

  function frozenProfiles() {
    return predictionsDoc ? predictionsDoc.conditions.map((c) => c.frozen) : [];
  }

  // `UNPINNED: …` when the model was asked for by a branch (predictions document).
  function revisionNote(condition) {
    return predictionsDoc?.conditions.find((c) => c.frozen.profile.condition === condition)?.revision_note ?? "—";
  }

  function renderFreeze() {
    const view = $("#freeze-view");
    const profiles = frozenProfiles();
    if (!profiles.length) {
      view.replaceChildren(h("p", "Nothing frozen yet.", { class: "muted" }));
      return;
    }
    view.replaceChildren();
    for (const f of profiles) {
      const article = h("article", null, { class: "frozen", "data-condition": f.profile.condition, "data-sha256": f.sha256 });
      article.dataset.exploratory = String(f.exploratory);
      article.append(h("h4", `${f.profile.condition}${f.profile.evidence === "fixture" ? ` — ${FIXTURE_LABEL}` : ""}`));
      const sha = h("p", "SHA-256 ", { class: "sha" });
      sha.append(h("code", f.sha256, { class: "sha256" }));
      article.append(sha);
      article.append(
        h(
          "p",
          f.exploratory
            ? `EXPLORATORY: ${f.exploratory_reason}. Its scores are not a confirmatory test.`
            : "Confirmatory: no held-out task of this condition was observed before the freeze.",
          { class: f.exploratory ? "exploratory" : "confirmatory" },
        ),
      );
      article.append(
        dl([
          ["Model", `${f.model_id} @ ${f.model_revision} (${f.model_dtype}, ${f.backend ?? "no backend"})`],
          ["Revision", revisionNote(f.profile.condition)],
          ["Seed / generator", `${f.seed} / ${f.generator_version}`],
          ["Prompt templates", Object.entries(f.prompt_templates).map(([id, sha]) => `${id} ${sha.slice(0, 12)}…`).join("; ")],
          ["Held-out tasks predicted", f.heldout_task_ids.join(", ")],
          ["Profile trials", f.profile.trial_ids.length],
          ["Frozen at", f.frozen_at],
        ]),
      );
      article.append(
        table(
          ["Op", "Trials", "Successes", "Rate", "95% Wilson", "Mean cost ms (gen + exec)", "Mean tokens in / out"],
          f.profile.ops.map((o) => [
            o.op,
            o.trials,
            o.successes,
            fmt(o.rate),
            `[${fmt(o.wilson_low)}, ${fmt(o.wilson_high)}]`,
            fmt(o.mean_cost_ms, 1),
            `${fmt(o.mean_input_tokens, 1)} / ${fmt(o.mean_output_tokens, 1)}`,
          ]),
          "profile-ops",
        ),
      );
      const e = f.profile.encoding;
      article.append(
        h(
          "p",
          `Encoding probes: ${e.complete_pairs} complete pairs; agreement ${fmt(e.agreement_rate)}; JSON rate ${fmt(e.json_rate)}; prose rate ${fmt(e.prose_rate)}.`,
        ),
      );
      article.append(
        table(
          ["Pair", "Op", "JSON correct", "Prose correct", "Agree"],
          e.pairs.map((p) => [p.pair, p.op, yesNo(p.json_correct), yesNo(p.prose_correct), yesNo(p.agree)]),
          "profile-encoding",
        ),
      );
      view.append(article);
    }
  }

  function observationCells(row, observed) {
    const cells = row.cells;
    cells[6].textContent = observed ? observed.outcome : "pending";
    cells[6].className = observed ? (observed.final_correct ? "correct" : "incorrect") : "muted";
    cells[7].textContent = observed ? yesNo(observed.final_correct) : "";
    cells[8].textContent = observed ? (observed.all_steps_correct === null ? "unobserved (whole task)" : yesNo(observed.all_steps_correct)) : "";
    cells[9].textContent = observed ? fmt(observed.cost_ms, 1) : "";
    row.dataset.observed = String(Boolean(observed));
  }

  function renderPredictions() {
    const body = $("#predictions-table tbody");
    body.replaceChildren();
    const observations = new Map();
    for (const result of predictionsDoc?.conditions ?? []) {
      for (const o of result.observations) observations.set(`${result.frozen.profile.condition}/${o.task_id}`, o);
    }
    let count = 0;
    for (const [condition, predictions] of shownPredictions) {
      for (const p of predictions) {
        count += 1;
        const row = body.insertRow();
        row.dataset.trialId = `${condition}/${p.task_id}`;
        row.insertCell().textContent = condition;
        const th = h("th", p.task_id, { scope: "row" });
        row.append(th);
        row.insertCell().textContent = p.ops.join(" → ") || "—";
        row.insertCell().textContent = p.probability === null ? `— (${p.note})` : fmt(p.probability, 4);
        row.insertCell().textContent = fmt(p.cost_ms, 1);
        row.insertCell().textContent = `${fmt(p.input_tokens, 1)} / ${fmt(p.output_tokens, 1)}`;
        for (let i = 0; i < 4; i++) row.insertCell();
        observationCells(row, observations.get(`${condition}/${p.task_id}`) ?? null);
      }
    }
    $("#predictions-caption").textContent = count
      ? `${count} predictions from the frozen profiles${isFixture() ? ` — ${FIXTURE_LABEL}` : ""}`
      : "No predictions yet.";
  }

  // A held-out trial just arrived: put its observation beside its prediction at once.
  function fillObservation(trial) {
    const row = $("#predictions-table tbody").querySelector(`tr[data-trial-id="${CSS.escape(trial.trial_id)}"]`);
    if (!row) return;
    const t = trial.timings;
    const cost = t.generation_ms === null && t.execution_ms === null ? null : (t.generation_ms ?? 0) + (t.execution_ms ?? 0);
    observationCells(row, {
      outcome: trial.outcome,
      final_correct: trial.correct,
      all_steps_correct: trial.chain ? trial.chain.all_steps_correct : null,
      cost_ms: cost,
    });
  }

  function renderScores() {
    const view = $("#scores");
    const scored = predictionsDoc?.conditions.filter((c) => c.observations.length) ?? [];
    if (!scored.length) {
      view.replaceChildren(h("p", "No scores yet: they appear after the held-out run.", { class: "muted" }));
      $("#plot-calibration").replaceChildren();
      $("#plot-cost").replaceChildren();
      return;
    }
    view.replaceChildren();
    if (isFixture()) view.append(h("p", `Scores of the ${FIXTURE_LABEL}: a pipeline check.`, { class: "fixture-label" }));
    view.append(
      table(
        ["Condition", "n", "Brier, final answer (naive proxy)", "Brier, all steps", "Cost MAE ms", "Cost signed error ms", "Cost relative error", "Held-out attempts interrupted and attempted again"],
        scored.map((c) => {
          const s = c.scores;
          const cut = c.interrupted;
          return [
            `${c.frozen.profile.condition}${c.frozen.exploratory ? " (exploratory)" : ""}`,
            s.n,
            fmt(s.brier_final_proxy, 4),
            c.frozen.profile.condition === "controlled-chain" ? fmt(s.brier_all_steps, 4) : "— (internal steps unobserved)",
            fmt(s.cost.mean_absolute_error_ms, 1),
            fmt(s.cost.mean_signed_error_ms, 1),
            fmt(s.cost.mean_relative_error, 3),
            cut
              ? `${cut.total} (cancelled ${cut.cancelled}, infrastructure ${cut.infrastructure}, page closed ${cut.page_closed}; ` +
                `attempted again ${cut.attempted_again}; cut-off output shown before the retry: ${cut.output_shown})`
              : "—",
          ];
        }),
        "scores-table",
      ),
    );
    view.append(h("p", predictionsDoc.interpretation, { class: "muted" }));
    const doc = { ...predictionsDoc, conditions: scored };
    const fixture = isFixture();
    $("#plot-calibration").replaceChildren(calibrationPlot(doc, { fixture }));
    $("#plot-cost").replaceChildren(costPlot(doc, { fixture }));
  }

  function addJournalEntry(entry) {
    const item = h("li");
    const c = entry.completion;
    const asked = h("p");
    asked.append(h("strong", "Prompt: "), entry.prompt);
    item.append(asked);
    item.append(h("pre", c.text, { class: "journal-completion" }));
    item.append(
      h(
        "p",
        `finish ${c.finish_reason ?? c.failure?.code ?? "none"} · tokens in ${c.input_tokens ?? "—"} / out ${c.output_tokens ?? "—"} · ${fmt(c.generation_ms, 1)} ms · ${entry.at}`,
        { class: "muted" },
      ),
    );
    $("#journal-list").append(item);
  }

  function clearTables() {
    $("#sweep-results tbody").replaceChildren();
    $("#predictions-table tbody").replaceChildren();
  }

  function renderAll() {
    renderResults();
    renderFreeze();
    if (!shownPredictions.size && predictionsDoc) {
      shownPredictions = new Map(predictionsDoc.conditions.map((c) => [c.frozen.profile.condition, c.predictions]));
    }
    renderPredictions();
    renderScores();
    renderProgress();
    refreshControls();
  }

  // ---- downloads, resume prompt, clear -----------------------------------------------------

  // A document exactly as Python wrote its numbers: JSON.parse's source text (where the
  // browser offers it) keeps 1.0 as 1.0, so the file matches the schema's number types.
  function keepNumbers(key, value, context) {
    if (typeof value === "number" && typeof JSON.rawJSON === "function" && context?.source && /[.eE]/.test(context.source)) {
      return JSON.rawJSON(context.source);
    }
    return value;
  }

  async function pythonDocument(type, key) {
    const { text } = await request(type, {}, 120_000, { raw: true });
    return JSON.parse(text, keepNumbers).result[key];
  }

  function download(name, data) {
    const blob = new Blob([JSON.stringify(data, null, 2) + "\n"], { type: "application/json" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  }

  let offered = null; // the stored record the resume prompt offers

  async function offerResume() {
    offered = await store.latestUnfinished();
    if (!offered || (trace && offered.run_id === trace.run.run_id)) {
      hideResumePrompt();
      return;
    }
    const s = offered.trace.summary;
    const fixture = offered.trace.model?.evidence === "fixture" ? ` (${FIXTURE_LABEL})` : "";
    $("#resume-text").textContent =
      `An unfinished sweep is stored in this browser: ${offered.run_id.slice(0, 8)}, ` +
      `${offered.model_id}${fixture}, seed ${offered.trace.run.seed}, ${s.trials} trials observed` +
      `${offered.in_flight ? `; ${offered.in_flight} was in flight (it will be recorded as interrupted)` : ""}. ` +
      `Resume continues with the next unobserved trial${offered.phase ? ` (load ${offered.model_id} first to continue running)` : ""}.`;
    $("#resume-prompt").hidden = false;
  }

  function hideResumePrompt() {
    offered = null;
    $("#resume-prompt").hidden = true;
  }

  async function acceptResume() {
    if (!offered) return;
    const chosen = offered;
    try {
      await resumeFrom(chosen.trace, chosen.in_flight);
    } catch {
      return; // shown by resumeFrom
    }
    if (chosen.phase && model().loaded) {
      const phase = chosen.phase;
      await run(phase).catch(() => {});
    } else if (chosen.phase) {
      status(`${$("#experiment-status").textContent} Load ${chosen.model_id} and press Run to continue.`);
    }
  }

  async function discardResume() {
    if (!offered) return;
    await store.deleteSweep(offered.run_id);
    $("#stored-status").textContent = `Discarded stored sweep ${offered.run_id.slice(0, 8)}.`;
    await offerResume();
  }

  // transformers.js keeps downloaded model files in this Cache Storage entry.
  const MODEL_CACHE = "transformers-cache";

  // Stored sweeps and cached model files; the ledger stays (it is what marks a later freeze
  // exploratory when its held-out tasks were already seen here).
  async function clearStored() {
    const counts = await store.clear();
    counts.model_cache = "caches" in self ? await caches.delete(MODEL_CACHE) : false;
    if (record) record = null;
    hideResumePrompt();
    const kept = (await store.ledger()).length;
    $("#stored-status").textContent =
      `Deleted ${counts.sweeps} stored sweep(s) from this browser${counts.model_cache ? ", and the cached model files" : " (no cached model files)"}. ` +
      `The ledger of observed held-out tasks (${kept} entr${kept === 1 ? "y" : "ies"}) is kept.`;
    return counts;
  }

  // The separate, confirmed action: what is lost is said before anything is deleted.
  const LEDGER_WARNING =
    "Clear the ledger of observed held-out tasks? This browser then forgets which held-out tasks it has " +
    "already observed for each model, so a later freeze of those models is marked CONFIRMATORY although " +
    "the tasks were seen. This cannot be undone.";

  async function clearLedger({ confirmed = false } = {}) {
    if (!confirmed && !window.confirm(LEDGER_WARNING)) {
      $("#stored-status").textContent = "The ledger was kept.";
      return { ledger: 0 };
    }
    const ledger = await store.clearLedger();
    $("#stored-status").textContent = `Deleted ${ledger} ledger entr${ledger === 1 ? "y" : "ies"}: later freezes no longer know what this browser observed.`;
    return { ledger };
  }

  // ---- wiring ----------------------------------------------------------------------------

  const ui = (work) => async () => {
    try {
      await work();
    } catch (error) {
      if (section.dataset.state !== "error") showError(error.message);
    }
  };

  async function ensureSweep() {
    if (!state || finished()) await start({});
  }

  $("#sweep-run-all").addEventListener(
    "click",
    ui(async () => {
      await ensureSweep();
      await run("all");
    }),
  );
  $("#sweep-measure").addEventListener(
    "click",
    ui(async () => {
      await ensureSweep();
      await run("measure");
    }),
  );
  $("#sweep-freeze").addEventListener("click", ui(() => freeze()));
  $("#sweep-heldout").addEventListener("click", ui(() => run("heldout")));
  $("#sweep-new").addEventListener("click", ui(() => start({})));
  $("#sweep-cancel").addEventListener("click", () => cancel());
  $("#download-sweep-trace").addEventListener(
    "click",
    ui(async () => download(`trace-${trace.run.run_id}.json`, await pythonDocument("sweep_trace", "trace"))),
  );
  $("#download-predictions").addEventListener(
    "click",
    ui(async () => download(`predictions-${trace.run.run_id}.json`, await pythonDocument("sweep_predictions", "predictions"))),
  );
  $("#clear-stored").addEventListener("click", ui(clearStored));
  $("#clear-ledger").addEventListener("click", ui(() => clearLedger()));
  $("#resume-accept").addEventListener("click", ui(acceptResume));
  $("#resume-discard").addEventListener("click", ui(discardResume));
  $("#journal-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const prompt = $("#journal-prompt").value;
    $("#journal-status").textContent = "Generating (journal)…";
    journal(prompt).then(
      (result) => ($("#journal-status").textContent = `Journal entry ${result.journal} kept (exploration only).`),
      (error) => ($("#journal-status").textContent = `Journal generation failed: ${error.message}`),
    );
  });
  models.subscribe(() => refreshControls());
  refreshControls();

  const api = {
    start,
    run,
    freeze,
    state: getState,
    trace: getTrace,
    predictions: getPredictions,
    resume,
    resumeFrom,
    cancel,
    persisted,
    onEvent(callback) {
      listeners.add(callback);
      return () => listeners.delete(callback);
    },
    journal,
    clearStored,
    clearLedger,
    ledger: () => store.ledger(),
    // for tests and the bench: what the page shows, without asking Python
    snapshot: () => ({ state, data_state: section.dataset.state, busy, error: lastError, cancelled: lastCancelled }),
  };

  return {
    api,
    sessionEvent,
    cancelRequested,
    // called once Python is ready: offer to resume a stored unfinished sweep
    ready: () => offerResume().catch((error) => console.error("[composition-lab] reading IndexedDB failed", error)),
  };
}
