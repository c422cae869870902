// @ts-check
// Composition Lab page glue: draws the page and forwards requests to Python. No Python here.
//
// Python runs in a PyScript worker (site/python_worker/lab_worker.py, Pyodide from ./pyodide/). The worker
// exports ONE function, handle(requestJson) -> replyJson, reached as xworker.sync.handle. The
// sync names, the URL parameters and window.lab's members are pyapp/protocol/page.py's
// (SYNC, PARAM, LAB_API in ./lab_protocol.js; docs/page.md lists them).
//
// Messages: pyapp/protocol/messages.py defines every request, reply and event once (one envelope,
// one tag key `type`, an `id` per request that its reply repeats); exports/messages.schema.json
// and ./lab_protocol.js (names and shared constants) are generated from it, and
// docs/hosting.md lists them in generated tables. This file checks each request name against
// them and reads each reply with ./common/envelope.js (the one place the envelope is built and read).
//
// The app root carries data-state = booting | ready | running | done | error, and #status
// (role=status) says in words what is happening or what failed.

import { DEFAULT_SEED, PARAM, PRESETS, REQUEST_TIMEOUT_MS, REQUEST_TYPES, SYNC } from "./lab_protocol.js";
import { setupModels } from "./models_panel.js";
import { $, downloadJson, entryOf } from "./dom.js";
import { setupExperiment } from "./experiment.js";
import "./guide.js"; // the guided flow: the setup in the address, the current step
import { setupViewer } from "./viewer.js";
import { setupRuns } from "./runs_panel.js";
import { setupStudyView } from "./study_view.js";
import { makeSend } from "./entry.js";
import { readReply } from "./common/envelope.js";
import { messageOf } from "./common/errors.js";

/** @import { Generated, Program, Requests, Results, TaskSet, Trace } from "./lab_types.js" */

/**
 * window.lab (docs/page.md): the page's entry points for drivers, tests and benches.
 * @typedef {object} Lab
 * @property {typeof request} request the page's one path to Python
 * @property {ReturnType<typeof makeSend>} send the one entry point for drivers (./entry.js)
 * @property {typeof timings} timings
 * @property {number} t0
 * @property {ReturnType<typeof setupModels>} models the Models panel
 * @property {ReturnType<typeof setupExperiment>["api"]} experiment the experiment's state API
 * @property {Generated} [lastModelResult] the last "try a prompt" result
 */

/**
 * What the page uses of PyScript's worker (the `xworker` of <script type="py" worker>): the
 * functions each side calls synchronously (`sync`, by the SYNC names) and its readiness.
 * @typedef {object} XWorker
 * @property {XWorkerSync} sync
 * @property {Promise<unknown>} ready
 * @property {(type: "message", listener: (event: MessageEvent<unknown>) => void) => void} addEventListener
 */
/**
 * @typedef {object} XWorkerSync
 * @property {(requestJson: string) => Promise<string>} handle Python's one entry point
 * @property {(requestJson: string) => Promise<string>} [model_call] the page's model client
 * @property {(eventJson: string, posted: number, trial?: string | null, change?: string | null, receipt?: string | null) => unknown} [session_event]
 * @property {(posted: number) => unknown} [cancel_requested]
 */

// Give up on the boot after this long (?boot_timeout_ms=N overrides it, for tests).
const BOOT_TIMEOUT_MS =
  Number(new URLSearchParams(location.search).get(PARAM.BOOT_TIMEOUT_MS)) || 60_000;
// Files the runtime needs; probed to name the culprit when boot fails.
const RUNTIME_FILES = [
  "./pyscript/core.js",
  "./pyscript.json",
  "./python_worker/lab_worker.py",
  "./pyodide/pyodide.mjs",
  "./pyodide/pyodide.asm.mjs",
  "./pyodide/pyodide.asm.wasm",
  "./pyodide/python_stdlib.zip",
  "./pyodide/pyodide-lock.json",
];

const app = $("#app");
const statusLine = $("#status");
const errorLine = $("#error");
const t0 = performance.now();

// Timings the bench (bench/boot.py) and tests read; milliseconds since navigation start.
/** @type {{ python_ready_ms: number | null, first_table_ms: number | null }} */
const timings = { python_ready_ms: null, first_table_ms: null };

/** @type {XWorker | null} */
let worker = null; // the PyScript XWorker
let nextId = 1;
/** @type {Trace | null} */
let lastTrace = null;
let bootStep = "loading PyScript";
let failed = false;
let booted = false; // Python answered hello
/** @type {string[]} */
const workerErrors = []; // stray errors inside a worker during start-up (see fromAWorker)

/** @param {string} state @param {string} [message] */
function setState(state, message) {
  app.dataset.state = state;
  if (state !== "error") errorLine.hidden = true;
  if (message !== undefined) statusLine.textContent = message;
}

/** @param {string} message */
function fail(message) {
  failed = true;
  errorLine.hidden = false;
  errorLine.textContent = message;
  setState("error", `Error: ${message}`);
  console.error("[composition-lab]", message);
}

/** @template T @param {Promise<T>} promise @param {number} ms @param {string} what @returns {Promise<T>} */
function withTimeout(promise, ms, what) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {Promise<never>} */
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${Math.round(ms / 100) / 10} s while ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Send one request to Python; resolves with `result`, rejects with an Error naming the code.
// Documents that must keep Python's number types (traces, predictions) come back as JSON
// text in `*_json` fields, which JavaScript never re-writes.
/**
 * @template {keyof Results} T
 * @param {T} type
 * @param {Omit<Requests[T], "type" | "id">} [fields]
 * @param {number} [timeoutMs]
 * @returns {Promise<Results[T]>}
 */
async function request(type, fields, timeoutMs = REQUEST_TIMEOUT_MS) {
  if (!REQUEST_TYPES.includes(type)) throw new Error(`unknown request type ${type}`);
  if (!worker) throw new Error("Python is not ready");
  const id = nextId++;
  const replyJson = await withTimeout(
    worker.sync[SYNC.HANDLE](JSON.stringify({ type, id, ...fields })),
    timeoutMs,
    `waiting for Python to answer "${type}"`,
  );
  // Python's reply to `type`: its result record (pyapp.browser.bridge checks it is that one)
  return /** @type {Results[T]} */ (readReply(/** @type {unknown} */ (JSON.parse(replyJson)), type, id));
}

// ---- boot --------------------------------------------------------------------------------

// HEAD every runtime file; returns "path (HTTP 404)"-style entries for the ones that failed.
// 405/501 (a host without HEAD) count as fine: only clear failures are reported.
async function probeRuntime() {
  /** @type {string[]} */
  const missing = [];
  await Promise.all(
    RUNTIME_FILES.map(async (path) => {
      try {
        const response = await fetch(path, { method: "HEAD", cache: "no-store" });
        if (!response.ok && ![405, 501].includes(response.status)) {
          missing.push(`${path.slice(2)} (HTTP ${response.status})`);
        }
      } catch (error) {
        missing.push(`${path.slice(2)} (${messageOf(error)})`);
      }
    }),
  );
  return missing.sort();
}

/** @param {unknown} error @param {string[] | null} [missing] */
async function bootFailed(error, missing = null) {
  if (failed || booted) return;
  const reason = messageOf(error);
  missing ??= await withTimeout(probeRuntime(), 10_000, "probing runtime files").catch(() => []);
  const which = missing.length ? ` Could not load: ${missing.join(", ")}.` : "";
  const earlier = workerErrors.length ? ` Earlier, inside a worker: ${workerErrors.join("; ")}.` : "";
  fail(`Python runtime failed to start (${bootStep}): ${reason}.${which}${earlier}`);
}

// An uncaught error inside a worker reaches the page as an error event without its Error
// object, which cannot cross threads; the page's own scripts are same-origin, so their
// uncaught errors carry theirs. (CI once saw PyScript's own worker-side progress forwarding
// throw one while Python started normally: "function dispatchEvent() { [native code] } is
// not a constructor".)
/** @param {ErrorEvent} event */
function fromAWorker(event) {
  return event.error == null;
}

/** @returns {Promise<XWorker>} */
function waitForWorkerElement() {
  // PyScript attaches `xworker` to the <script type="py" worker> element once it handles it.
  const script = /** @type {HTMLScriptElement & { xworker?: XWorker }} */ ($("#lab-worker"));
  return new Promise((resolve) => {
    const poll = () => (script.xworker ? resolve(script.xworker) : setTimeout(poll, 25));
    poll();
  });
}

async function boot() {
  window.addEventListener("py:progress", (event) => {
    bootStep = String(/** @type {CustomEvent<unknown>} */ (event).detail);
    if (app.dataset.state === "booting") statusLine.textContent = `Starting Python: ${bootStep}…`;
  });
  window.addEventListener("error", (event) => {
    if (app.dataset.state !== "booting") return;
    if (fromAWorker(event)) {
      // Python's own start-up failures reject `xworker.ready` and a hung start-up meets the
      // boot timeout, so a stray error inside a worker is told, not a failed boot.
      workerErrors.push(event.message);
      console.warn(`[composition-lab] an error inside a worker during start-up (the boot goes on): ${event.message} (${event.filename})`);
      return;
    }
    bootFailed(event.error || new Error(event.message));
  });
  window.addEventListener("unhandledrejection", (event) => {
    if (app.dataset.state === "booting") bootFailed(event.reason);
  });
  if (!window.crossOriginIsolated) {
    console.warn("[composition-lab] page is not cross-origin isolated; see docs/hosting.md");
  }
  // Probe the runtime files in parallel with the boot: a missing file fails the boot at once
  // and by name, instead of leaving Pyodide waiting until the timeout.
  probeRuntime().then((missing) => {
    if (missing.length) bootFailed(new Error("a runtime file is unavailable"), missing);
  });
  try {
    const start = async () => {
      const xworker = await waitForWorkerElement();
      // Python's adapter (pyapp.browser.model) calls this through PyScript's sync channel.
      xworker.sync[SYNC.MODEL_CALL] = models.modelCall;
      // pyapp.browser.session's Context (site/python_worker/lab_worker.py): trial events and the Cancel flag.
      xworker.sync[SYNC.SESSION_EVENT] = experiment.sessionEvent;
      xworker.sync[SYNC.CANCEL_REQUESTED] = experiment.cancelRequested;
      // ... and the events Python posts without waiting (site/experiment_channel.js)
      xworker.addEventListener("message", (/** @type {MessageEvent<unknown>} */ { data }) => experiment.workerMessage(data) || models.workerMessage(data));
      bootStep = "starting the Python worker";
      await xworker.ready; // rejects with the worker's error if Python fails to start
      return xworker;
    };
    const xworker = await withTimeout(start(), BOOT_TIMEOUT_MS, "starting Python in the worker");
    worker = xworker;
    bootStep = "saying hello to Python";
    const hello = await request("hello", {}, 15_000);
    timings.python_ready_ms = performance.now();
    booted = true;
    $("#versions").textContent =
      `Python ${String(hello.python).split(" ")[0]} · pyapp ${hello.pyapp_version} · generator ${hello.generator_version}` +
      ` · cross-origin isolated: ${window.crossOriginIsolated ? "yes" : "no"}`;
  } catch (error) {
    await bootFailed(error);
    return;
  }
  if (failed) return;
  for (const id of ["#load-tasks", "#run-control", "#sympy-check"]) $(id, HTMLButtonElement).disabled = false;
  await loadTasks(seedFromUrl());
  await experiment.ready();
}

// ---- tasks -------------------------------------------------------------------------------

function seedFromUrl() {
  const raw = new URLSearchParams(location.search).get(PARAM.SEED);
  const seed = raw === null ? DEFAULT_SEED : Number(raw);
  return Number.isSafeInteger(seed) && seed >= 0 ? seed : DEFAULT_SEED;
}

function currentSeed() {
  const seed = Number($("#seed", HTMLInputElement).value);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error("the seed must be a whole number ≥ 0");
  return seed;
}

// The seed field's value, or null after the page shows why it is not a seed.
function seedOrFail() {
  try {
    return currentSeed();
  } catch (error) {
    fail(messageOf(error));
    return null;
  }
}

// The chosen calibration preset's task-parameter overrides (none for "design").
/** @returns {Record<string, unknown> | undefined} */
function currentParams() {
  /** @type {Record<string, unknown>} */
  const overrides = entryOf(PRESETS, $("#preset", HTMLSelectElement).value) ?? {};
  return Object.keys(overrides).length ? overrides : undefined;
}

/** @template {object} F @param {F} fields @returns {F & { params?: Record<string, unknown> }} */
function withParams(fields) {
  const params = currentParams();
  return params ? { ...fields, params } : fields;
}

const SYMBOL = Object.freeze({ add: "+", sub: "−", mul: "×" });

// The register tree as infix text: {"op":"add","args":[{"ref":"a"},{"ref":"b"}]} -> "a + b".
/** @param {Program} node @param {boolean} [top] @returns {string} */
function programText(node, top = true) {
  if (node && "ref" in node && typeof node.ref === "string") return node.ref;
  if (!node || !("args" in node) || !Array.isArray(node.args)) return JSON.stringify(node);
  const text = node.args.map((arg) => programText(arg, false)).join(` ${entryOf(SYMBOL, node.op) ?? node.op} `);
  return top ? text : `(${text})`;
}

/** @param {HTMLTableRowElement} row @param {string} text @param {string} [className] */
function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

// A table row whose first cell is a row header naming the task.
/** @param {HTMLTableSectionElement} body @param {string} taskId */
function taskRow(body, taskId) {
  const row = body.insertRow();
  row.dataset.taskId = taskId;
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = taskId;
  row.append(th);
  return row;
}

/** @param {TaskSet} result */
function renderTasks(result) {
  const body = $("#tasks tbody", HTMLTableSectionElement);
  body.replaceChildren();
  for (const task of result.tasks) {
    const row = taskRow(body, task.id);
    cell(row, task.family);
    cell(row, task.split);
    cell(row, task.encoding ?? "");
    cell(row, Object.entries(task.registers).map(([k, v]) => `${k} = ${v}`).join(", "));
    const program = cell(row, "");
    const code = document.createElement("code");
    code.textContent = programText(task.program);
    code.title = JSON.stringify(task.program);
    program.append(code);
    cell(row, String(task.answer), "num");
  }
  $("#tasks-caption").textContent = `Seed ${result.seed}: ${result.tasks.length} tasks`;
}

/** @param {number} seed */
async function loadTasks(seed) {
  $("#seed", HTMLInputElement).value = String(seed);
  setState("running", `Generating tasks for seed ${seed}…`);
  try {
    const result = await request("tasks", withParams({ seed }));
    renderTasks(result);
    timings.first_table_ms ??= performance.now();
    const url = new URL(location.href);
    url.searchParams.set(PARAM.SEED, String(seed));
    history.replaceState(null, "", url);
    clearResults();
    setState("ready", `Ready. Seed ${seed}: ${result.tasks.length} tasks.`);
  } catch (error) {
    fail(`generating tasks for seed ${seed} failed: ${messageOf(error)}`);
  }
}

// ---- supplied-program control --------------------------------------------------------------

function clearResults() {
  lastTrace = null;
  $("#download-trace", HTMLButtonElement).disabled = true;
  $("#results tbody").replaceChildren();
  $("#results-caption").textContent = "Not run yet.";
  $("#run-summary").textContent = "";
  $("#sympy-result").textContent = "";
  $("#sympy-status").textContent = "";
}

function environment() {
  return {
    user_agent: navigator.userAgent,
    cross_origin_isolated: window.crossOriginIsolated,
    hardware_concurrency: navigator.hardwareConcurrency ?? null,
  };
}

/** @param {unknown} value */
const ms = (value) => (typeof value === "number" ? value.toFixed(3) : "—");

/** @param {Trace} trace */
function renderTrace(trace) {
  const body = $("#results tbody", HTMLTableSectionElement);
  body.replaceChildren();
  for (const trial of trace.trials) {
    const row = taskRow(body, trial.task_id);
    cell(row, trial.correct ? "correct" : "incorrect", trial.correct ? "correct" : "incorrect");
    /** @type {Record<string, unknown>} */
    const t = trial.timings ?? {};
    for (const key of ["construction_ms", "parse_ms", "execution_ms", "verification_ms", "total_ms"]) {
      cell(row, ms(t[key]), "num");
    }
  }
  const { trials, correct } = trace.summary;
  $("#results-caption").textContent = `Supplied-program control (not model evidence): ${correct}/${trials} correct`;
  $("#run-summary").textContent =
    `${correct}/${trials} correct. Control run: the interpreter executed each task's reference program.`;
}

async function runControl() {
  const seed = seedOrFail();
  if (seed === null) return;
  clearResults();
  setState("running", `Running the supplied-program control for seed ${seed}…`);
  try {
    const { trace } = await request("run_supplied", withParams({ seed, environment: environment() }));
    lastTrace = trace;
    renderTrace(trace);
    $("#download-trace", HTMLButtonElement).disabled = false;
    const { trials, correct } = trace.summary;
    setState("done", `Done: supplied-program control, seed ${seed}: ${correct}/${trials} correct.`);
  } catch (error) {
    fail(`supplied-program control failed: ${messageOf(error)}`);
  }
}

function downloadTrace() {
  if (!lastTrace) return;
  downloadJson(JSON.stringify(lastTrace, null, 2) + "\n", `trace-seed-${$("#seed", HTMLInputElement).value}-supplied-program.json`);
}

// ---- sympy (lazy) --------------------------------------------------------------------------

async function sympyCheck() {
  const sympyStatus = $("#sympy-status");
  const button = $("#sympy-check", HTMLButtonElement);
  const seed = seedOrFail();
  if (seed === null) return;
  button.disabled = true;
  const previous = app.dataset.state;
  setState("running", "Checking answers with sympy…");
  try {
    sympyStatus.textContent = "Loading sympy and mpmath (first use only)…";
    const loaded = await request("sympy_load", {}, 180_000);
    sympyStatus.textContent = `sympy loaded (${(loaded.load_ms / 1000).toFixed(1)} s). Checking…`;
    const result = await request("sympy_check", withParams({ seed }), 180_000);
    const agree = `${result.agreements}/${result.checked}`;
    sympyStatus.textContent = "sympy check finished.";
    $("#sympy-result").textContent =
      result.mismatches.length === 0
        ? `sympy agrees on ${agree} answers for seed ${seed}.`
        : `sympy agrees on ${agree}; mismatches: ${JSON.stringify(result.mismatches)}`;
    setState(previous === "done" ? "done" : "ready", `sympy agrees on ${agree} answers.`);
  } catch (error) {
    sympyStatus.textContent = "sympy check failed.";
    fail(`sympy check failed: ${messageOf(error)}`);
  } finally {
    button.disabled = false;
  }
}

// ---- wiring --------------------------------------------------------------------------------

$("#seed", HTMLInputElement).value = String(seedFromUrl());
for (const name of Object.keys(PRESETS)) $("#preset", HTMLSelectElement).append(new Option(name, name));
$("#seed-form").addEventListener("submit", (event) => {
  event.preventDefault();
  try {
    loadTasks(currentSeed());
  } catch (error) {
    fail(messageOf(error));
  }
});
$("#preset").addEventListener("change", () => {
  if ($("#load-tasks", HTMLButtonElement).disabled) return; // not ready yet: the boot generates with this preset
  try {
    loadTasks(currentSeed());
  } catch (error) {
    fail(messageOf(error));
  }
});
$("#run-control").addEventListener("click", runControl);
$("#download-trace").addEventListener("click", downloadTrace);
$("#sympy-check").addEventListener("click", sympyCheck);

// The Models panel: catalogue, consent, the model worker's client, "try a prompt".
const models = setupModels({ request });

// The Experiment and Journal sections (site/experiment.js): the sweep state API.
const experiment = setupExperiment({ request, models, environment, currentSeed, currentParams });

// Open a trace and Compare runs (site/viewer.js): files from disk, re-derived by this page's Python.
const viewer = setupViewer({ request, experiment });

// Runs stored in this browser (site/runs_panel.js): show, download, report, compare, delete.
setupRuns({ request, experiment, viewer });
setupStudyView({ request });

// For tests and bench/: the same request path the buttons use, the Models panel
// (models.state()) and the experiment's state API (docs/page.md). `send` is the one entry
// point for drivers such as the sweep CLI: a protocol request in, its reply out (site/entry.js).
const send = makeSend({ request, experiment: experiment.api, models, timings });
window.lab = { request, send, timings, t0, models, experiment: experiment.api };

boot();
