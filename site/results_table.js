// @ts-check
// The sweep's results table (#sweep-results): one row per trial, drawn a page at a time so
// that a sweep of 10,000 trials stays responsive. Rows are kept as a few strings each (the
// trial itself stays in the page's IndexedDB record and in memory as Python's JSON text);
// adding a row costs the same at trial 10 and at trial 10,000. While a sweep runs the table
// follows its last page, until the reader turns to another page.

import { fmt } from "./dom.js";
import { CONTROL_LABEL } from "./lab_protocol.js";

/** @import { CorrectedField, Trial } from "./lab_types.js" */

/**
 * What a row shows of a trial: a handful of strings, computed once when the trial arrives.
 * @typedef {object} Row
 * @property {string} trial_id
 * @property {string} task_id
 * @property {string} condition
 * @property {string} evidence
 * @property {[string, string][]} cells each cell's text and class
 */

export const PAGE_ROWS = 100;

/** @param {Pick<Trial, "correct" | "failure">} trial @returns {[string, string]} the verdict and its class */
export function verdictOf(trial) {
  if (trial.correct) return ["correct", "correct"];
  if (trial.failure) return ["failed", "incorrect"];
  return ["wrong", "incorrect"];
}

// `label`: the run's evidence label when it is not model evidence (dom.js notEvidenceLabel).
/** @param {string} condition @param {string | null} label */
function conditionLabel(condition, label) {
  if (condition === "supplied-program") return CONTROL_LABEL;
  return label ? `${condition} (${label})` : condition;
}

/** @param {Trial} trial */
function outcomeText(trial) {
  const f = trial.failure ?? trial.chain?.halt;
  if (trial.chain?.status === "unsupported") return "unsupported (no route; zero model calls)";
  if (!f) return trial.outcome;
  const limit = f.limit ? ` (${f.limit}${f.maximum !== null ? ` > ${f.maximum}` : ""})` : "";
  return `${trial.outcome}${trial.outcome === f.code ? "" : ` [halt: ${f.code}]`}${limit} — ${f.stage}`;
}

// What the trace recorded where re-derivation says otherwise (an opened trace): the row shows
// the re-derived value, with the recorded one beside it.
/** @param {readonly CorrectedField[] | null} corrected */
function recordedBeside(corrected) {
  if (!corrected?.length) return "";
  return ` (re-derived; recorded ${corrected.map((c) => `${c.field} ${c.recorded_json}`).join(", ")})`;
}

// What a row shows of a trial: a handful of strings, computed once when the trial arrives.
// `corrected`: the trial's recorded fields that re-derivation contradicts (an opened trace).
/** @param {Trial} trial @param {{ label: string | null, split?: string | null, corrected?: readonly CorrectedField[] | null }} how @returns {Row} */
export function rowOf(trial, { label, split, corrected = null }) {
  const [verdict, verdictClass] = verdictOf(trial);
  return {
    trial_id: trial.trial_id,
    task_id: trial.task_id,
    condition: trial.condition,
    evidence: trial.evidence,
    cells: [
      [conditionLabel(trial.condition, label), trial.evidence === "model" && !label ? "" : "fixture-label"],
      [split ?? "", ""],
      [`${verdict}${recordedBeside(corrected)}`, verdictClass],
      [outcomeText(trial), ""],
      [`${trial.input_tokens ?? "—"} / ${trial.output_tokens ?? "—"}`, "num"],
      [fmt(trial.timings.total_ms, 1), "num"],
    ],
  };
}

export class ResultsTable {
  /** @param {{ table: HTMLTableElement, pager: HTMLElement, onOpen: (trialId: string) => void }} parts */
  constructor({ table, pager, onOpen }) {
    this.body = table.tBodies[0];
    this.pager = pager;
    this.onOpen = onOpen;
    /** @type {Row[]} */
    this.rows = [];
    /** @type {Map<string, number>} */
    this.positions = new Map(); // trial id -> index in rows
    this.page = 0;
    this.follow = true;
    /** @param {string} id @param {() => number} go */
    const button = (id, go) => this.button(id).addEventListener("click", () => this.show(go()));
    button("#results-first", () => 0);
    button("#results-prev", () => this.page - 1);
    button("#results-next", () => this.page + 1);
    button("#results-last", () => this.lastPage());
  }

  /** @param {string} id @returns {HTMLButtonElement} */
  button(id) {
    return /** @type {HTMLButtonElement} */ (this.pager.querySelector(id));
  }

  lastPage() {
    return Math.max(0, Math.ceil(this.rows.length / PAGE_ROWS) - 1);
  }

  reset() {
    this.rows = [];
    this.positions = new Map();
    this.page = 0;
    this.follow = true;
    this.draw();
  }

  // Replace every row (a sweep resumed or refreshed): one draw.
  /** @param {Iterable<Row>} rows */
  setAll(rows) {
    this.rows = [];
    this.positions = new Map();
    for (const row of rows) this.store(row);
    this.page = this.follow ? this.lastPage() : Math.min(this.page, this.lastPage());
    this.draw();
  }

  /** @param {Row} row */
  store(row) {
    const at = this.positions.get(row.trial_id);
    if (at === undefined) {
      this.positions.set(row.trial_id, this.rows.length);
      this.rows.push(row);
      return this.rows.length - 1;
    }
    this.rows[at] = row;
    return at;
  }

  // One trial arrived: constant work (a page is redrawn only when the table turns to it).
  /** @param {Row} row */
  add(row) {
    const at = this.store(row);
    const page = Math.floor(at / PAGE_ROWS);
    if (this.follow && page !== this.page) {
      this.page = page;
      this.draw();
      return;
    }
    if (page !== this.page) {
      this.drawPager();
      return;
    }
    const tr = this.rowElement(row);
    const existing = this.body.rows[at - this.page * PAGE_ROWS];
    if (existing) existing.replaceWith(tr);
    else this.body.append(tr);
    this.drawPager();
  }

  /** @param {number} page */
  show(page) {
    this.page = Math.max(0, Math.min(page, this.lastPage()));
    this.follow = this.page === this.lastPage();
    this.draw();
  }

  draw() {
    const start = this.page * PAGE_ROWS;
    this.body.replaceChildren(...this.rows.slice(start, start + PAGE_ROWS).map((row) => this.rowElement(row)));
    this.drawPager();
  }

  drawPager() {
    const pages = this.lastPage() + 1;
    this.pager.hidden = this.rows.length <= PAGE_ROWS;
    const first = this.page * PAGE_ROWS + 1;
    const last = Math.min(this.rows.length, first + PAGE_ROWS - 1);
    /** @type {HTMLElement} */ (this.pager.querySelector("#results-page")).textContent = `rows ${first}–${last} of ${this.rows.length} (page ${this.page + 1} of ${pages})`;
    this.button("#results-first").disabled = this.page === 0;
    this.button("#results-prev").disabled = this.page === 0;
    this.button("#results-next").disabled = this.page >= pages - 1;
    this.button("#results-last").disabled = this.page >= pages - 1;
  }

  /** @param {Row} row */
  rowElement(row) {
    const tr = document.createElement("tr");
    tr.dataset.trialId = row.trial_id;
    tr.dataset.condition = row.condition;
    tr.dataset.evidence = row.evidence;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = row.task_id;
    tr.append(th);
    for (const [text, className] of row.cells) {
      const td = tr.insertCell();
      td.textContent = text;
      if (className) td.className = className;
    }
    const open = document.createElement("button");
    open.type = "button";
    open.textContent = "Open";
    open.setAttribute("aria-label", `Open the raw record of ${row.trial_id}`);
    open.addEventListener("click", () => this.onOpen(row.trial_id));
    tr.insertCell().append(open);
    return tr;
  }
}
