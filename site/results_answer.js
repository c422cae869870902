// @ts-check
// Step 4's first screen (issue 41): the run's verdict in words — its first line says when the
// scores are degenerate —, one picture (per condition, each predictor against its frozen
// reference and against climatology), the calibration plot of both predictors, and the
// downloads beside them; the tables below are folded. Python decides every word and draws
// every plot (pyapp/browser/verdict.py, whose flags and templates are pyapp/predict/flags.py;
// pyapp/report/plots.py, skill_plot.py): this file only places them.
//
// Also the marks of a shown run that did not re-derive: every score, plot, table and profile
// of that view says "not re-derived — see mismatches", linked to the list of the mismatches
// the page's re-derivation returned (site/viewer.js).

import { h } from "./dom.js";
import { plotSvg } from "./profile_views.js";
import { addExport } from "./plot_export.js";

const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (document.querySelector(selector));

/** The words of the mark. */
export const NOT_REDERIVED = "not re-derived — see mismatches";

/** @typedef {import("./lab_types.js").RunPlots} RunPlots */
/** @typedef {import("./lab_types.js").RunVerdict} RunVerdict */

/** One verdict cell: the verdict, and why it cannot say.
 * @param {string | null} verdict
 * @param {string | null} reason */
function verdictCell(verdict, reason) {
  const cell = h("td", verdict ?? "—", { class: verdict === "beats climatology" ? "correct" : verdict?.startsWith("fails") ? "incorrect" : "" });
  if (reason) cell.append(h("span", ` — ${reason}`, { class: "muted" }));
  return cell;
}

/** The verdict table: per condition, each predictor against climatology.
 * @param {RunVerdict} verdict */
function verdictTable(verdict) {
  const t = h("table", null, { class: "verdict-table" });
  t.append(h("caption", "Per condition, each predictor against climatology (descriptive)"));
  const head = t.createTHead().insertRow();
  for (const name of ["Condition", "Product predictor", "State-aware predictor"]) head.append(h("th", name, { scope: "col" }));
  const body = t.createTBody();
  for (const row of verdict.rows) {
    const tr = body.insertRow();
    tr.dataset.condition = row.condition;
    tr.append(h("th", row.condition, { scope: "row" }), verdictCell(row.product, row.product_reason), verdictCell(row.state_aware, row.state_aware_reason));
  }
  return t;
}

/** The verdict in words, or what stands in its place.
 * @param {RunVerdict | null} verdict
 */
function answerLines(verdict) {
  if (!verdict) return [h("p", "No answer yet: it appears after the held-out run.", { class: "muted" })];
  const flagged = verdict.flags.length > 0 || verdict.headline.startsWith("DEGENERATE");
  /** @type {HTMLElement[]} */
  const out = [h("p", verdict.headline, { id: "answer-headline", class: flagged ? "answer-headline degenerate incorrect" : "answer-headline" })];
  const more = h("details", null, { class: "answer-more" });
  more.append(h("summary", `Per condition, and in full sentences${verdict.flags.length ? `, with ${verdict.flags.length} flag(s)` : ""}`));
  more.append(verdictTable(verdict));
  if (verdict.flags.length) {
    const list = h("ul", null, { class: "degenerate-flags incorrect" });
    for (const flag of verdict.flags) list.append(h("li", flag));
    more.append(list);
  }
  for (const sentence of verdict.sentences) more.append(h("p", sentence));
  out.push(more);
  return out;
}

/** A figure's plot as Python drew it, with its export buttons.
 * @param {string} selector
 * @param {string | null} svgText
 * @param {string} name */
function placePlot(selector, svgText, name) {
  const figure = $(selector);
  figure.replaceChildren(...(svgText ? [plotSvg(svgText)] : []));
  addExport(figure, name);
}

/** Draw step 4's first screen. `plots`: RunPlots as Python drew them (null before scores);
 * `names`: what the export files are called after (evidence, run id).
 * @param {RunPlots | null} plots
 * @param {{evidence: string, runId: string}} names */
export function renderAnswer(plots, names) {
  for (const mark of document.querySelectorAll("#step-results .not-rederived")) mark.remove(); // markNotRederived's, if any
  const verdict = plots?.verdict ?? null;
  $("#answer-lines").replaceChildren(...answerLines(verdict));
  const suffix = `${names.evidence}-${names.runId}`;
  placePlot("#plot-skill", verdict?.skill_svg ?? null, `skill-${suffix}`);
  placePlot("#plot-calibration", plots?.calibration_svg ?? null, `calibration-${suffix}`);
  placePlot("#plot-cost", plots?.cost_svg ?? null, `cost-${suffix}`);
}

/** One mark, linked to the list of mismatches.
 * @param {number} count */
export function markNode(count) {
  const mark = h("p", "✗ ", { class: "not-rederived incorrect" });
  const link = h("a", NOT_REDERIVED, { href: "#viewing-mismatches" });
  link.addEventListener("click", () => {
    /** @type {HTMLDetailsElement} */ ($("#viewing-mismatches")).open = true;
  });
  mark.append(link, ` (${count} mismatch${count === 1 ? "" : "es"})`);
  return mark;
}

/** Mark everything step 4 shows of a run that did not re-derive: the verdict, every plot,
 * the scores, each folded table (its summary too, so that it shows folded), each frozen
 * profile and the results caption. `count`: how many mismatches were found.
 * @param {number} count */
export function markNotRederived(count) {
  $("#answer-lines").prepend(markNode(count));
  for (const figure of document.querySelectorAll("#step-results figure.plot")) if (figure.querySelector("svg")) figure.prepend(markNode(count));
  $("#scores").prepend(markNode(count));
  for (const fold of document.querySelectorAll("#step-results details.results-fold")) {
    fold.querySelector("summary")?.append(h("span", ` — ${NOT_REDERIVED}`, { class: "not-rederived incorrect" }));
  }
  $("#fold-predictions .table-wrap").before(markNode(count));
  for (const article of document.querySelectorAll("#freeze-view article.frozen")) article.querySelector("h4")?.after(markNode(count));
  const caption = $("#sweep-results-caption");
  caption.textContent = `${caption.textContent} — ${NOT_REDERIVED}`;
}
