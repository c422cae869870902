"""Side-by-side description of finished runs (`python -m pyapp compare A.json B.json ...`).

Descriptive only: it lays the runs' numbers next to each other. It is not a confirmatory
model comparison — no test, no ranking, no claim that one profile is better.

Runs are pooled only when their task sets are alike: the same canonical task parameters
(every count and range; `params_sha256` of the predictions' task-set identity) and generator
version. Runs whose parameters differ are refused (`parameter_differences`) unless the
caller asks to describe them anyway, and then the first line says so. Runs of different
seeds under the same parameters are pooled, their seeds named (`seed_note`). Prompt versions
that differ are flagged.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyapp.predict.predictor import PredictionsDocument

DISCLAIMER = (
    "Descriptive comparison of finished runs: not a confirmatory model comparison. "
    "Small cells have broad Wilson intervals; fixture and synthetic runs are not model "
    "evidence."
)


@dataclass(frozen=True)
class Row:
    run: str
    model: str
    evidence: str
    condition: str
    item: str
    values: dict[str, str]


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


UNRECORDED = "not recorded (predictions/3 or older)"


def _params(doc: PredictionsDocument) -> dict[str, object] | None:
    """A run's canonical task parameters without the seed; None when not recorded."""
    if doc.task_set is None:
        return None
    from pyapp.records.chain import canonical

    value = canonical(doc.task_set.task_params)
    assert isinstance(value, dict)
    return {k: v for k, v in value.items() if k != "seed"}


def parameter_differences(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> str | None:
    """Why the runs' task sets cannot be pooled (parameters that differ, named), or None."""
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
        f"{n}: " + ", ".join(f"{k}={json.dumps((p or {}).get(k))}" for k in keys)
        for n, p in zip(names, params, strict=True)
    )
    return f"task parameters differ between runs ({shown})"


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
    return problems


def rows(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[Row]:
    out: list[Row] = []
    for name, doc in zip(names, docs, strict=True):
        for result in doc.conditions:
            frozen = result.frozen
            model = f"{frozen.model_id}@{frozen.model_revision[:12]} ({frozen.backend})"
            base = {"run": name, "model": model, "evidence": doc.evidence}
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


def to_markdown(all_rows: Sequence[Row], problems: Sequence[str]) -> str:
    header, body = table(all_rows)
    lines = [f"> {DISCLAIMER}", ""]
    lines += [f"> **Warning:** {p}" for p in problems]
    if problems:
        lines.append("")
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def to_text(all_rows: Sequence[Row], problems: Sequence[str]) -> str:
    header, body = table(all_rows)
    widths = [
        max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)
    ]
    lines = [DISCLAIMER, *(f"WARNING: {p}" for p in problems), ""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for row in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"
