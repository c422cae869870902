// @ts-check
// The catalogue group "synthetic (validation)" of the Models panel: synthetic models of known
// error structure (pyapp/synthetic, listed by Python in lab_protocol.js's SYNTHETIC_MODELS).
// Choosing one downloads nothing and starts no model worker: the page's Python worker runs it
// (`synthetic_select`) with the same SyntheticAdapter as `python -m pyapp simulate`. It
// validates the instrument and is never model evidence. No state here: models_panel.js keeps
// the selection.

import { EVIDENCE_LABELS, SYNTHETIC_MODELS } from "./lab_protocol.js";

/** @import { SyntheticChosen } from "./lab_types.js" */
/** @import { DetailRow } from "./page_types.js" */


export const SYNTHETIC_GROUP = "synthetic (validation)";
const PREFIX = "synthetic:";

// The structure a picker value names (`synthetic:NAME`), or null for any other entry.
/** @param {string | null | undefined} value @returns {keyof typeof SYNTHETIC_MODELS | null} */
export function syntheticOf(value) {
  if (!value?.startsWith(PREFIX)) return null;
  const name = value.slice(PREFIX.length);
  return Object.hasOwn(SYNTHETIC_MODELS, name) ? /** @type {keyof typeof SYNTHETIC_MODELS} */ (name) : null;
}

// The group of options, one per structure, appended to the picker.
/** @param {HTMLSelectElement} select */
export function addSyntheticGroup(select) {
  const group = document.createElement("optgroup");
  group.label = SYNTHETIC_GROUP;
  for (const [name, note] of Object.entries(SYNTHETIC_MODELS)) {
    group.append(new Option(`${name} — ${note} (${EVIDENCE_LABELS.synthetic})`, `${PREFIX}${name}`));
  }
  select.append(group);
}

// The notice shown while a synthetic entry is chosen or in use.
/** @param {keyof typeof SYNTHETIC_MODELS} name */
export function syntheticNotice(name) {
  return (
    `Synthetic model "${name}": ${SYNTHETIC_MODELS[name]}. A synthetic model of known error structure, for validating ` +
    `the instrument — NOT model evidence. It runs inside this page's Python worker with the same code as ` +
    `\`python -m pyapp simulate\` (its trials are those a native run records for the same seed and parameters); ` +
    `nothing is downloaded and no model worker starts. Every number it produces is labelled "${EVIDENCE_LABELS.synthetic}".`
  );
}

// The one-line summary under the picker.
/** @param {string} name */
export function syntheticSummary(name) {
  return `synthetic/${name} · spec ${name} · runs in Python, no download · ${EVIDENCE_LABELS.synthetic}`;
}

// The provenance list of a synthetic model in use (Python's `synthetic_select` reply).
/** @param {SyntheticChosen} selected @returns {DetailRow[]} */
export function syntheticRows(selected) {
  const p = selected.provenance;
  return [
    ["Model", `${p?.model_id} (${EVIDENCE_LABELS.synthetic})`, "fixture-label"],
    ["Spec", String(selected.spec)],
    ["Evidence", String(p?.evidence), "fixture-label"],
    ["What it is", String(selected.note)],
    ["Runs in", "the page's Python worker (pyapp.synthetic.adapter.SyntheticAdapter); no download, no model worker"],
    ["Timings", "its cost model's, on a virtual clock (as in python -m pyapp simulate)"],
  ];
}
