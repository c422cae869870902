// @ts-check
// Small DOM helpers the experiment's renderers share. No state here.

import { EVIDENCE_LABELS, EVIDENCE_MEANINGS } from "./lab_protocol.js";

/** @import { Trial } from "./lab_types.js" */

// The page's element for `selector` (the page is index.html: the selectors name its own
// elements), of the kind `kind` (an element of another kind is a bug and throws). Null where
// there is none, as `querySelector` says.
/** @template {Element} [E=HTMLElement] @param {string} selector @param {{ new (...args: never[]): E, readonly name: string }} [kind] @returns {E} */
export function $(selector, kind) {
  const node = document.querySelector(selector);
  if (kind && node !== null && !(node instanceof kind)) throw new Error(`${selector} is not a ${kind.name}`);
  return /** @type {E} */ (node);
}

// A table of the page keyed by Python's words (evidence kinds, condition names): the entry of
// `key`, or undefined where the table has none.
/** @template T @param {Readonly<Record<string, T>>} table @param {unknown} key @returns {T | undefined} */
export const entryOf = (table, key) => (typeof key === "string" && Object.hasOwn(table, key) ? table[key] : undefined);

// The words for a kind of evidence (EVIDENCE_LABELS: pyapp/records/evidence.py, generated into
// lab_protocol.js). A kind the table does not know is never model evidence.
/** @param {unknown} evidence */
export const evidenceLabel = (evidence) => entryOf(EVIDENCE_LABELS, evidence) ?? `unknown evidence ${JSON.stringify(evidence)} — not model evidence`;

// What the numbers of a run of this evidence are (a synthetic run is a validation, a fixture
// run a pipeline check: EVIDENCE_MEANINGS, pyapp/records/evidence.py).
/** @param {unknown} evidence */
export const meaningOf = (evidence) => entryOf(EVIDENCE_MEANINGS, evidence) ?? "not a measurement of a model";

// The label set beside every number of a run of this evidence, or null for model evidence.
/** @param {unknown} evidence @returns {string | null} */
export const notEvidenceLabel = (evidence) => (evidence === "model" ? null : evidenceLabel(evidence));

// What one trial is shown as: a control is a control; any other trial carries its run's label
// (`runLabel`, null for model evidence), and never less than its own.
/** @param {Pick<Trial, "evidence">} trial @param {string | null} runLabel */
export const trialLabel = (trial, runLabel) => (trial.evidence === "control" ? evidenceLabel("control") : (runLabel ?? evidenceLabel(trial.evidence)));

// A value that rounds to zero is shown as 0, never -0.
/** @param {unknown} value @param {number} [digits] */
export const fmt = (value, digits = 3) =>
  typeof value === "number" ? (Math.abs(value) < 0.5 * 10 ** -digits ? 0 : value).toFixed(digits) : "—";
/** @param {unknown} value */
export const yesNo = (value) => (value === true ? "yes" : value === false ? "no" : "—");

/**
 * A new element: `<tag>` with `text` (none when null) and the attributes `attrs`.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string | number | null} [text]
 * @param {Record<string, string>} [attrs]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== null && text !== undefined) node.textContent = String(text);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}

// A definition list: one term and its value (— for none) per row.
/** @param {Iterable<readonly [string, unknown]>} rows */
export function dl(rows) {
  const list = h("dl", null, { class: "facts" });
  for (const [term, value] of rows) list.append(h("dt", term), h("dd", value === null || value === undefined ? "—" : String(value)));
  return list;
}

// A table: a header row, then one row per list of cells (— for none).
/** @param {readonly string[]} headers @param {Iterable<readonly unknown[]>} rows @param {string} [className] */
export function table(headers, rows, className) {
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

// Save `text` (JSON, exactly as given) as a file called `name` through a temporary link.
/** @param {string} text @param {string} name */
export function downloadJson(text, name) {
  const blob = new Blob([text], { type: "application/json" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}
