// @ts-check
// The freeze receipt (pyapp/verify/receipt.py): drawn at the freeze, before the first
// held-out trial starts, with its fingerprint and a download. Python makes the receipt; this
// file only shows it.

import { $, dl } from "./dom.js";

/** @import { Receipt } from "./lab_types.js" */

// Show a receipt (Python's JSON text), or hide the view (null).
/** @param {string | null} receiptJson @returns {Receipt | null} */
export function renderReceipt(receiptJson) {
  const view = $("#receipt-view");
  if (!receiptJson) {
    view.hidden = true;
    return null;
  }
  const receipt = /** @type {Receipt} */ (JSON.parse(receiptJson));
  $("#receipt-fingerprint").textContent = receipt.fingerprint;
  const freezes = receipt.freezes
    .map((f) => `${f.condition}: profile ${f.profile_sha256.slice(0, 12)}…, predictions ${f.predictions_sha256.slice(0, 12)}…` +
      `${f.state_aware ? `, state-aware fit ${f.state_aware.sha256.slice(0, 12)}…` : ""}` +
      `${f.reference_probability != null ? `, reference forecast ${f.reference_probability.toFixed(3)} (pooled profile rate)` : ""}`)
    .join("; ");
  $("#receipt-summary").replaceChildren(
    dl([
      ["Run", receipt.run_id],
      ["Model", `${receipt.model.model_id} @ ${receipt.model.revision} (${receipt.model.dtype}, ${receipt.model.backend ?? "no backend"})`],
      ["Task set", `seed ${receipt.task_set.seed}, parameters ${receipt.task_set.params_sha256.slice(0, 12)}…, ${receipt.task_set.generator_version}`],
      ["Chain protocol", receipt.terms?.chain_protocol ?? "chain-design/1 (not recorded: before trace/4)"],
      ["Held-out tasks", receipt.terms?.sealed ? `sealed: drawn after the freeze from seed ${receipt.draw_seed ?? "?"}` : "unsealed: they follow from the task seed"],
      ["Frozen", freezes],
      ["Chain head", `${receipt.chain_head} (record ${receipt.chain_sequence})`],
      ["At", receipt.at],
    ]),
  );
  view.hidden = false;
  view.dataset.fingerprint = receipt.fingerprint;
  return receipt;
}
