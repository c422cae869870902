"""The validation report, generated whole: options, expectations, checks, findings, tables.

`render_markdown` writes `docs/validation.md` from `StructureResult`s and the run's options
(under "State versus shrinkage" also the predictors' difference across seeds, in Compare's
words: `across_seeds_lines`); nothing in it is hand-written or kept from an earlier run: the
findings are sentences templated from the checks (`findings`). `report_skeleton` is the
document's structure (headings and each table's row keys, no numbers), which a test compares
with a quick regeneration. The figures are `pyapp.report.figures`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyapp.predict.compare import (
    ACROSS_RUNS,
    ACROSS_RUNS_COLUMN,
    ACROSS_RUNS_DEFINITION,
    across_runs_text,
)
from pyapp.synthetic.checks import STATE_INFORMATIVE, Check, all_checks, outcome
from pyapp.synthetic.expectations import (
    COST_EXPECTATION,
    EXPECTATIONS,
    MARGINS_TEXT,
    SHARED_DRAWS,
    WILSON_EXPECTATION,
)
from pyapp.synthetic.language import written_name
from pyapp.synthetic.validation import Cell, Coverage, StructureResult, seed_differences


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _s(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:+.{digits}f}"


def cells_table(cells: Sequence[Cell]) -> list[str]:
    lines = [
        "| structure | preset | condition | target | predictor | n | mean p | observed | "
        "Brier | MC n | Brier (MC subset) | expected Brier | E(p−q)² | E q(1−q) | E[p] | "
        "plug-in bias | cost error ms | rel. cost error |",
        "|" + "---|" * 18,
    ]
    for c in cells:
        lines.append(
            f"| {c.structure} | {c.preset} | {c.condition} | {c.target} | {c.predictor} | "
            f"{c.n} | {_f(c.mean_predicted)} | {_f(c.observed_rate)} | {_f(c.brier)} | "
            f"{c.mc_n} | {_f(c.brier_mc_subset)} | {_f(c.expected_brier)} | "
            f"{_f(c.miscalibration)} | {_f(c.irreducible)} | {_f(c.mean_expected)} | "
            f"{_s(c.plug_in_bias, 4)} | {_f(c.cost_signed_error_ms, 1)} | "
            f"{_f(c.cost_relative_error)} |"
        )
    return lines


def coverage_table(rows: Sequence[Coverage]) -> list[str]:
    lines = [
        "| structure | preset | condition | op | trials/seed | seeds | covered | coverage | "
        "exact binomial coverage |",
        "|" + "---|" * 9,
    ]
    for r in rows:
        lines.append(
            f"| {r.structure} | {r.preset} | {r.condition} | {r.op} | {r.trials_per_seed} | "
            f"{r.repetitions} | {r.covered} | {_f(r.covered / r.repetitions)} | {_f(r.exact)} |"
        )
    return lines


def _verdict(c: Check) -> str:
    found = outcome(c)
    return found if found in ("holds", "report") else f"**{found}**"


def checks_table(checks: Sequence[Check]) -> list[str]:
    lines = [
        "| structure | preset | statistic | expected | estimate | 95% interval | δ or margin | "
        "seeds | power | seeds for 80% | kind | expectation | verdict |",
        "|" + "---|" * 13,
    ]
    for c in checks:
        lines.append(
            f"| {c.structure} | {c.preset} | {c.statistic} | {_s(c.expected)} | "
            f"{_s(c.estimate)} | [{_s(c.low)}, {_s(c.high)}] | {_f(c.effect)} | {c.seeds} | "
            f"{_f(c.power, 2)} | {c.seeds_for_80 if c.seeds_for_80 is not None else '—'} | "
            f"{c.kind} | {c.claim} | {_verdict(c)} |"
        )
    return lines


def findings(checks: Sequence[Check]) -> list[str]:
    """The findings, each sentence templated from the checks' numbers."""
    claims = [c for c in checks if c.holds is not None]
    verdicts = [outcome(c) for c in claims]
    weak = [c for c in claims if (c.power or 0.0) < 0.8]
    lines = [
        f"- Of {len(claims)} stated expectations {verdicts.count('holds')} hold, "
        f"{verdicts.count('contradicted')} are contradicted (the interval lies on the other "
        f"side of zero or outside the margin) and {verdicts.count('inconclusive')} are "
        f"inconclusive (the interval is too wide to decide); {len(checks) - len(claims)} rows "
        "are reported without a claim.",
        f"- {len(claims) - len(weak)} of {len(claims)} checks reach 80% power with the seeds "
        f"run; {len(weak)} do not (listed under *Power*).",
    ]
    for c in claims:
        if c.kind != "direction" or "mean p − observed" not in c.statistic:
            continue
        side = "over-predicts" if c.estimate > 0 else "under-predicts"
        lines.append(
            f"- Under `{c.structure}` ({c.preset}) the product {side} {c.statistic.split(':')[0]}"
            f" by {abs(c.estimate):.3f} [{_s(c.low)}, {_s(c.high)}] (expected "
            f"{_s(c.expected)}): {outcome(c)}."
        )
    lines += _state_findings(checks)
    for c in claims:
        found = outcome(c)
        if found == "holds" or (c.kind == "direction" and "mean p − observed" in c.statistic):
            continue
        why = (
            f"power {_f(c.power, 2)}, {c.seeds_for_80 or 'over a million'} seeds needed"
            if found == "inconclusive"
            else "the interval excludes the expectation"
        )
        lines.append(
            f"- {found.capitalize()}: `{c.structure}` ({c.preset}), {c.statistic}: {c.claim}; "
            f"estimate {_s(c.estimate)} [{_s(c.low)}, {_s(c.high)}] ({why})."
        )
    return lines


def _state_findings(checks: Sequence[Check]) -> list[str]:
    """One sentence per preset on the gain from state where state carries no information,
    and one where it does."""
    lines = []
    for preset in dict.fromkeys(c.preset for c in checks):
        for informative in (False, True):
            rows = [
                c
                for c in checks
                if c.preset == preset
                and "gain from state" in c.statistic
                and (c.structure in STATE_INFORMATIVE) == informative
            ]
            if not rows:
                continue
            low, high = min(c.estimate for c in rows), max(c.estimate for c in rows)
            verdicts = [outcome(c) for c in rows]
            where = "carries information" if informative else "carries no information"
            lines.append(
                f"- Gain from state ({preset}) where state {where}: from {_s(low)} to {_s(high)} "
                f"Brier over {len(rows)} structure × condition rows ({verdicts.count('holds')} "
                f"hold, {verdicts.count('contradicted')} contradicted, "
                f"{verdicts.count('inconclusive')} inconclusive, {verdicts.count('report')} "
                "reported without a claim); a negative gain means the state-aware predictor "
                "scores worse than the product with the same prior."
            )
    return lines


def state_table(checks: Sequence[Check]) -> list[str]:
    """Gain from shrinkage and gain from state, side by side."""
    lines = [
        "| structure | preset | condition | gain from shrinkage [95%] | gain from state [95%] | "
        "state verdict |",
        "|---|---|---|---|---|---|",
    ]
    rows: dict[tuple[str, str, str], dict[str, Check]] = {}
    for c in checks:
        if "gain from" in c.statistic:
            part = "shrinkage" if "shrinkage" in c.statistic else "state"
            rows.setdefault((c.structure, c.preset, c.statistic.split(":")[0]), {})[part] = c
    for (structure, preset, condition), parts in rows.items():
        cells = []
        for part in ("shrinkage", "state"):
            found = parts.get(part)
            cells.append(
                "—"
                if found is None
                else f"{_s(found.estimate)} [{_s(found.low)}, {_s(found.high)}]"
            )
        state = parts.get("state")
        lines.append(
            f"| {structure} | {preset} | {condition} | {cells[0]} | {cells[1]} | "
            f"{_verdict(state) if state else '—'} |"
        )
    return lines


def across_seeds_lines(results: Sequence[StructureResult]) -> list[str]:
    """The predictors' difference across seeds per structure, preset and condition, in
    Compare's definition and words (against final correctness, as Compare scores it)."""
    lines = [
        "The two predictors of `predictions.json` as Compare and the matrix compare them, "
        f"against final correctness: {ACROSS_RUNS_DEFINITION}",
        "",
    ]
    for r in results:
        for condition, per_seed in seed_differences(r).items():
            values = list(per_seed.values())
            runs = "1 run" if len(values) == 1 else f"{len(values)} runs"
            lines.append(
                f"- {r.spec.structure} ({r.preset}), {condition}: {ACROSS_RUNS} "
                f"{ACROSS_RUNS_COLUMN} {across_runs_text(values)} ({runs})"
            )
    return lines


def power_lines(checks: Sequence[Check]) -> list[str]:
    weak = [c for c in checks if c.holds is not None and (c.power or 0.0) < 0.8]
    if not weak:
        return ["Every check reaches 80% power with the seeds run."]
    lines = [
        "These checks do not reach 80% power with the seeds run (seeds needed at the run's",
        "own between-seed spread; — : more than a million):",
        "",
    ]
    for c in weak:
        needed = c.seeds_for_80 if c.seeds_for_80 is not None else "—"
        lines.append(
            f"- `{c.structure}` ({c.preset}), {c.statistic}: power {_f(c.power, 2)} with "
            f"{c.seeds} seeds; needs {needed}."
        )
    return lines


def _specification(r: StructureResult) -> str:
    """Every value of the specification: `seed 0; rates: p_add=0.05, ...; cost: ...`."""
    parts = [f"seed {r.spec.seed}"]
    for section, values in r.spec.as_data().items():
        if isinstance(values, dict):
            inner = ", ".join(f"{k}={v}" for k, v in values.items())
            parts.append(f"{section}: {inner}")
    return "; ".join(parts)


def render_markdown(
    results: Sequence[StructureResult],
    command: str,
    options: Mapping[str, object],
    figures: Sequence[str],
    checks: Sequence[Check] | None = None,
) -> str:
    """The whole report (`checks`: `all_checks(results)`, computed here when not given)."""
    checks = all_checks(results) if checks is None else checks
    lines = [
        "# Validation against synthetic models of known error structure",
        "",
        f"Generated whole by `{command}` (`bench/validation.py`); nothing here is written by",
        "hand, and the findings are templated from the numbers. Everything here is",
        "**synthetic**: it validates the instrument (profile → freeze → prediction → score, the",
        "Wilson intervals and the cost predictions) and is never model evidence. The structure",
        "language, the shipped structures and how to run them in the page are described in",
        "[`validation/structures.md`](validation/structures.md) (hand-written).",
        "",
        "Options of this run:",
        "",
        "| option | value |",
        "|---|---|",
    ]
    lines += [f"| {key} | {value} |" for key, value in options.items()]
    lines += [
        "",
        "Structures (`pyapp/synthetic/structures/*.toml`, each recorded whole in its",
        "traces as `model.synthetic`):",
        "",
        "| structure | spec | SHA-256 | the whole specification |",
        "|---|---|---|---|",
    ]
    seen: dict[str, StructureResult] = {}
    for r in results:
        seen.setdefault(r.spec.structure, r)
    for name, r in seen.items():
        lines.append(
            f"| {name} | `{written_name(r.spec)}` | `{r.spec.sha256[:16]}` | {_specification(r)} |"
        )
    lines += [
        "",
        "## Method",
        "",
        "For each structure, every task seed runs the page's protocol natively (`python -m pyapp",
        "simulate`: measure, freeze, held-out, score). For the first seeds, each held-out",
        "trial's true success probability q is estimated by Monte Carlo: the same trial re-run",
        "under other model seeds. The expected mean Brier of a predictor is then",
        "E(p − q)² + E q(1 − q). Profile rates' true values are exact, which gives the expected",
        "product E[Π p̂] per held-out task, its plug-in bias, and the Wilson coverage.",
        "",
        "## Margins and effect sizes (fixed before the numbers)",
        "",
        *MARGINS_TEXT,
        "",
        "## Expected outcomes (stated before the numbers)",
        "",
    ]
    lines += [f"- **{s}**: {EXPECTATIONS[s]}" for s in seen if s in EXPECTATIONS]
    lines += [f"- **cost**: {COST_EXPECTATION}", f"- **Wilson coverage**: {WILSON_EXPECTATION}"]
    lines += ["", "## Shared draws", "", SHARED_DRAWS, "", "## Runs", ""]
    lines += ["| structure | preset | seeds | Monte Carlo seeds | trials | seconds |"]
    lines.append("|---|---|---|---|---|---|")
    for r in results:
        lines.append(
            f"| {r.spec.structure} | {r.preset} | {r.seeds} | {r.mc_seeds} | {r.trials} | "
            f"{r.seconds:.1f} |"
        )
    lines += ["", "## Findings", "", *findings(checks)]
    lines += ["", "## Checks of the expectations", "", *checks_table(checks)]
    lines += ["", "## Power", "", *power_lines(checks)]
    lines += ["", "## State versus shrinkage", "", *state_table(checks)]
    lines += ["", *across_seeds_lines(results)]
    lines += ["", "## Scores per structure, condition, target and predictor", ""]
    lines += cells_table([c for r in results for c in r.cells])
    lines += ["", "## Coverage of the 95% Wilson intervals of the profile rates", ""]
    lines += coverage_table([c for r in results for c in r.coverage])
    lines += ["", "## Calibration curves", ""]
    for figure in figures:
        lines += [f"![{figure}](validation/{figure})", ""]
    return "\n".join(lines).rstrip() + "\n"


def report_skeleton(text: str) -> list[str]:
    """The document's structure: headings, and each table row's key (its text columns up to
    the first numeric one), without any number."""
    skeleton = []
    for line in text.splitlines():
        if line.startswith("#"):
            skeleton.append(line)
        elif line.startswith("| ") and not line.startswith("|---"):
            key = []
            for cell in line.strip("|").split("|"):
                cell = cell.strip()
                if not cell or cell[0] in "0123456789+-−—[`(" or cell in ("—",):
                    break
                key.append(cell)
            skeleton.append("| " + " | ".join(key))
    return skeleton
