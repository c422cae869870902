"""The report's sections, each a function from records to `Markup`.

They show what the page shows for a run — the evidence label, provenance, frozen profiles,
predictions beside observations, scores, every trial with its raw record, interruptions and
the journal — with the page's own wording for labels, so a reader moving between the page
and a report finds the same things under the same names. Past `MAX_LISTED_ROWS` trials
(tasks, interruptions) a list shows counts per group and a sample (`pyapp.report.sample`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pyapp.predict import ConditionResult, FrozenProfile
from pyapp.records import (
    EVIDENCE_LABELS,
    EVIDENCE_MEANINGS,
    EVIDENCE_NOTES,
    Evidence,
    RunTerms,
    Trace,
    Trial,
    evidence_label,
    protocol_of,
    to_json,
)
from pyapp.records import run_evidence as evidence_of
from pyapp.report.markup import Markup, el, join
from pyapp.report.sample import Listed, listed

CONTROL_LABEL = EVIDENCE_LABELS["control"]
BANNERS: dict[Evidence, str] = {kind: label.upper() for kind, label in EVIDENCE_LABELS.items()}
"""The evidence kinds' labels in capitals (a run's banner: `banner_text`)."""

NOT_EVIDENCE_LABELS: dict[Evidence, str] = {
    kind: EVIDENCE_LABELS[kind] for kind in ("fixture", "synthetic")
}
"""The label beside every number of a run that is never model evidence (controls are
labelled per trial)."""


def fmt(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):  # a value that rounds to zero is 0, never -0
        return f"{0.0 if abs(value) < 0.5 * 10**-digits else value:.{digits}f}"
    return str(value)


def yes_no(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no")


def facts(rows: Iterable[tuple[str, object]], cls: str = "facts") -> Markup:
    """A definition list: term → value (None shows as —)."""
    items = [
        (el("dt", None, term), el("dd", None, "—" if value is None else value))
        for term, value in rows
    ]
    return el("dl", {"class": cls}, items)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    caption: str | None = None,
    cls: str | None = None,
    row_header: bool = False,
) -> Markup:
    """A table with column headers; with `row_header` the first cell of a row is its header."""
    head = el("thead", None, el("tr", None, [el("th", {"scope": "col"}, h) for h in headers]))
    body = []
    for cells in rows:
        out = []
        for i, value in enumerate(cells):
            text = "—" if value is None else value
            out.append(
                el("th", {"scope": "row"}, text) if row_header and i == 0 else el("td", None, text)
            )
        body.append(el("tr", None, out))
    return el(
        "table",
        {"class": cls},
        el("caption", None, caption) if caption else None,
        head,
        el("tbody", None, body),
    )


def chain_protocol_text(terms: RunTerms | None) -> str:
    """A run's chain protocol in words: its version and how many calls a route allows."""
    protocol = protocol_of(terms)
    note = "" if terms is not None else " (recorded before trace/4: the only one there was)"
    return f"{protocol.version}, {protocol.limits.max_calls} calls a route{note}"


def sealed_text(trace: Trace) -> str:
    """Whether a run is sealed, in words (docs/audit.md)."""
    if trace.run.terms is None or not trace.run.terms.sealed:
        return "unsealed: drawn from the task seed"
    if trace.draw is None:
        return "sealed: not drawn yet"
    return (
        f"sealed: drawn after every freeze from the held-out draw seed {trace.draw.draw_seed}"
        " (re-derived by reproduce from the freeze records)"
    )


def run_evidence(trace: Trace) -> Evidence:
    """The run's label (`pyapp.records.evidence.run_evidence`): the model's evidence, never
    `model` for a fixture or a synthetic model, `control` when no model ran."""
    return evidence_of(trace.model)


def banner_text(trace: Trace) -> str:
    """The run's evidence label as its banner says it (the page's wording, in capitals; a
    reference subject by its own label)."""
    m = trace.model
    model_id, config = (m.model_id, m.config_sha256) if m is not None else (None, None)
    return evidence_label(run_evidence(trace), model_id, config).upper()


def banner(trace: Trace) -> Markup:
    evidence = run_evidence(trace)
    lines: list[object] = [
        el("p", {"class": "banner-label"}, el("strong", None, banner_text(trace)))
    ]
    if trace.model is not None:
        m = trace.model
        lines.append(
            el(
                "p",
                None,
                f"Model {m.model_id} @ {m.revision} ({m.source}, {m.dtype}, "
                f"{m.backend_actual or 'no backend'}).",
            )
        )
    if evidence in NOT_EVIDENCE_LABELS:
        lines.append(
            el(
                "p",
                None,
                f"Every number in this report is {EVIDENCE_MEANINGS[evidence]} "
                f"({NOT_EVIDENCE_LABELS[evidence]}).",
            )
        )
    lines.append(el("p", None, EVIDENCE_NOTES[evidence]))
    attrs = {"class": f"banner evidence-{evidence}", "role": "note", "aria-label": "Evidence"}
    return el("section", {**attrs, "id": "evidence"}, lines)


def provenance(trace: Trace, sweep_record: dict[str, Any] | None) -> Markup:
    r, env = trace.run, trace.environment
    parts: list[object] = [el("h2", None, "Provenance")]
    parts.append(el("h3", None, "Run"))
    parts.append(
        facts(
            [
                ("Run id", r.run_id),
                ("Created", r.created_at),
                ("Seed", r.seed),
                ("Generator", r.generator_version),
                ("Conditions", ", ".join(r.conditions)),
                ("Chain protocol", chain_protocol_text(r.terms)),
                ("Held-out tasks", sealed_text(trace)),
                ("Task parameters", json.dumps(to_json(r.task_params), sort_keys=True)),
            ]
        )
    )
    parts.append(
        table(
            ["Prompt template", "SHA-256"],
            sorted(r.prompt_templates.items()),
            cls="templates",
            row_header=True,
        )
    )
    parts.append(el("h3", None, "Environment"))
    browser = env.browser
    parts.append(
        facts(
            [
                ("Runtime", f"{env.runtime} (Python {env.python}) on {env.platform}"),
                ("pyapp version", env.pyapp_version),
                ("Clock", json.dumps(to_json(env.clock), sort_keys=True)),
                (
                    "Browser",
                    None
                    if browser is None
                    else f"{browser.user_agent}; cross-origin isolated "
                    f"{yes_no(browser.cross_origin_isolated)}; "
                    f"{browser.hardware_concurrency or '—'} cores",
                ),
            ]
        )
    )
    if trace.model is not None:
        m = trace.model
        parts.append(el("h3", None, "Model"))
        parts.append(
            facts(
                [
                    ("Model id", m.model_id),
                    ("Revision (asked / served)", f"{m.revision} / {m.revision_served or '—'}"),
                    ("Source", m.source),
                    ("Evidence", f"{m.evidence}: {EVIDENCE_NOTES[m.evidence]}"),
                    ("Dtype", m.dtype),
                    (
                        "Backend (requested / used)",
                        f"{m.backend_requested} / {m.backend_actual or '—'}",
                    ),
                    (
                        "Adapter",
                        None
                        if m.adapter is None
                        else json.dumps(to_json(m.adapter), sort_keys=True),
                    ),
                    (
                        "transformers.js / ONNX Runtime",
                        f"{m.transformers_js_version or '—'} / {m.onnxruntime_version or '—'}",
                    ),
                    ("Threads", m.threads),
                    ("FLOPs", "unavailable (null, never zero)"),
                ]
            )
        )
        parts.append(
            table(
                ["#", "Load", "JSON"],
                (
                    (i + 1, f"load {i + 1}", json.dumps(to_json(load), sort_keys=True))
                    for i, load in enumerate(m.loads)
                ),
                caption="Every load in the session",
                cls="loads",
            )
        )
    if sweep_record is not None:
        parts.append(el("h3", None, "Sweep record (run.json)"))
        parts.append(
            el("pre", {"class": "json"}, json.dumps(sweep_record, indent=2, ensure_ascii=False))
        )
    return el("section", {"id": "provenance"}, parts)


def _frozen_facts(f: FrozenProfile) -> Markup:
    templates = "; ".join(f"{k} {v[:12]}…" for k, v in sorted(f.prompt_templates.items()))
    return facts(
        [
            (
                "Model",
                f"{f.model_id} @ {f.model_revision} ({f.model_dtype}, {f.backend or 'no backend'})",
            ),
            ("Seed / generator", f"{f.seed} / {f.generator_version}"),
            ("Chain protocol", chain_protocol_text(f.terms)),
            ("Prompt templates", templates),
            ("Held-out tasks predicted", ", ".join(f.heldout_task_ids)),
            ("Profile trials", len(f.profile.trial_ids)),
            ("Frozen at", f.frozen_at),
        ]
    )


def profile(result: ConditionResult) -> Markup:
    f = result.frozen
    not_evidence = NOT_EVIDENCE_LABELS.get(f.profile.evidence)
    label = f" — {not_evidence}" if not_evidence else ""
    mark = (
        el(
            "p",
            {"class": "exploratory"},
            f"EXPLORATORY: {f.exploratory_reason}. Its scores are not a confirmatory test.",
        )
        if f.exploratory
        else el(
            "p",
            {"class": "confirmatory"},
            "Confirmatory: no held-out task of this condition was observed before the freeze.",
        )
    )
    ops = table(
        [
            "Op",
            "Trials",
            "Successes",
            "Rate",
            "95% Wilson",
            "Mean cost ms (gen + exec)",
            "Mean tokens in / out",
        ],
        (
            [
                o.op,
                o.trials,
                o.successes,
                fmt(o.rate),
                f"[{fmt(o.wilson_low)}, {fmt(o.wilson_high)}]",
                fmt(o.mean_cost_ms, 1),
                f"{fmt(o.mean_input_tokens, 1)} / {fmt(o.mean_output_tokens, 1)}",
            ]
            for o in f.profile.ops
        ),
        caption=f"Primitive profile: {f.profile.condition}",
        cls="profile-ops",
        row_header=True,
    )
    e = f.profile.encoding
    encoding = table(
        ["Pair", "Op", "JSON correct", "Prose correct", "Agree"],
        (
            [p.pair, p.op, yes_no(p.json_correct), yes_no(p.prose_correct), yes_no(p.agree)]
            for p in e.pairs
        ),
        caption=f"Encoding probes: {e.complete_pairs} complete pairs; agreement "
        f"{fmt(e.agreement_rate)}; JSON rate {fmt(e.json_rate)}; prose rate {fmt(e.prose_rate)}",
        cls="profile-encoding",
        row_header=True,
    )
    sha = el("p", {"class": "sha"}, "SHA-256 ", el("code", {"class": "sha256"}, f.sha256))
    attrs = {"class": "frozen", "data-condition": f.profile.condition, "data-sha256": f.sha256}
    heading = el("h3", None, f"{f.profile.condition}{label}")
    return el("article", attrs, heading, sha, mark, _frozen_facts(f), ops, encoding)


def predictions(results: Sequence[ConditionResult], not_evidence: str | None) -> Markup:
    rows = []
    for result in results:
        observed = {o.task_id: o for o in result.observations}
        for p in result.predictions:
            o = observed.get(p.task_id)
            steps = (
                None
                if o is None
                else (
                    "unobserved (whole task)"
                    if o.all_steps_correct is None
                    else yes_no(o.all_steps_correct)
                )
            )
            rows.append(
                [
                    p.task_id,
                    result.frozen.profile.condition,
                    " → ".join(p.ops) or "—",
                    f"— ({p.note})" if p.probability is None else fmt(p.probability, 4),
                    fmt(p.cost_ms, 1),
                    f"{fmt(p.input_tokens, 1)} / {fmt(p.output_tokens, 1)}",
                    "not observed" if o is None else o.outcome,
                    None if o is None else yes_no(o.final_correct),
                    steps,
                    None if o is None else fmt(o.cost_ms, 1),
                ]
            )
    label = f" — {not_evidence}" if not_evidence else ""
    return table(
        [
            "Task",
            "Condition",
            "Ops",
            "Predicted p",
            "Predicted ms",
            "Predicted tokens in / out",
            "Observed",
            "Final correct",
            "All steps correct",
            "Observed ms",
        ],
        rows,
        caption=f"{len(rows)} predictions from the frozen profiles{label}",
        cls="predictions",
        row_header=True,
    )


def scores(
    results: Sequence[ConditionResult], interpretation: str, not_evidence: str | None
) -> Markup:
    scored = [c for c in results if c.observations]
    if not scored:
        return el("p", {"class": "muted"}, "No scores: no held-out task was observed.")
    rows = []
    for c in scored:
        s, condition = c.scores, c.frozen.profile.condition
        rows.append(
            [
                f"{condition}{' (exploratory)' if c.frozen.exploratory else ''}",
                s.n,
                fmt(s.brier_final_proxy, 4),
                fmt(s.brier_all_steps, 4)
                if condition == "controlled-chain"
                else "— (internal steps unobserved)",
                fmt(s.cost.mean_absolute_error_ms, 1),
                fmt(s.cost.mean_signed_error_ms, 1),
                fmt(s.cost.mean_relative_error, 3),
            ]
        )
    note = el("p", {"class": "fixture-label"}, f"Scores of a run labelled {not_evidence}.")
    return join(
        note if not_evidence else None,
        table(
            [
                "Condition",
                "n",
                "Brier, final answer (naive proxy)",
                "Brier, all steps",
                "Cost MAE ms",
                "Cost signed error ms",
                "Cost relative error",
            ],
            rows,
            cls="scores",
            row_header=True,
        ),
        el("p", {"class": "muted"}, interpretation),
    )


def verdict(trial: Trial) -> tuple[str, str]:
    """The page's verdict word and its class: correct, wrong or failed."""
    if trial.correct:
        return "correct", "correct"
    return ("failed", "incorrect") if trial.failure else ("wrong", "incorrect")


def outcome_text(trial: Trial) -> str:
    f = trial.failure or (trial.chain.halt if trial.chain else None)
    if trial.chain is not None and trial.chain.status == "unsupported":
        return "unsupported (no route under this chain protocol; zero model calls)"
    if f is None:
        return trial.outcome
    limit = f" ({f.limit}{'' if f.maximum is None else f' > {f.maximum}'})" if f.limit else ""
    halt = "" if trial.outcome == f.code else f" [halt: {f.code}]"
    return f"{trial.outcome}{halt}{limit} — {f.stage}"


def trial_row(trial: Trial, split: str) -> Markup:
    word, cls = verdict(trial)
    record = json.dumps(to_json(trial), indent=2, ensure_ascii=False)
    raw = el(
        "details",
        None,
        el("summary", None, f"Raw record of {trial.trial_id}"),
        el("pre", {"class": "json"}, record),
    )
    evidence_cls = "" if trial.evidence == "model" else "fixture-label"
    return el(
        "tr",
        {"data-trial-id": trial.trial_id, "data-evidence": trial.evidence},
        el("th", {"scope": "row"}, trial.task_id),
        el("td", None, trial.condition),
        el("td", None, split),
        el("td", {"class": evidence_cls or None}, trial.evidence),
        el("td", {"class": cls}, word),
        el("td", None, outcome_text(trial)),
        el("td", {"class": "num"}, f"{fmt(trial.input_tokens)} / {fmt(trial.output_tokens)}"),
        el("td", {"class": "num"}, fmt(trial.timings.total_ms, 1)),
        el("td", None, raw),
    )


def sampled_counts(shown: Listed[Any], what: str, headers: Sequence[str]) -> list[Markup]:
    """When `shown` is a sample: the sentence saying so and the table of counts per group."""
    if not shown.sampled:
        return []
    rows = ([*key, count] for key, count in shown.counts)  # type: ignore[misc]
    return [
        el("p", {"class": "sampled"}, shown.note(what, "in trace.json")),
        table([*headers, what.capitalize()], rows, caption=f"{what.capitalize()} per group"),
    ]


def trials(trace: Trace) -> Markup:
    split = {t.id: t.split for t in trace.tasks}
    s = trace.summary
    shown = listed(trace.trials, lambda t: (t.condition, verdict(t)[0], t.outcome))
    caption = (
        f"{s.trials} trials: {s.correct} correct, {s.incorrect} incorrect, {s.failed} failed; "
        f"{s.model_evidence_trials} model-evidence trials. Supplied-program rows: "
        f"{CONTROL_LABEL}."
        + (f" Sampled: {len(shown.rows):,} of {shown.total:,} rows." if shown.sampled else "")
    )
    head = [
        "Task",
        "Condition",
        "Split",
        "Evidence",
        "Verdict",
        "Outcome",
        "Tokens in / out",
        "Total ms",
        "Raw record",
    ]
    return join(
        sampled_counts(shown, "trials", ["Condition", "Verdict", "Outcome"]),
        el(
            "table",
            {"class": "results"},
            el("caption", None, caption),
            el("thead", None, el("tr", None, [el("th", {"scope": "col"}, h) for h in head])),
            el("tbody", None, [trial_row(t, split.get(t.task_id, "—")) for t in shown.rows]),
        ),
    )


def tasks(trace: Trace) -> Markup:
    shown = listed(trace.tasks, lambda t: (t.family, t.split))
    caption = f"The {len(trace.tasks)} tasks of seed {trace.run.seed}" + (
        f" (sampled: {len(shown.rows):,} rows)" if shown.sampled else ""
    )
    return join(
        sampled_counts(shown, "tasks", ["Family", "Split"]),
        table(
            ["Task", "Family", "Split", "Registers", "Reference program", "Answer"],
            (
                [
                    t.id,
                    t.family,
                    t.split,
                    " ".join(f"{k}={v}" for k, v in t.registers.items()),
                    json.dumps(t.program, separators=(",", ":")),
                    t.answer,
                ]
                for t in shown.rows
            ),
            caption=caption,
            cls="tasks",
            row_header=True,
        ),
    )


def interruptions_and_journal(trace: Trace) -> Markup:
    parts: list[object] = [el("h2", None, "Interruptions")]
    if trace.interruptions:
        shown = listed(trace.interruptions, lambda i: (i.reason,))
        parts.extend(sampled_counts(shown, "interruptions", ["Reason"]))
        parts.append(
            table(
                ["Trial", "At", "Reason", "Partial record"],
                (
                    [
                        i.trial_id,
                        i.at,
                        i.reason,
                        "none" if i.partial is None else outcome_text(i.partial),
                    ]
                    for i in shown.rows
                ),
                caption="Trials cut short: never scored, attempted again",
                row_header=True,
            )
        )
    else:
        parts.append(el("p", {"class": "muted"}, "None."))
    parts.append(el("h2", None, "Journal"))
    parts.append(
        el(
            "p",
            {"class": "muted"},
            "Free prompts to the loaded model: exported, never in a profile, prediction or score.",
        )
    )
    if trace.journal:
        items = [
            el(
                "li",
                None,
                el("p", None, el("strong", None, "Asked "), f"({e.at}): "),
                el("pre", None, e.prompt),
                el("p", None, "Reply:"),
                el("pre", None, e.completion.text),
            )
            for e in trace.journal
        ]
        parts.append(el("ol", {"class": "journal"}, items))
    else:
        parts.append(el("p", {"class": "muted"}, "No entries."))
    return el("section", {"id": "journal"}, parts)
