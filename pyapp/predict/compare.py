"""Side-by-side description of finished runs (`python -m pyapp compare A.json B.json ...`).

Descriptive only: it lays the runs' numbers next to each other. It is not a confirmatory
model comparison — no test, no ranking, no claim that one profile is better.

A run is its folder (trace.json and predictions.json): the predictions' `task_set` is then
checked against the trace's (`trace_problem`; a document of another run or of another task
set is refused). A predictions document given alone is said to have an unverified task set
(`UNVERIFIED`). Runs are pooled only when their task sets are alike: the same canonical
task parameters (every count and range; `params_sha256` of the predictions' task-set
identity) and generator version, and the same chain protocol (`chain_protocol_of`: a
frozen profile's terms; the design's before trace/4). Runs whose parameters or chain
protocols differ are refused (`parameter_differences`) unless the caller asks to describe
them anyway, and then the first line says so. Runs of different
seeds under the same parameters are pooled, their seeds named (`seed_note`). Prompt versions
that differ are flagged.
A run compared with itself is flagged too.

`summary` leads: one row per run and condition (evidence, n, both predictors' Brier scores
with 95 % intervals and skill against the profile's pooled rate, their paired difference,
cost error), then, per condition in several runs, the difference across runs (over seeds:
`pyapp.predict.skill.across_runs`). Each run's degenerate-score flags (`flags`:
`pyapp.predict.flags`) come before everything else. The page's Compare and `python -m
pyapp compare` print the same tables from this module, and the matrix's summary and
report and the validation report say the difference across runs in the same words (`ACROSS_RUNS`,
`ACROSS_RUNS_DEFINITION`, `run_differences`, `across_runs_text`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyapp.predict import skill
from pyapp.predict.flags import flag_lines, run_figures
from pyapp.predict.predictions import ConditionResult, PredictionsDocument
from pyapp.predict.predictor import skill_of
from pyapp.records import (
    SUBJECT_LABEL,
    Trace,
    canonical,
    protocol_of,
    subject_of,
    task_set_identity,
)
from pyapp.tasks import preset_of

DISCLAIMER = (
    "Descriptive comparison of finished runs: not a confirmatory model comparison. "
    "Small cells have broad Wilson intervals; fixture and synthetic runs are not model "
    "evidence; a reference-subject run is evidence about the locally trained reference "
    "subject, never about a pretrained LLM."
)


def evidence_shown(evidence: str, model_id: str | None = None) -> str:
    """The evidence column: the kind, and for a reference subject which it is (by its model
    id; the first subject when none is given)."""
    if evidence != "reference-subject":
        return evidence
    label = SUBJECT_LABEL if model_id is None else subject_of(model_id, None).label
    return f"{evidence}: {label}"


@dataclass(frozen=True)
class Row:
    run: str
    model: str
    evidence: str
    condition: str
    item: str
    values: dict[str, str]


def _f(value: float | None, digits: int = 3) -> str:
    """A number to `digits` places; one that rounds to zero is shown as 0, never -0."""
    if value is None:
        return "—"
    return f"{0.0 if abs(value) < 0.5 * 10**-digits else value:.{digits}f}"


UNRECORDED = "not recorded (predictions/3 or older)"


def _params(doc: PredictionsDocument) -> dict[str, object] | None:
    """A run's canonical task parameters without the seed; None when not recorded."""
    if doc.task_set is None:
        return None

    value = canonical(doc.task_set.task_params)
    assert isinstance(value, dict)
    return {k: v for k, v in value.items() if k != "seed"}


def chain_protocol_of(doc: PredictionsDocument) -> str:
    """The chain protocol version a run's profiles were frozen under (its frozen terms; the
    design's for a document derived from a trace older than trace/4)."""
    terms = next((r.frozen.terms for r in doc.conditions if r.frozen.terms is not None), None)
    return protocol_of(terms).version


def parameter_differences(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> str | None:
    """Why the runs cannot be pooled (chain protocols or task parameters that differ,
    named), or None."""
    protocols = [chain_protocol_of(doc) for doc in docs]
    if len(set(protocols)) > 1:
        shown = "; ".join(f"{n}: {p}" for n, p in zip(names, protocols, strict=True))
        return f"chain protocols differ between runs ({shown}): never pooled"
    params = [_params(doc) for doc in docs]
    first = params[0]
    if all(p == first for p in params):
        return None
    if any(p is None for p in params):
        shown = "; ".join(
            f"{n}: {'recorded' if p is not None else UNRECORDED}"
            for n, p in zip(names, params, strict=True)
        )
        return f"task parameters are recorded for some runs only ({shown})"
    present = [p for p in params if p is not None]
    keys = sorted({k for p in present for k in p if any(q.get(k) != p.get(k) for q in present)})
    shown = "; ".join(
        f"{n}: {task_set_name(doc)}"
        + ("" if task_set_name(doc) != CUSTOM else f" ({_shown(p or {}, keys)})")
        for n, p, doc in zip(names, params, docs, strict=True)
    )
    return f"task sets differ between runs ({shown})"


CUSTOM = "custom parameters"
"""A run's task set that no preset or ladder rung is."""


def task_set_name(doc: PredictionsDocument) -> str:
    """The preset or ladder rung a run's task set is (`pyapp.tasks.taskset.preset_of`, from
    its parameters, never a label), or `custom parameters`."""
    if doc.task_set is None:
        return UNRECORDED
    return preset_of(doc.task_set.task_params) or CUSTOM


def _shown(params: dict[str, object], keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={json.dumps(params.get(k))}" for k in keys)


UNVERIFIED = (
    "task set unverified: {name} is a predictions document without its trace, so its "
    "task_set is taken on trust (compare the run folder, trace.json beside "
    "predictions.json, to check it)"
)
"""Said of each run given as a predictions document alone."""


def trace_problem(name: str, doc: PredictionsDocument, trace: Trace) -> str | None:
    """Why a predictions document is not its trace's — another run, or a `task_set` that is
    not the one the trace's seed and parameters give (an edited document pools task sets
    that differ) —, or None. `compare` refuses such a run."""
    if doc.trace_run_id != trace.run.run_id:
        return (
            f"{name}: the predictions are of run {doc.trace_run_id[:8]}, its trace is run "
            f"{trace.run.run_id[:8]}"
        )
    identity = task_set_identity(trace.run.task_params, trace.run.generator_version)
    if doc.task_set != identity:
        recorded = "none" if doc.task_set is None else doc.task_set.params_sha256[:12] + "…"
        return (
            f"{name}: the predictions' task_set (seed "
            f"{doc.task_set.seed if doc.task_set else '?'}, parameters {recorded}) is not its "
            f"trace's (seed {identity.seed}, parameters {identity.params_sha256[:12]}…)"
        )
    return None


def seed_note(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> str | None:
    """The seeds pooled, named, when they differ."""
    seeds = [
        str(doc.task_set.seed)
        if doc.task_set is not None
        else (str(doc.conditions[0].frozen.seed) if doc.conditions else "?")
        for doc in docs
    ]
    if len(set(seeds)) <= 1:
        return None
    shown = "; ".join(f"{n}: {seed}" for n, seed in zip(names, seeds, strict=True))
    return f"runs of different seeds pooled under the same task parameters (seeds {shown})"


def described_anyway(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[str]:
    """The notes of a comparison that lays the runs side by side whatever their task sets
    (the page's, and the CLI's with `--describe-anyway`): a parameter difference first, as
    `DESCRIBED ANYWAY, NOT POOLED: …`, then `incompatibilities`, then the pooled seeds."""
    differ = parameter_differences(names, docs)
    problems = [] if differ is None else [f"DESCRIBED ANYWAY, NOT POOLED: {differ}"]
    problems += incompatibilities(names, docs)
    seeds = seed_note(names, docs)
    if seeds is not None and differ is None:
        problems.append(seeds)
    return problems


def incompatibilities(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[str]:
    """What differs between runs, besides their task parameters, in ways that make their
    numbers incomparable."""
    problems: list[str] = []
    keys: dict[str, dict[str, str]] = {}
    for name, doc in zip(names, docs, strict=True):
        for result in doc.conditions:
            f = result.frozen
            keys.setdefault("generator version", {})[name] = f.generator_version
            prompt_key = ",".join(f"{k}={v[:12]}" for k, v in sorted(f.prompt_templates.items()))
            keys.setdefault("prompt versions", {})[name] = prompt_key
    for what, per_run in keys.items():
        if len(set(per_run.values())) > 1:
            shown = "; ".join(f"{run}: {value}" for run, value in per_run.items())
            problems.append(f"{what} differ between runs ({shown})")
    heldout: dict[str, dict[str, tuple[str, ...]]] = {}
    # Runs that record their task set (predictions/4) are held to the task-parameter rule
    # (`parameter_differences`); older runs are compared by their held-out task ids.
    older = [(n, d) for n, d in zip(names, docs, strict=True) if d.task_set is None]
    for name, doc in older if len(older) == len(docs) else ():
        for result in doc.conditions:
            kind = str(result.frozen.profile.condition)
            heldout.setdefault(kind, {})[name] = result.frozen.heldout_task_ids
    for kind, tasks_of_run in heldout.items():
        if len(set(tasks_of_run.values())) > 1:
            sizes = "; ".join(f"{run}: {len(ids)} tasks" for run, ids in tasks_of_run.items())
            problems.append(
                f"held-out tasks of {kind} differ between runs (task parameters differ: "
                f"{sizes}): their scores are not over the same tasks"
            )
    seen: dict[str, str] = {}
    for name, doc in zip(names, docs, strict=True):
        if doc.trace_run_id in seen:
            problems.append(
                f"{seen[doc.trace_run_id]} and {name} are the same run "
                f"({doc.trace_run_id[:8]}): it is compared with itself"
            )
        seen.setdefault(doc.trace_run_id, name)
    return problems


def _interval(i: skill.Interval | None, digits: int = 3) -> str:
    if i is None:
        return "—"
    if i.low is None or i.high is None:
        return f"{_f(i.mean, digits)} (n={i.n}: no interval)"
    return f"{_f(i.mean, digits)} [{_f(i.low, digits)}, {_f(i.high, digits)}]"


def skill_scores(result: ConditionResult) -> skill.SkillScores:
    """The condition's skill scores: the document's, or derived from its own numbers (a
    document written before they existed)."""
    if result.skill is not None:
        return result.skill
    return skill_of(result.frozen, result.predictions, result.observations, result.state_aware)


ACROSS_RUNS = "across runs (seeds)"
"""How a difference between the predictors over several runs is labelled everywhere."""
ACROSS_RUNS_COLUMN = "product − state-aware [95%]"
"""Its column: Brier(product) − Brier(state-aware), as within one run."""
ACROSS_RUNS_DEFINITION = (
    "product − state-aware across runs (seeds): each run's Brier(product) − Brier(state-aware) "
    "paired over its held-out tasks, then the mean of those per-run differences with a 95 % "
    "Student-t interval over runs (negative: the product did better; descriptive, not a "
    "test). With one run the interval is undefined."
)
"""What the difference across runs is, said once for Compare, the matrix and validation."""


def run_differences(results: Sequence[ConditionResult]) -> list[float]:
    """Each run's paired difference (product − state-aware, over its held-out tasks): the
    values `across_runs_text` summarises; runs with no task both predictors scored add
    none."""
    found = [skill_scores(r).difference for r in results]
    return [d.mean for d in found if d is not None]


def across_runs_text(differences: Sequence[float], digits: int = 3) -> str:
    """The difference across runs as Compare shows it (`skill.across_runs`): `mean [low,
    high]`, or, from one run, its mean and that the interval is undefined — never an interval
    made up from one value."""
    across = skill.across_runs(differences)
    if across is None:
        return "—"
    if across.low is None or across.high is None:
        return f"{_f(across.mean, digits)} (1 run: interval undefined, it needs two or more seeds)"
    return _interval(across, digits)


def skill_lines(result: ConditionResult) -> list[str]:
    """What `python -m pyapp score` prints beside a condition's Brier score."""
    s = skill_scores(result)
    how = (
        "frozen with the profile"
        if result.frozen.reference_probability is not None
        else "derived from the profile: not frozen in this document"
    )
    lines = [f"reference forecast: {s.reference} = {_f(s.reference_probability)} ({how})"]
    for name, p in (("product", s.product), ("state-aware", s.state_aware)):
        if p is None:
            continue
        d = p.decomposition
        parts = (
            "—"
            if d is None
            else (
                f"reliability {d.reliability:.4f}, resolution {d.resolution:.4f}, "
                f"uncertainty {d.uncertainty:.4f}"
            )
        )
        lines.append(
            f"{name}: Brier {_interval(p.brier, 4)}; skill {_f(p.skill)} "
            f"(reference Brier {_f(p.brier_reference, 4)}); {parts}"
        )
    lines.append(f"product − state-aware (paired over tasks): {_interval(s.difference, 4)}")
    return lines


SUMMARY_HEADER = [
    "run",
    "evidence",
    "condition",
    "n",
    "Brier, product [95%]",
    "skill, product",
    "Brier, state-aware [95%]",
    "skill, state-aware",
    ACROSS_RUNS_COLUMN,
    "cost MAE ms",
]
"""The compact summary's columns (both predictors against final correctness; skill against
the profile's pooled success rate)."""


def summary(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[list[str]]:
    """One row per run and condition, then one `across runs` row per condition observed in
    two or more runs (the mean of the runs' paired differences, 95 % interval over runs)."""
    body: list[list[str]] = []
    differences: dict[str, list[ConditionResult]] = {}
    for name, doc in zip(names, docs, strict=True):
        for result in doc.conditions:
            s = skill_scores(result)
            condition = result.frozen.profile.condition
            aware = s.state_aware
            body.append(
                [
                    name,
                    doc.evidence,
                    condition + (" [exploratory]" if result.frozen.exploratory else ""),
                    str(result.scores.n),
                    _interval(s.product.brier),
                    _f(s.product.skill),
                    "—" if aware is None else _interval(aware.brier),
                    "—" if aware is None else _f(aware.skill),
                    _interval(s.difference),
                    _f(result.scores.cost.mean_absolute_error_ms, 1),
                ]
            )
            differences.setdefault(condition, []).append(result)
    for kind, results in differences.items() if poolable(names, docs) else ():
        values = run_differences(results)
        if len(values) >= 2:
            cells = [ACROSS_RUNS, "—", kind, f"{len(values)} runs"]
            body.append([*cells, "—", "—", "—", "—", across_runs_text(values), "—"])
    return body


def poolable(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> bool:
    """Whether the runs may be pooled across seeds: the same task set (parameters), distinct
    runs, each of its own seed. Otherwise no `across runs (seeds)` row is shown."""
    seeds = [d.task_set.seed if d.task_set is not None else None for d in docs]
    distinct_runs = len({d.trace_run_id for d in docs}) == len(docs)
    distinct_seeds = None not in seeds and len(set(seeds)) == len(seeds)
    return parameter_differences(names, docs) is None and distinct_runs and distinct_seeds


def summary_note(summary_rows: Sequence[Sequence[str]]) -> str:
    """What the summary's `across runs (seeds)` rows are; empty when it has none."""
    return ACROSS_RUNS_DEFINITION if any(r and r[0] == ACROSS_RUNS for r in summary_rows) else ""


def rows(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[Row]:
    out: list[Row] = []
    for name, doc in zip(names, docs, strict=True):
        for result in doc.conditions:
            frozen = result.frozen
            model = f"{frozen.model_id}@{frozen.model_revision[:12]} ({frozen.backend})"
            base = {
                "run": name,
                "model": model,
                "evidence": evidence_shown(doc.evidence, frozen.model_id),
            }
            condition: str = frozen.profile.condition
            if frozen.exploratory:
                condition += " [exploratory]"
            for op in frozen.profile.ops:
                out.append(
                    Row(
                        **base,
                        condition=condition,
                        item=f"profile {op.op}",
                        values={
                            "successes": f"{op.successes}/{op.trials}",
                            "rate": _f(op.rate),
                            "wilson_95": f"[{op.wilson_low:.3f}, {op.wilson_high:.3f}]",
                            "mean_cost_ms": _f(op.mean_cost_ms, 1),
                        },
                    )
                )
            observed = {o.task_id: o for o in result.observations}
            for p in result.predictions:
                o = observed.get(p.task_id)
                out.append(
                    Row(
                        **base,
                        condition=condition,
                        item=f"heldout {p.task_id}",
                        values={
                            "predicted_p": _f(p.probability),
                            "observed": "—" if o is None else o.outcome,
                            "all_steps": "—"
                            if o is None or o.all_steps_correct is None
                            else str(o.all_steps_correct).lower(),
                            "predicted_cost_ms": _f(p.cost_ms, 1),
                            "observed_cost_ms": "—" if o is None else _f(o.cost_ms, 1),
                        },
                    )
                )
            s = result.scores
            out.append(
                Row(
                    **base,
                    condition=condition,
                    item="scores",
                    values={
                        "n": str(s.n),
                        "brier_final_proxy": _f(s.brier_final_proxy),
                        "brier_all_steps": _f(s.brier_all_steps),
                        "cost_mae_ms": _f(s.cost.mean_absolute_error_ms, 1),
                        "cost_rel_error": _f(s.cost.mean_relative_error),
                    },
                )
            )
    return out


def table(all_rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """The rows as one table: a header and string cells (the columns every output shares)."""
    value_keys: list[str] = []
    for row in all_rows:
        for key in row.values:
            if key not in value_keys:
                value_keys.append(key)
    header = ["run", "model", "evidence", "condition", "item", *value_keys]
    body = [
        [
            r.run,
            r.model,
            r.evidence,
            r.condition,
            r.item,
            *(r.values.get(k, "") for k in value_keys),
        ]
        for r in all_rows
    ]
    return header, body


def to_csv(all_rows: Sequence[Row]) -> str:
    header, body = table(all_rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(body)
    return buffer.getvalue()


def _markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return lines


def run_names(
    files: Sequence[tuple[str, str | None]],
    docs: Sequence[PredictionsDocument],
    paths: Sequence[str] | None = None,
) -> list[str]:
    """What a run is called in a comparison, the CLI's and the page's alike: its folder for a
    file named predictions.json (where the folder is known), else the file name without
    `.json`. Names that repeat: the paths given (the CLI's arguments), else each with its run
    id's first 8 characters. `files`: (file name, folder name or None)."""
    names = [
        folder if name == "predictions.json" and folder else name.removesuffix(".json")
        for name, folder in files
    ]
    if len(set(names)) == len(names):
        return names
    if paths is not None:
        return list(paths)
    named = [f"{n} ({d.trace_run_id[:8]})" for n, d in zip(names, docs, strict=True)]
    if len(set(named)) == len(named):
        return named
    return [f"{i + 1}. {n}" for i, n in enumerate(named)]


def refusal(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> str | None:
    """What `python -m pyapp compare` says when it refuses the runs (exit 1, without
    `--describe-anyway`): their task sets differ; None when it lays them side by side."""
    differ = parameter_differences(names, docs)
    if differ is None:
        return None
    return (
        f"refused to pool: {differ}; these are different task sets (--describe-anyway lays "
        "them side by side all the same)"
    )


def lead_lines(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[str]:
    """The lines `compare --describe-anyway` prints before its tables — what the comparison
    is, each run's degenerate flags, the disclaimer and the warnings —, the page's too."""
    differ = parameter_differences(names, docs)
    lines = [] if differ is None else [f"DESCRIBED ANYWAY (--describe-anyway): {differ}"]
    lines += flags(names, docs)
    lines.append(DISCLAIMER)
    lines += [f"WARNING: {p}" for p in described_anyway(names, docs)]
    if not poolable(names, docs) and len(docs) > 1:
        lines.append(f"NOT POOLED: no {ACROSS_RUNS} row — {why_not_pooled(names, docs)}.")
    return lines


def why_not_pooled(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> str:
    """Why the runs are not pooled across seeds, in words."""
    if parameter_differences(names, docs) is not None:
        return "their task sets differ"
    if len({d.trace_run_id for d in docs}) < len(docs):
        return "a run is compared with itself"
    return "they are not of distinct seeds (runs of one seed are not independent)"


def flags(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[str]:
    """Each run's degenerate-score flags (`pyapp.predict.flags.flag_lines`), named by run:
    what Compare shows before anything else."""
    found = []
    for name, doc in zip(names, docs, strict=True):
        found += [f"{name}: {line}" for line in flag_lines(run_figures(doc))]
    return found


def to_markdown(
    all_rows: Sequence[Row],
    problems: Sequence[str],
    summary_rows: Sequence[Sequence[str]] = (),
    flagged: Sequence[str] = (),
) -> str:
    header, body = table(all_rows)
    lines = [f"> **{line}**" for line in flagged] + ([""] if flagged else [])
    lines += [f"> {DISCLAIMER}", ""]
    lines += [f"> **Warning:** {p}" for p in problems]
    if problems:
        lines.append("")
    if summary_rows:
        lines += [*_markdown_table(SUMMARY_HEADER, summary_rows), ""]
        note = summary_note(summary_rows)
        lines += [note, ""] if note else []
    lines += _markdown_table(header, body)
    return "\n".join(lines) + "\n"


def _text_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    for row in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return lines


def to_text(
    all_rows: Sequence[Row], lead: Sequence[str], summary_rows: Sequence[Sequence[str]] = ()
) -> str:
    """What `compare` prints: `lead_lines`, the summary, then every row."""
    header, body = table(all_rows)
    lines = [*lead, ""]
    if summary_rows:
        note = summary_note(summary_rows)
        lines += ["Summary:", *_text_table(SUMMARY_HEADER, summary_rows)]
        lines += [note, "", "All rows:"] if note else ["", "All rows:"]
    lines += _text_table(header, body)
    return "\n".join(lines) + "\n"
