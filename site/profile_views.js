// @ts-check
// The experiment's profile views: frozen profiles, predictions beside observations, scores
// and plots, and the journal list. Each is drawn from Python's documents as they are; no
// decision is recomputed here.

import { $, dl, fmt, h, meaningOf, notEvidenceLabel, table, yesNo } from "./dom.js";

/** @import { ConditionResult, InterruptedAttempts, Interval, JournalEntry, Observation, PredictionsDocument, RunPlots, Trial } from "./lab_types.js" */
/** @import { ShownPrediction } from "./page_types.js" */


/** @typedef {Pick<Observation, "outcome" | "final_correct" | "all_steps_correct" | "cost_ms">} Observed */

/** @param {PredictionsDocument | null} predictionsDoc */
function frozenProfiles(predictionsDoc) {
  return predictionsDoc ? predictionsDoc.conditions.map((c) => c.frozen) : [];
}

// The frozen profiles (#freeze-view), from the predictions document.
// `UNPINNED: …` when the model was asked for by a branch (the predictions document says).
/** @param {PredictionsDocument | null} predictionsDoc @param {string} condition */
function revisionNote(predictionsDoc, condition) {
  return predictionsDoc?.conditions.find((c) => c.frozen.profile.condition === condition)?.revision_note ?? "—";
}

// `label`: the run's evidence label when it is not model evidence (else each profile's own).
/** @param {PredictionsDocument | null} predictionsDoc @param {string | null} [label] */
export function renderFreeze(predictionsDoc, label = null) {
  const view = $("#freeze-view");
  const profiles = frozenProfiles(predictionsDoc);
  if (!profiles.length) {
    view.replaceChildren(h("p", "Nothing frozen yet.", { class: "muted" }));
    return;
  }
  view.replaceChildren();
  for (const f of profiles) {
    const article = h("article", null, { class: "frozen", "data-condition": f.profile.condition, "data-sha256": f.sha256 });
    article.dataset.exploratory = String(f.exploratory);
    const shown = label ?? notEvidenceLabel(f.profile.evidence);
    article.append(h("h4", `${f.profile.condition}${shown ? ` — ${shown}` : ""}`, shown ? { class: "fixture-label" } : {}));
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
        ["Revision", revisionNote(predictionsDoc, f.profile.condition)],
        ["Seed / generator", `${f.seed} / ${f.generator_version}`],
        ["Prompt templates", Object.entries(f.prompt_templates).map(([id, sha]) => `${id} ${sha.slice(0, 12)}…`).join("; ")],
        ["Held-out tasks predicted", f.heldout_task_ids.join(", ")],
        ["Profile trials", f.profile.trial_ids.length],
        ["Frozen at", f.frozen_at],
      ]),
    );
    article.append(
      table(
        ["Op", "Trials (distinct states)", "Successes", "Rate", "95% Wilson", "Mean cost ms (gen + exec)", "Mean tokens in / out"],
        f.profile.ops.map((o) => [
          o.op,
          o.distinct_states == null ? String(o.trials) : `${o.trials} (${o.distinct_states})`,
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

/** @param {HTMLTableRowElement} row @param {Observed | null} observed */
function observationCells(row, observed) {
  const cells = row.cells;
  cells[6].textContent = observed ? observed.outcome : "pending";
  cells[6].className = observed ? (observed.final_correct ? "correct" : "incorrect") : "muted";
  cells[7].textContent = observed ? yesNo(observed.final_correct) : "";
  cells[8].textContent = observed ? (observed.all_steps_correct === null ? "unobserved (whole task)" : yesNo(observed.all_steps_correct)) : "";
  cells[9].textContent = observed ? fmt(observed.cost_ms, 1) : "";
  row.dataset.observed = String(Boolean(observed));
}

// The predictions table: every prediction shown (condition -> [Prediction]) beside its
// observation once made. Returns trial id -> row, so that an arriving trial fills its row
// without a search.
/**
 * @param {Map<string, ShownPrediction[]>} shownPredictions
 * @param {PredictionsDocument | null} predictionsDoc
 * @param {string | null} label
 * @returns {Map<string, HTMLTableRowElement>}
 */
export function renderPredictions(shownPredictions, predictionsDoc, label) {
  /** @type {Map<string, HTMLTableRowElement>} */
  const rows = new Map();
  const body = $("#predictions-table tbody", HTMLTableSectionElement);
  body.replaceChildren();
  /** @type {Map<string, Observation>} */
  const observations = new Map();
  for (const result of predictionsDoc?.conditions ?? []) {
    for (const o of result.observations) observations.set(`${result.frozen.profile.condition}/${o.task_id}`, o);
  }
  let count = 0;
  for (const [condition, predictions] of shownPredictions) {
    for (const p of predictions) {
      count += 1;
      const row = body.insertRow();
      const trialId = `${condition}/${p.task_id}`;
      row.dataset.trialId = trialId;
      rows.set(trialId, row);
      row.insertCell().textContent = condition;
      const th = h("th", p.task_id, { scope: "row" });
      row.append(th);
      row.insertCell().textContent = p.ops.join(" → ") || "—";
      const product = p.probability === null ? `— (${p.note})` : fmt(p.probability, 4);
      const stateAware = p.state_aware_probability ?? null;
      row.insertCell().textContent = stateAware === null ? product : `${product} · ${fmt(stateAware, 4)}`;
      row.insertCell().textContent = fmt(p.cost_ms, 1);
      row.insertCell().textContent = `${fmt(p.input_tokens, 1)} / ${fmt(p.output_tokens, 1)}`;
      for (let i = 0; i < 4; i++) row.insertCell();
      observationCells(row, observations.get(`${condition}/${p.task_id}`) ?? null);
    }
  }
  $("#predictions-caption").textContent = count
    ? `${count} predictions from the frozen profiles${label ? ` — ${label}` : ""}`
    : "No predictions yet.";
  return rows;
}

// A held-out trial just arrived: put its observation beside its prediction at once.
/** @param {Map<string, HTMLTableRowElement>} rows @param {Trial} trial */
export function fillObservation(rows, trial) {
  const row = rows.get(trial.trial_id);
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

// Per condition: held-out attempts a Cancel, an infrastructure failure or a closed page cut
// short (never scored, attempted again). Their cut-off output is kept raw, never shown.
/** @param {InterruptedAttempts | null} cut */
function interruptedCell(cut) {
  if (!cut) return "—";
  return (
    `${cut.total} (cancelled ${cut.cancelled}, infrastructure ${cut.infrastructure}, page closed ${cut.page_closed}; ` +
    `attempted again ${cut.attempted_again})`
  );
}

/** @param {Interval | null | undefined} i @param {number} [digits] */
const interval = (i, digits = 4) =>
  !i ? "—" : i.low === null ? `${fmt(i.mean, digits)} (n=${i.n}: no interval)` : `${fmt(i.mean, digits)} [${fmt(i.low, digits)}, ${fmt(i.high, digits)}]`;

// What each Brier score means (pyapp/predict/skill.py, the document's `skill`): skill against
// the reference forecast frozen with the profile, the decomposition, and the two predictors'
// paired difference.
/** @param {ConditionResult[]} scored */
function skillTable(scored) {
  /** @type {unknown[][]} */
  const rows = [];
  for (const c of scored) {
    const s = c.skill;
    if (!s) continue;
    const condition = c.frozen.profile.condition;
    for (const [name, p] of /** @type {const} */ ([["product", s.product], ["state-aware", s.state_aware]])) {
      if (!p) continue;
      const d = p.decomposition;
      rows.push([condition, name, interval(p.brier), `${fmt(p.brier_reference, 4)} (forecast ${fmt(s.reference_probability, 3)})`, fmt(p.skill, 3), fmt(d?.reliability, 4), fmt(d?.resolution, 4), fmt(d?.uncertainty, 4)]);
    }
    rows.push([condition, "product − state-aware", interval(s.difference), "—", "—", "—", "—", "—"]);
  }
  const wrap = h("div", null, { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Brier skill and decomposition" });
  if (!rows.length) {
    wrap.append(h("p", "No skill scores in this document (written before they existed).", { class: "muted" }));
    return wrap;
  }
  wrap.append(
    table(
      ["Condition", "Predictor", "Brier, final answer [95%]", "Reference Brier (pooled profile rate)", "Brier skill", "Reliability", "Resolution", "Uncertainty"],
      rows,
      "skill-table",
    ),
    h(
      "p",
      "Brier skill = 1 − Brier / reference Brier: 1 is perfect, 0 no better than always forecasting the profile's pooled success rate (frozen with the profile), below 0 worse. " +
        "Brier = reliability − resolution + uncertainty. Intervals: 95 % Student-t over held-out tasks; the difference is paired over the tasks both predictors scored (descriptive, not a test).",
      { class: "muted" },
    ),
  );
  return wrap;
}

// A plot as Python drew it (pyapp/report/plots.py: the report's own drawing), from the SVG
// text of the page's own Python worker's reply, escaped there (pyapp/report/markup.py). It is
// parsed in an inert document (no script runs, nothing loads), as the report's reader parses
// the same text, and only an <svg> is taken: the one markup the page parses; every other
// text goes in as text.
/** @param {string} text @returns {Element} */
export function plotSvg(text) {
  const body = new DOMParser().parseFromString(text, "text/html").body;
  const svg = body.firstElementChild;
  if (body.childElementCount !== 1 || !svg || svg.namespaceURI !== "http://www.w3.org/2000/svg" || svg.localName !== "svg") {
    throw new Error("a plot from Python is not one SVG");
  }
  return document.importNode(svg, true);
}

// Scores: the predictions document's numbers (its plots, `plots`: RunPlots as Python drew them,
// are placed by site/results_answer.js).
/** @param {PredictionsDocument | null} predictionsDoc @param {string | null} label @param {RunPlots | null} [plots] */
export function renderScores(predictionsDoc, label, plots = null) {
  const view = $("#scores");
  const scored = predictionsDoc?.conditions.filter((c) => c.observations.length) ?? [];
  if (!predictionsDoc || !scored.length) {
    view.replaceChildren(h("p", "No scores yet: they appear after the held-out run.", { class: "muted" }));
    return;
  }
  view.replaceChildren();
  // Python's lines first (pyapp/predict/flags.py): the degenerate flags — a run whose held-out
  // outcomes are all 0 says so in the first line — then the descriptive answer
  for (const line of plots?.flags ?? []) view.append(h("p", line, { class: "degenerate incorrect" }));
  for (const line of plots?.answers ?? []) view.append(h("p", line, { class: "answer" }));
  if (label) view.append(h("p", `Scores of a run labelled ${label}: ${meaningOf(predictionsDoc.evidence)}.`, { class: "fixture-label" }));
  view.append(
    table(
      ["Condition", "n", "Brier, final answer (naive proxy)", "Brier, all steps", "Cost MAE ms", "Cost signed error ms", "Cost relative error", "Held-out attempts interrupted and attempted again"],
      scored.map((c) => {
        const s = c.scores;
        return [
          `${c.frozen.profile.condition}${c.frozen.exploratory ? " (exploratory)" : ""}`,
          s.n,
          fmt(s.brier_final_proxy, 4),
          c.frozen.profile.condition === "controlled-chain" ? fmt(s.brier_all_steps, 4) : "— (internal steps unobserved)",
          fmt(s.cost.mean_absolute_error_ms, 1),
          fmt(s.cost.mean_signed_error_ms, 1),
          fmt(s.cost.mean_relative_error, 3),
          interruptedCell(c.interrupted),
        ];
      }),
      "scores-table",
    ),
  );
  view.append(skillTable(scored));
  // the interpretation says "under the assumptions above": they are listed right above it
  const assumptions = h("ul", null, { class: "assumptions muted", "aria-label": "Assumptions of the prediction" });
  for (const text of predictionsDoc.assumptions ?? []) assumptions.append(h("li", text));
  view.append(h("p", "The prediction's assumptions:", { class: "muted" }), assumptions, h("p", predictionsDoc.interpretation, { class: "muted" }));
}

/** @param {JournalEntry} entry */
export function addJournalEntry(entry) {
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
