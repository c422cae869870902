"""Side-by-side description of finished runs (`python -m pyapp compare A.json B.json ...`).

Descriptive only: it lays the runs' numbers next to each other. It is not a confirmatory
model comparison — no test, no ranking, no claim that one profile is better. Runs whose
seeds, generator versions or prompt versions differ are flagged, never silently mixed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from pyapp.conditions.subject import SUBJECT_LABEL
from pyapp.predict.predictor import PredictionsDocument

DISCLAIMER = (
    "Descriptive comparison of finished runs: not a confirmatory model comparison. "
    "Small cells have broad Wilson intervals; fixture and synthetic runs are not model "
    "evidence; a reference-subject run is evidence about the locally trained reference "
    "subject, never about a pretrained LLM."
)


def evidence_shown(evidence: str) -> str:
    """The evidence column: the kind, and for the reference subject what it is."""
    return f"{evidence}: {SUBJECT_LABEL}" if evidence == "reference-subject" else evidence


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


def incompatibilities(names: Sequence[str], docs: Sequence[PredictionsDocument]) -> list[str]:
    """What differs between runs in ways that make their numbers incomparable."""
    problems: list[str] = []
    keys: dict[str, dict[str, str]] = {}
    for name, doc in zip(names, docs, strict=True):
        for result in doc.conditions:
            f = result.frozen
            keys.setdefault("seed", {})[name] = str(f.seed)
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
            base = {"run": name, "model": model, "evidence": evidence_shown(doc.evidence)}
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
