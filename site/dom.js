// Small DOM helpers the experiment's renderers share. No state here.

import { EVIDENCE_LABELS, EVIDENCE_MEANINGS } from "./lab_protocol.js";

// The words for a kind of evidence (EVIDENCE_LABELS: pyapp/records/evidence.py, generated into
// lab_protocol.js). A kind the table does not know is never model evidence.
export const evidenceLabel = (evidence) => EVIDENCE_LABELS[evidence] ?? `unknown evidence ${JSON.stringify(evidence)} — not model evidence`;

// What the numbers of a run of this evidence are (a synthetic run is a validation, a fixture
// run a pipeline check: EVIDENCE_MEANINGS, pyapp/records/evidence.py).
export const meaningOf = (evidence) => EVIDENCE_MEANINGS[evidence] ?? "not a measurement of a model";

// The label set beside every number of a run of this evidence, or null for model evidence.
export const notEvidenceLabel = (evidence) => (evidence === "model" ? null : evidenceLabel(evidence));

// What one trial is shown as: a control is a control; any other trial carries its run's label
// (`runLabel`, null for model evidence), and never less than its own.
export const trialLabel = (trial, runLabel) => (trial.evidence === "control" ? evidenceLabel("control") : (runLabel ?? evidenceLabel(trial.evidence)));

// A value that rounds to zero is shown as 0, never -0.
export const fmt = (value, digits = 3) =>
  typeof value === "number" ? (Math.abs(value) < 0.5 * 10 ** -digits ? 0 : value).toFixed(digits) : "—";
export const yesNo = (value) => (value === true ? "yes" : value === false ? "no" : "—");

export function h(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== null && text !== undefined) node.textContent = text;
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}

export function dl(rows) {
  const list = h("dl", null, { class: "facts" });
  for (const [term, value] of rows) list.append(h("dt", term), h("dd", value === null || value === undefined ? "—" : String(value)));
  return list;
}

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
