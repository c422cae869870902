// @ts-check
// "No run is lost" (issue 41): before the page starts another sweep while one is unfinished,
// it asks — the unfinished sweep stays stored either way, and the runs list can resume it
// (site/runs_panel.js). The dialog (#unfinished-dialog in index.html) says which sweep, how far
// it got and what the choice does; nothing here decides anything else.

const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (document.querySelector(selector));

/** @typedef {"continue" | "new" | "cancel"} Choice */

/** Ask what to do about the unfinished sweep `sweep`; `action` is what the reader pressed
 * ("Run", "New sweep", "Resume 1a2b3c4d"), `offerNew` whether starting another is a choice.
 * Resolves with the button pressed (Escape: "cancel").
 * @param {{run_id: string, trials: number, measure_left: number, heldout_left: number}} sweep
 * @param {{action: string, offerNew?: boolean, offerContinue?: boolean}} options
 * @returns {Promise<Choice>} */
export function askAboutUnfinished(sweep, { action, offerNew = true, offerContinue = true }) {
  const dialog = /** @type {HTMLDialogElement} */ ($("#unfinished-dialog"));
  const total = sweep.trials + sweep.measure_left + sweep.heldout_left;
  $("#unfinished-text").textContent =
    `Sweep ${sweep.run_id.slice(0, 8)} is unfinished: ${sweep.trials} of ${total} trials observed. ` +
    `${action} would leave it unfinished. It stays stored in this browser either way, and the runs ` +
    "list (step 4) can resume it later.";
  /** @type {HTMLButtonElement} */ ($("#unfinished-continue")).hidden = !offerContinue;
  /** @type {HTMLButtonElement} */ ($("#unfinished-new")).hidden = !offerNew;
  $("#unfinished-new").textContent = action.startsWith("Resume") ? `${action} instead` : "Start a new sweep";
  dialog.returnValue = "cancel";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => resolve(/** @type {Choice} */ (["continue", "new"].includes(dialog.returnValue) ? dialog.returnValue : "cancel")),
      { once: true },
    );
  });
}
