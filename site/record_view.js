// @ts-check
// The raw record dialog (#record-dialog): everything one trial holds, drawn from the trial
// as Python wrote it (the page keeps each trial's JSON text; it is parsed when opened).

import { $, dl, fmt, h, table, trialLabel, yesNo } from "./dom.js";
import { verdictOf } from "./results_table.js";

/** @import { Completion, Trial } from "./lab_types.js" */

/** @param {Completion} c @returns {[string, unknown][]} */
function completionFacts(c) {
  return [
    ["Finish reason", c.finish_reason ?? "none"],
    ["Input / output tokens", `${c.input_tokens ?? "—"} / ${c.output_tokens ?? "—"}`],
    ["Generation ms", fmt(c.generation_ms, 1)],
    ["Failure", c.failure ? `${c.failure.code}: ${c.failure.message}` : "none"],
  ];
}

// `runLabel`: the run's evidence label when it is not model evidence (dom.js notEvidenceLabel).
/** @param {Trial} trial @param {string | null} [runLabel] */
export function showRecord(trial, runLabel = null) {
  const trialId = trial.trial_id;
  const body = $("#record-body");
  body.replaceChildren();
  body.dataset.trialId = trialId;
  body.append(
    dl([
      ["Trial", trial.trial_id],
      ["Evidence", `${trialLabel(trial, runLabel)} (recorded: ${trial.evidence} — ${trial.evidence_note})`],
      ["Verdict", `${verdictOf(trial)[0]} (${trial.outcome}); result ${trial.result ?? "none"}, expected ${trial.expected}`],
      ["Failure", trial.failure ? `${trial.failure.code} at ${trial.failure.stage}: ${trial.failure.message}` : "none"],
      ["Tokens in / out", `${trial.input_tokens ?? "—"} / ${trial.output_tokens ?? "—"}`],
      [
        "Timings ms",
        Object.entries(trial.timings)
          .map(([k, v]) => `${k.replace(/_ms$/, "")} ${fmt(v, 3)}`)
          .join(" · "),
      ],
    ]),
  );
  if (trial.prompt) {
    body.append(h("h4", `Prompt (${trial.prompt.template_id}, sha256 ${trial.prompt.template_sha256.slice(0, 12)}…)`));
    body.append(h("pre", trial.prompt.text, { class: "record-prompt" }));
  }
  if (trial.completion) {
    body.append(h("h4", "Raw completion"));
    body.append(h("pre", trial.completion.text, { class: "record-completion" }));
    body.append(dl(completionFacts(trial.completion)));
  }
  if (trial.condition !== "controlled-chain") {
    body.append(h("h4", "Parse result"));
    const parsed =
      trial.program !== null
        ? `program: ${JSON.stringify(trial.program)}`
        : trial.condition === "model-only" && trial.result !== null
          ? `integer: ${trial.result}`
          : trial.failure && ["parse", "generation"].includes(trial.failure.stage)
            ? `nothing parsed (${trial.failure.code}); no interpreter work`
            : "—";
    body.append(h("p", parsed, { class: "record-parse" }));
  }
  if (trial.steps.length) {
    body.append(h("h4", `Interpreter steps (${trial.steps.length})`));
    body.append(table(["Path", "Op", "Operands", "Result"], trial.steps.map((s) => [s.path, s.op, s.operands.join(", "), s.result])));
  }
  if (trial.chain) {
    const c = trial.chain;
    body.append(h("h4", `Chain route: ${c.status}`));
    body.append(
      dl([
        ["Calls", `${c.calls.length} made of ${c.planned_calls} planned; ${c.unobserved_calls} unobserved`],
        ["Halt", c.halt ? `${c.halt.code}: ${c.halt.message}` : "none"],
        ["First local error", c.first_local_error === null ? "none" : `call ${c.first_local_error}`],
        ["All steps correct", yesNo(c.all_steps_correct)],
        ["Final correct", yesNo(c.final_correct)],
        ["Reserved tokens in / out", `${c.reserved_input_tokens} / ${c.reserved_output_tokens}`],
        ["Used tokens in / out", `${c.used_input_tokens ?? "—"} / ${c.used_output_tokens ?? "—"}`],
      ]),
    );
    if (c.calls.length) {
      body.append(
        table(
          ["#", "Op", "Left (source)", "Right (source)", "Completion", "Finish", "Parsed", "Local expected", "Locally correct"],
          c.calls.map((call) => [
            call.index,
            call.op,
            `${call.left} (${call.left_source})`,
            `${call.right} (${call.right_source})`,
            JSON.stringify(call.completion.text),
            call.completion.finish_reason ?? call.completion.failure?.code ?? "—",
            call.parsed,
            call.local_expected,
            yesNo(call.local_correct),
          ]),
          "chain-calls",
        ),
      );
      for (const call of c.calls) {
        const details = h("details");
        details.append(h("summary", `Call ${call.index} prompt (${call.prompt.template_id})`), h("pre", call.prompt.text));
        body.append(details);
      }
    }
  }
  const raw = h("details");
  raw.append(h("summary", "Whole record as JSON"), h("pre", JSON.stringify(trial, null, 2), { class: "record-json" }));
  body.append(raw);
  const label = trialLabel(trial, runLabel);
  $("#record-heading").textContent = `Raw record: ${trial.trial_id}${trial.evidence === "model" && !runLabel ? "" : ` — ${label}`}`;
  $("#record-dialog", HTMLDialogElement).showModal();
}

// ---- drawing: freeze view, predictions, scores, plots --------------------------------
