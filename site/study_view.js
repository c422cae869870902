// @ts-check
// The Study view (issues 34 and 41): a study folder's study.json — written by
// `python -m pyapp study DIR`, its only writer — picked or dropped, read here (never uploaded)
// and handed to the page's Python (`study_open`: pyapp/browser/study_view.py), which returns
// what to draw, answer first: the study's plain-language answer and flags, then per group of
// pooled cells each condition's verdicts and both predictors' reliability diagram, drawn by
// pyapp/report/plots.py. This file only places them.

import { h } from "./dom.js";
import { plotSvg } from "./profile_views.js";
import { addExport } from "./plot_export.js";
import { messageOf } from "./common/errors.js";

/** @import { RequestFunction } from "./lab_types.js" */

const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (document.querySelector(selector));
const STUDY_KIND = "composition-lab-study";

/** @typedef {import("./lab_types.js").StudyOpened} StudyOpened */
/** @typedef {import("./lab_types.js").StudyGroupView} StudyGroupView */

/** A verdict cell: the verdict in words, and why it cannot say.
 * @param {string | null} verdict
 * @param {string | null} reason */
function verdictCell(verdict, reason) {
  const tone = verdict === "beats climatology" ? "correct" : verdict?.startsWith("fails") ? "incorrect" : "";
  const cell = h("td", verdict ?? "—", tone ? { class: tone } : {});
  if (reason) cell.append(h("span", ` — ${reason}`, { class: "muted" }));
  return cell;
}

/** One group of pooled cells: its title, each condition's verdicts, the reliability
 * diagrams, then (folded) the sentences, the differences and the flags.
 * @param {StudyGroupView} group
 * @param {number} index */
function groupView(group, index) {
  const section = h("section", null, { class: "study-group", "aria-labelledby": `study-group-${index}` });
  section.append(h("h3", group.title, { id: `study-group-${index}` }));
  const t = h("table", null, { class: "verdict-table" });
  t.append(h("caption", "Per condition, each predictor against climatology (descriptive)"));
  const head = t.createTHead().insertRow();
  for (const name of ["Condition", "Product predictor", "State-aware predictor", "From the slice"]) head.append(h("th", name, { scope: "col" }));
  const body = t.createTBody();
  for (const c of group.conditions) {
    const row = body.insertRow();
    row.dataset.condition = c.verdict.condition;
    row.append(
      h("th", c.verdict.condition, { scope: "row" }),
      verdictCell(c.verdict.product, c.verdict.product_reason),
      verdictCell(c.verdict.state_aware, c.verdict.state_aware_reason),
      h("td", c.scope ?? "—"),
    );
  }
  const wrap = h("div", null, { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `Verdicts: ${group.title}` });
  wrap.append(t);
  section.append(wrap);
  const figures = h("div", null, { class: "answer-figures" });
  group.conditions.forEach((c) => {
    if (!c.reliability_svg) return;
    const figure = h("figure", null, { class: "plot", "data-condition": c.verdict.condition });
    figure.append(plotSvg(c.reliability_svg));
    addExport(figure, `reliability-${c.verdict.condition}-study-${index + 1}`);
    figures.append(figure);
  });
  section.append(figures);
  const more = h("details", null, { class: "answer-more" });
  more.append(h("summary", `The answers in full sentences${group.flags.length ? `, and ${group.flags.length} flag(s)` : ""}`));
  for (const text of [...group.answers, ...group.differences]) more.append(h("p", text));
  if (group.flags.length) {
    const list = h("ul", null, { class: "degenerate-flags incorrect" });
    for (const flag of group.flags) list.append(h("li", flag));
    more.append(list);
  }
  section.append(more);
  return section;
}

/** Draw an opened study: its answer first.
 * @param {StudyOpened} study
 * @param {string} name */
function draw(study, name) {
  const view = $("#study-view-body");
  const [first, ...rest] = study.answer;
  /** @type {HTMLElement[]} */
  const parts = [
    h("h3", `${study.name ?? name}: ${study.cells_done} of ${study.cells_planned} cells done`),
    // the confirmatory layer first (study/2): the receipt the hypotheses were frozen in, and each verdict
    ...(study.receipt ? [h("p", `Study receipt: ${study.receipt}`, { class: "muted" })] : []),
    ...(study.hypotheses ?? []).map((line) => h("p", line, { class: "study-hypothesis" })),
    h("p", first ?? "No answer: no group of cells.", { id: "study-answer", class: "answer-headline" }),
  ];
  const answer = h("ul", null, { class: "study-answer" });
  for (const line of rest) answer.append(h("li", line));
  parts.push(answer);
  for (const flag of study.flags) parts.push(h("p", flag, { class: "degenerate incorrect" }));
  study.groups.forEach((group, i) => parts.push(groupView(group, i)));
  view.replaceChildren(...parts);
  view.hidden = false;
}

/** Wire the Study view's file input and drop zone.
 * @param {{request: RequestFunction}} deps */
export function setupStudyView({ request }) {
  const status = $("#study-status");
  /** @param {File[]} files */
  async function open(files) {
    $("#study-view-body").hidden = true;
    if (files.length !== 1) {
      status.textContent = "Open one study.json (the file `python -m pyapp study DIR` writes in DIR).";
      return;
    }
    const text = await files[0].text();
    let kind = null;
    try {
      const read = /** @type {unknown} */ (JSON.parse(text));
      kind = read && typeof read === "object" ? (Reflect.get(read, "kind") ?? null) : null;
    } catch {
      status.textContent = `Cannot open ${files[0].name}: not valid JSON.`;
      return;
    }
    if (kind !== STUDY_KIND) {
      status.textContent = `${files[0].name} is not a study.json (its kind is ${JSON.stringify(kind)}).`;
      return;
    }
    status.textContent = `Reading ${files[0].name} in this page's Python…`;
    try {
      draw(await request("study_open", { study_json: text }, 600_000), files[0].name);
      status.textContent = `${files[0].name}: the study's answer is shown below.`;
    } catch (error) {
      status.textContent = `Cannot open ${files[0].name}: ${messageOf(error)}`;
    }
  }
  const zone = $("#study-drop");
  const input = /** @type {HTMLInputElement} */ ($("#study-file"));
  zone.addEventListener("dragover", (event) => event.preventDefault());
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    open([...(event.dataTransfer?.files ?? [])]).catch((error) => (status.textContent = messageOf(error)));
  });
  input.addEventListener("change", () => {
    open([...(input.files ?? [])]).catch((error) => (status.textContent = messageOf(error)));
    input.value = "";
  });
}
