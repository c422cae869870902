"""The validation report, generated whole: options, expectations, checks, findings, tables,
and the mutation table of `scripts/mutants.py`.

`render_markdown` writes `docs/validation.md` from `StructureResult`s, their `Check`s and the
run's options (under "State versus shrinkage" also the predictors' difference across seeds,
in Compare's words: `across_seeds_lines`); nothing in it is hand-written or kept from an
earlier run except the mutation table, which is the bench's own generated record
(`docs/validation/mutants.json`, rendered by `mutation_lines`). `report_skeleton` is the
document's structure (headings and each table's row keys, no numbers), which a test compares
with a quick regeneration. The figures are `pyapp.report.figures`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

from pyapp.predict import ACROSS_RUNS, ACROSS_RUNS_COLUMN, ACROSS_RUNS_DEFINITION, across_runs_text
from pyapp.synthetic.checks import Check, family_of
from pyapp.synthetic.expectations import EXPECTATIONS, MARGINS_TEXT, SHARED_DRAWS
from pyapp.synthetic.language import written_name
from pyapp.synthetic.validation import Cell, StructureResult, seed_differences

VERDICTS = ("holds", "consistent", "contradicted", "descriptive")


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or value != value else f"{value:.{digits}f}"


def _s(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or value != value else f"{value:+.{digits}f}"


def cells_table(cells: Sequence[Cell]) -> list[str]:
    lines = [
        "| structure | preset | condition | target | predictor | n | mean p | observed | "
        "Brier | cost error ms | rel. cost error |",
        "|" + "---|" * 11,
    ]
    for c in cells:
        lines.append(
            f"| {c.structure} | {c.preset} | {c.condition} | {c.target} | {c.predictor} | "
            f"{c.n} | {_f(c.mean_predicted)} | {_f(c.observed_rate)} | {_f(c.brier)} | "
            f"{_f(c.cost_signed_error_ms, 1)} | {_f(c.cost_relative_error)} |"
        )
    return lines


def _verdict(c: Check) -> str:
    return c.verdict if c.verdict in ("holds", "consistent", "descriptive") else f"**{c.verdict}**"


def _digits(c: Check) -> int:
    return 1 if family_of(c.statistic) == "cost" else 3


def checks_table(checks: Sequence[Check]) -> list[str]:
    lines = [
        "| structure | preset | statistic | expected | estimate | 95% interval | band | seeds | "
        "pilot sd | power | seeds for 80% | expectation | verdict |",
        "|" + "---|" * 13,
    ]
    for c in checks:
        d = _digits(c)
        lines.append(
            f"| {c.structure} | {c.preset} | {c.statistic} | {_s(c.plan.expected, d)} | "
            f"{_s(c.estimate, d)} | [{_s(c.low, d)}, {_s(c.high, d)}] | "
            f"[{_s(c.plan.low, d)}, {_s(c.plan.high, d)}] | {c.seeds} | {_f(c.plan.pilot_sd, d)} | "
            f"{_f(c.power, 2)} | {c.plan.seeds_for_80 or '—'} | {c.plan.claim} | {_verdict(c)} |"
        )
    return lines


def findings(checks: Sequence[Check]) -> list[str]:
    """The findings, each sentence templated from the checks' numbers."""
    counted = [c for c in checks if c.verdict != "descriptive"]
    tally = {v: sum(1 for c in checks if c.verdict == v) for v in VERDICTS}
    weak = [c for c in counted if (c.power or 0.0) < 0.8]
    lines = [
        f"- Of {len(counted)} checks {tally['holds']} hold (the interval lies inside the band), "
        f"{tally['consistent']} are consistent (it overlaps the band) and "
        f"{tally['contradicted']} are contradicted (it misses the band); "
        f"{tally['descriptive']} rows are descriptive (no verdict).",
        f"- {len(counted) - len(weak)} of {len(counted)} checks reach 80% power (at their "
        f"stated deviation D, from the pilot's spread) with the seeds run; {len(weak)} do not "
        "(listed under *Power*).",
    ]
    chance = math.fsum(chance_contradiction(c) for c in counted)
    lines.append(
        f"- With every expectation true, about {chance:.1f} of these checks would be "
        "contradicted by chance alone (each interval misses its band with probability "
        "2Φ(−1.96 − m/se) at the planned spread), so a few contradictions among many checks "
        "are expected; the mutation table below judges a mutant against the same seeds' "
        "unchanged run."
    )
    for c in counted:
        if family_of(c.statistic) != "calibration" or abs(c.plan.expected) < 0.03:
            continue
        side = "over-predicts" if c.plan.expected > 0 else "under-predicts"
        lines.append(
            f"- Under `{c.structure}` ({c.preset}) the product {side} {c.statistic.split('/')[0]}"
            f" ({c.statistic.split('/')[1].replace('_', '-')}): expected {_s(c.plan.expected)}, "
            f"observed {_s(c.estimate)} [{_s(c.low)}, {_s(c.high)}]: {c.verdict}."
        )
    for c in counted:
        if c.verdict == "contradicted":
            lines.append(
                f"- Contradicted: `{c.structure}` ({c.preset}), {c.statistic}: expected "
                f"{c.plan.claim}; observed {_s(c.estimate, _digits(c))} "
                f"[{_s(c.low, _digits(c))}, {_s(c.high, _digits(c))}]."
            )
    return lines


def chance_contradiction(c: Check) -> float:
    """P(the interval misses the band) were the expectation true, at the planned spread."""
    if c.seeds < 1 or c.plan.pilot_sd == 0.0:
        return 0.0
    se = c.plan.pilot_sd / math.sqrt(c.seeds)
    margin = (c.plan.high - c.plan.low) / 2
    return 2 * NormalDist().cdf(-1.959963984540054 - margin / se)


def state_table(checks: Sequence[Check]) -> list[str]:
    """The gain from state per structure, preset and condition."""
    lines = [
        "| structure | preset | statistic | gain from state [95%] | band | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in checks:
        if family_of(c.statistic) == "state-gain":
            lines.append(
                f"| {c.structure} | {c.preset} | {c.statistic} | {_s(c.estimate)} "
                f"[{_s(c.low)}, {_s(c.high)}] | [{_s(c.plan.low)}, {_s(c.plan.high)}] | "
                f"{_verdict(c)} |"
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
    weak = [c for c in checks if c.verdict != "descriptive" and (c.power or 0.0) < 0.8]
    lines = [
        "Power is P(contradicted) when a statistic is off its expectation by its family's "
        "stated deviation D, from the pilot's between-seed spread (stated in "
        "`docs/validation/expectations.json` before the run).",
        "",
    ]
    if not weak:
        return [*lines, "Every check reaches 80% power with the seeds run."]
    lines += ["These checks do not reach 80% power with the seeds run:", ""]
    for c in weak:
        lines.append(
            f"- `{c.structure}` ({c.preset}), {c.statistic}: power {_f(c.power, 2)} with "
            f"{c.seeds} seeds; needs {c.plan.seeds_for_80 or '—'}."
        )
    return lines


def coverage_lines(checks: Sequence[Check]) -> list[str]:
    lines = [
        "Each seed's profile interval (as the predictions document holds it) against the op's "
        "true probe rate r̄ (the step rule on every probe's operands in its encoding, with the "
        "format and program effects); the expected coverage is the exact Poisson-binomial "
        "probability that r̄ lies in the interval, by the interval's definition "
        "n(k/n − r)² ≤ z²r(1 − r), not by `wilson_interval`.",
        "",
        "| structure | preset | statistic | seeds | covered | expected (exact) | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        if family_of(c.statistic) == "coverage":
            lines.append(
                f"| {c.structure} | {c.preset} | {c.statistic} | {c.seeds} | {_f(c.estimate)} "
                f"| {_f(c.plan.expected)} | {_verdict(c)} |"
            )
    return lines


def mutation_lines(mutants: Mapping[str, Any] | None) -> list[str]:
    """The kill table of `scripts/mutants.py` (its last run, as it recorded it)."""
    if not mutants:
        return ["No mutation run recorded (`python scripts/mutants.py`)."]
    rows = mutants.get("mutants", [])
    killed = [m for m in rows if m.get("status") == "killed"]
    counted = [m for m in rows if m.get("status") != "equivalent"]
    lines = [
        f"`{mutants.get('command', 'python scripts/mutants.py')}`: each mutant is one line "
        "changed in a temporary copy of the code; the validation runs on it "
        f"({mutants.get('runs', '')}) and kills it when a check contradicted on it was not "
        "contradicted on the unchanged code (or the validation fails outright). "
        f"{len(killed)} of {len(counted)} mutants killed; equivalent mutants are listed and "
        "not counted.",
        "",
        "| mutant | area | file | change | killed by | status |",
        "|---|---|---|---|---|---|",
    ]
    for m in rows:
        named = m.get("killed_by", [])[:3]
        more = m.get("checks_killing", len(m.get("killed_by", []))) - len(named)
        by = "; ".join(named) + (f" (and {more} more)" if more > 0 else "") or m.get("reason", "—")
        status = m.get("status", "")
        change = " ".join(part.strip() for part in str(m.get("change", "")).splitlines())
        lines.append(
            f"| {m.get('name')} | {m.get('area')} | `{m.get('file')}` | {change} | "
            f"{by} | {status if status != 'alive' else '**alive**'} |"
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


_HEADER = (
    "Everything here is **synthetic**: it validates the instrument (profile → freeze →",
    "prediction → score, the Wilson intervals, the Brier and skill scores and the cost",
    "predictions) and is never model evidence. The structure language, the shipped",
    "structures and how to run them in the page are described in",
    "[`validation/structures.md`](validation/structures.md) (hand-written).",
)
_METHOD = (
    "For each structure, every task seed runs the page's protocol natively (`python -m pyapp",
    "simulate`: measure, freeze, held-out, score), and each seed's statistics are read from",
    "the documents it made. Each is compared with its committed expectation (computed from",
    "the structure's parameters alone: `docs/validation/expectations.json`, made by",
    "`scripts/validation_expectations.py`), never with a number of the run. Whether the",
    "validation catches bugs is itself tested: see *Mutation testing* at the end.",
    "",
    "Controlled chains run under the seed list's chain protocol (the *chain protocol* option",
    "above). The lists `full`, `reduced`, `ci` and `smoke` are under `chain-design/1`, which",
    "routes primitives and recurrences only. The committed list `ci-extended` is under",
    "`chain-extended/1` (`python bench/validation.py --seeds ci-extended`): its expectations,",
    "made by the same script under that protocol, cover determinant and derivative chains",
    "(seven calls each) in every chain check, and each composite family's chain success,",
    "final and all-step, is checked against its exact enumeration (`success:FAMILY`). Four",
    "mutants of the new routes run on that list (a call reading the last output instead of",
    "the one it names, the derivative reading `c2` for `two`, the determinant or the",
    "derivative left unrouted); the design's lists cannot see them.",
    "",
    "The study's scores are checked through the functions `score`, the page and the study",
    "call (`pyapp.predict.slices.slice_figures`, `pyapp.predict.flags.flags_of`): `constant`,",
    "the share of seeds whose held-out outcomes the degenerate flags call constant, against",
    "Π q + Π(1 − q) per seed; `skill`, the product's skill against climatology pooled over",
    "the list's seeds (final correctness), against 1 − E[Brier] / E[ō(1 − ō)], checked only",
    "where the list expects at least ten successes and ten failures (per-seed pseudo-values",
    "give its interval; `pyapp.synthetic.validation.pooled_skill`).",
)


def render_markdown(
    results: Sequence[StructureResult],
    command: str,
    options: Mapping[str, object],
    figures: Sequence[str],
    checks: Sequence[Check],
    mutants: Mapping[str, Any] | None = None,
) -> str:
    """The whole report."""
    lines = [
        "# Validation against synthetic models of known error structure",
        "",
        f"Generated whole by `{command}` (`bench/validation.py`); nothing here is written by",
        "hand, and the findings are templated from the numbers.",
        *_HEADER,
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
    lines += ["", "## Method", "", *_METHOD, ""]
    lines += ["## Margins and effect sizes (fixed before the numbers)", "", *MARGINS_TEXT, ""]
    lines += ["## Expected outcomes (stated before the numbers)", ""]
    lines += [f"- **{s}**: {EXPECTATIONS[s]}" for s in seen if s in EXPECTATIONS]
    lines += ["", "## Shared draws", "", SHARED_DRAWS, "", "## Runs", ""]
    lines += ["| structure | preset | seeds | trials | seconds |", "|---|---|---|---|---|"]
    for r in results:
        seeds = f"{r.seeds[0]}..{r.seeds[-1]}" if r.seeds else "—"
        lines.append(
            f"| {r.spec.structure} | {r.preset} | {seeds} | {r.trials} | {r.seconds:.1f} |"
        )
    lines += ["", "## Findings", "", *findings(checks)]
    lines += ["", "## Checks of the expectations", "", *checks_table(checks)]
    lines += ["", "## Power", "", *power_lines(checks)]
    lines += ["", "## State versus shrinkage", "", *state_table(checks)]
    lines += ["", *across_seeds_lines(results)]
    lines += ["", "## Coverage of the 95% Wilson intervals of the profile rates", ""]
    lines += coverage_lines(checks)
    lines += ["", "## Scores per structure, condition, target and predictor", ""]
    lines += cells_table([c for r in results for c in r.cells])
    lines += ["", "## Calibration curves", ""]
    for figure in figures:
        lines += [f"![{figure}](validation/{figure})", ""]
    lines += ["## Mutation testing of the validation", "", *mutation_lines(mutants)]
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
