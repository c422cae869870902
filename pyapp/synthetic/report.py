"""The validation report: expectations (fixed before any number), tables, checks, figures.

`render_markdown` writes `docs/validation.md`; `calibration_svg` draws one structure's
calibration curves. Both are pure functions of `StructureResult`s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyapp.predict.metrics import CalibrationCell
from pyapp.synthetic.language import written_name
from pyapp.synthetic.validation import Cell, Coverage, StructureResult

EXPECTATIONS: dict[str, str] = {
    "independent": (
        "The product is calibrated for all-step correctness: for chains the mean predicted "
        "probability matches the observed all-step rate, and its Monte Carlo miscalibration "
        "E(p − q)² comes only from estimating rates on a few trials (plus the plug-in "
        "product's known upward bias E[p̂ᵏ] ≥ pᵏ, docs/predictor.md §2). Final ≈ all-step "
        "correctness (accidental cancellation is rare). State carries no information, so the "
        "state-aware predictor is not better, and not much worse."
    ),
    "size-dependent": (
        "The product is miscalibrated (A2 fails: composition steps see operands of other "
        "sizes than the probes), with a larger miscalibration than under `independent`; the "
        "state-aware predictor has the lower Brier score — clearly with a digit-stratified "
        "calibration set (`calibration-60`), little or not at all with the design's 6 trials "
        "per op drawn from a narrow size range."
    ),
    "correlated": (
        "Step errors cluster within a trial (A1 fails, positive dependence), so P(all steps "
        "right) is above the product of the marginal rates: the product, and the naive proxy "
        "built on it, are too pessimistic — observed rate > mean predicted, for all-step and "
        "final correctness alike. The state-aware predictor multiplies too and shares the "
        "error."
    ),
    "cancelling": (
        "A wrong step is often followed by a compensating one. All-step correctness stays "
        "calibrated (the first wrong step settles it), but final correctness is more frequent "
        "than all-step correctness, so the naive proxy (the product used as P(final right)) "
        "is too pessimistic for chains and model-only answers. Model-program trees do not "
        "cancel (only computed values are compensated), so they behave as `independent`."
    ),
}
COST_EXPECTATION = (
    "Synthetic cost = `call_ms` per generation + (`step_ms` + `digit_ms`·digits of the "
    "step's output) per step. Chains make one call per step, so the product's per-op mean "
    "costs are right up to the digit term (recurrence steps have more digits than probes: "
    "a small under-prediction, partly corrected by the state-aware cost within its range). "
    "A whole-task answer makes one call for all its steps while each profile trial paid "
    "one call, so summing per-op costs over n steps over-predicts by about (n − 1)·`call_ms` "
    "(A3 fails by construction): ≈ +240 ms for model-only and +200 ms for model-program "
    "(write cost has no digit term) with the defaults."
)
WILSON_EXPECTATION = (
    "The 95% Wilson intervals of the profile rates hold the true rate in about 95% of "
    "repetitions; at 6 trials per op the exact coverage for the true rate (printed when the "
    "rate is the same in every seed) can differ from 95% by a few points."
)


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def cells_table(cells: Sequence[Cell]) -> list[str]:
    lines = [
        "| structure | preset | condition | target | predictor | n | mean p | observed | "
        "Brier | MC n | Brier (MC subset) | expected Brier | E(p−q)² | E q(1−q) | "
        "cost error ms | rel. cost error |",
        "|" + "---|" * 16,
    ]
    for c in cells:
        lines.append(
            f"| {c.structure} | {c.preset} | {c.condition} | {c.target} | {c.predictor} | "
            f"{c.n} | {_f(c.mean_predicted)} | {_f(c.observed_rate)} | {_f(c.brier)} | "
            f"{c.mc_n} | {_f(c.brier_mc_subset)} | {_f(c.expected_brier)} | "
            f"{_f(c.miscalibration)} | {_f(c.irreducible)} | {_f(c.cost_signed_error_ms, 1)} | "
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


def _find(cells: Sequence[Cell], **key: str) -> Cell | None:
    for c in cells:
        if all(getattr(c, k) == v for k, v in key.items()):
            return c
    return None


def _cell(cells: Sequence[Cell], condition: str, predictor: str, target: str) -> Cell | None:
    return _find(cells, condition=condition, predictor=predictor, target=target)


def _se(c: Cell) -> float:
    """Standard error of the observed rate (binomial, at the larger of the two variances)."""
    spread = max(c.observed_rate * (1 - c.observed_rate), c.mean_predicted * (1 - c.mean_predicted))
    return math.sqrt(max(spread, 1e-12) / c.n)


def checks(results: Sequence[StructureResult]) -> list[tuple[str, str, str, bool]]:
    """(structure/preset, claim, numbers, holds) for each stated expectation."""
    found: list[tuple[str, str, str, bool]] = []
    for r in results:
        name = f"{r.spec.structure} / {r.preset}"
        cells = r.cells

        chain_all = _cell(cells, "controlled-chain", "product", "all_steps")
        if r.spec.structure in ("independent", "cancelling") and chain_all is not None:
            gap = chain_all.mean_predicted - chain_all.observed_rate
            found.append(
                (
                    name,
                    "product calibrated for chain all-step correctness (|mean p − observed| "
                    "< 2 SE)",
                    f"mean p {_f(chain_all.mean_predicted)}, observed "
                    f"{_f(chain_all.observed_rate)}, SE {_f(_se(chain_all))}",
                    abs(gap) < 2 * _se(chain_all),
                )
            )
        if r.spec.structure == "size-dependent":
            baseline = next(
                (b for b in results if b.spec.structure == "independent" and b.preset == r.preset),
                None,
            )
            for condition in ("model-only", "model-program", "controlled-chain"):
                target = "all_steps" if condition == "controlled-chain" else "final"
                product = _cell(cells, condition, "product", target)
                aware = _cell(cells, condition, "state-aware", target)
                if product is None or aware is None:
                    continue
                calm = baseline and _cell(baseline.cells, condition, "product", target)
                if calm and calm.miscalibration is not None and product.miscalibration is not None:
                    found.append(
                        (
                            name,
                            f"{condition} ({target}): product more miscalibrated than under "
                            "`independent` (E(p − q)², same preset)",
                            f"{_f(product.miscalibration)} vs {_f(calm.miscalibration)}; mean p "
                            f"{_f(product.mean_predicted)}, observed {_f(product.observed_rate)}",
                            product.miscalibration > calm.miscalibration,
                        )
                    )
                found.append(
                    (
                        name,
                        f"{condition} ({target}): state-aware Brier < product Brier",
                        f"{_f(aware.brier)} vs {_f(product.brier)}",
                        aware.brier < product.brier,
                    )
                )
        if r.spec.structure == "correlated":
            for condition, target in (
                ("controlled-chain", "all_steps"),
                ("controlled-chain", "final"),
                ("model-only", "final"),
            ):
                c = _cell(cells, condition, "product", target)
                if c is None:
                    continue
                found.append(
                    (
                        name,
                        f"{condition} ({target}): product too pessimistic (observed > mean p)",
                        f"observed {_f(c.observed_rate)}, mean p {_f(c.mean_predicted)}",
                        c.observed_rate > c.mean_predicted,
                    )
                )
        if r.spec.structure == "cancelling":
            final = _cell(cells, "controlled-chain", "product", "final")
            if final is not None and chain_all is not None:
                found.append(
                    (
                        name,
                        "chains: final correctness more frequent than all-step correctness; "
                        "naive proxy too pessimistic",
                        f"final {_f(final.observed_rate)}, all-step "
                        f"{_f(chain_all.observed_rate)}, mean p {_f(final.mean_predicted)}",
                        final.observed_rate > chain_all.observed_rate
                        and final.observed_rate > final.mean_predicted,
                    )
                )
    return found


def render_markdown(
    results: Sequence[StructureResult], command: str, figures: Sequence[str], notes: str
) -> str:
    lines = [
        "# Validation against synthetic models of known error structure",
        "",
        "Generated by `" + command + "` (`bench/validation.py`); the tables below are printed",
        "by the same run. Everything here is **synthetic**: it validates the instrument (profile →",
        "freeze → prediction → score, the Wilson intervals and the cost predictions) and is",
        "never model evidence. The synthetic models are specified in `pyapp/synthetic/spec.py`;",
        "the state-aware predictor in `pyapp/predict/state_aware.py`.",
        "",
        "## Method",
        "",
        "For each structure, every task seed runs the page's protocol natively (`python -m pyapp",
        "simulate`: measure, freeze, held-out, score). For the first seeds, each held-out",
        "trial's true success probability q is estimated by Monte Carlo: the same trial re-run",
        "under other model seeds. The expected mean Brier of a predictor is then",
        "E(p − q)² + E q(1 − q): its miscalibration plus the irreducible part a predictor",
        "knowing q would still pay. Profile rates' true values are exact (1 − P(step wrong) on",
        "each probe's operands), which gives the coverage of the Wilson intervals.",
        "",
        "## Expected outcomes (stated before the numbers)",
        "",
    ]
    for structure, text in EXPECTATIONS.items():
        lines.append(f"- **{structure}**: {text}")
    lines += [f"- **cost**: {COST_EXPECTATION}", f"- **Wilson coverage**: {WILSON_EXPECTATION}"]
    lines += ["", "## Runs", "", "| structure | spec | preset | seeds | trials | seconds |"]
    lines.append("|---|---|---|---|---|---|")
    for r in results:
        lines.append(
            f"| {r.spec.structure} | `{written_name(r.spec)}` | {r.preset} | {r.seeds} | "
            f"{r.trials} | "
            f"{r.seconds:.1f} |"
        )
    lines += ["", "## Checks of the expectations", ""]
    lines += ["| structure / preset | expectation | numbers | holds |", "|---|---|---|---|"]
    for name, claim, numbers, holds in checks(results):
        lines.append(f"| {name} | {claim} | {numbers} | {'yes' if holds else '**no**'} |")
    lines += ["", "## Scores per structure, condition, target and predictor", ""]
    lines += cells_table([c for r in results for c in r.cells])
    lines += ["", "## Coverage of the 95% Wilson intervals of the profile rates", ""]
    lines += coverage_table([c for r in results for c in r.coverage])
    lines += ["", "## Calibration curves", ""]
    for figure in figures:
        lines.append(f"![{figure}](validation/{figure})")
        lines.append("")
    lines += [notes.rstrip(), ""]
    return "\n".join(lines)


# ---- figures ---------------------------------------------------------------------------

_COLOURS = {"product": "#1f5fa8", "state-aware": "#d06000"}
_PANELS = (
    ("model-only", "final"),
    ("model-program", "final"),
    ("controlled-chain", "final"),
    ("controlled-chain", "all_steps"),
)


def _panel(x0: float, cells: Sequence[Cell], title: str) -> list[str]:
    size, top = 200.0, 40.0
    out = [
        f'<rect x="{x0}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#999"/>',
        f'<line x1="{x0}" y1="{top + size}" x2="{x0 + size}" y2="{top}" stroke="#bbb" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{x0}" y="{top - 8}" font-size="11">{title}</text>',
        f'<text x="{x0 + size / 2}" y="{top + size + 16}" font-size="10" '
        'text-anchor="middle">predicted</text>',
    ]
    for value in (0.0, 0.5, 1.0):
        out += [
            f'<text x="{x0 + value * size}" y="{top + size + 28}" font-size="9" '
            f'text-anchor="middle" fill="#666">{value:g}</text>',
            f'<text x="{x0 - 3}" y="{top + (1 - value) * size + 3}" font-size="9" '
            f'text-anchor="end" fill="#666">{value:g}</text>',
        ]
    for cell in cells:
        colour = _COLOURS[cell.predictor]
        for b in cell.curve:
            out += _point(x0, top, size, b, colour, cell.n)
    return out


def _point(
    x0: float, top: float, size: float, b: CalibrationCell, colour: str, n: int
) -> list[str]:
    if b.n == 0 or b.mean_predicted is None or b.observed_rate is None:
        return []
    x = x0 + b.mean_predicted * size
    y = top + (1 - b.observed_rate) * size
    r = 2 + 6 * math.sqrt(b.n / max(n, 1))
    low, high = top + (1 - b.wilson_high) * size, top + (1 - b.wilson_low) * size
    return [
        f'<line x1="{x:.1f}" y1="{low:.1f}" x2="{x:.1f}" y2="{high:.1f}" stroke="{colour}" '
        'stroke-opacity="0.5"/>',
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour}" fill-opacity="0.6"/>',
    ]


def calibration_svg(result: StructureResult) -> str:
    """Observed rate vs predicted probability (10 bins, Wilson bars, area ∝ n) per panel."""
    width = 40 + len(_PANELS) * 230
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="310" '
        f'font-family="sans-serif">',
        f'<text x="20" y="16" font-size="12" font-weight="bold">{result.spec.structure} '
        f"({result.preset}, {result.seeds} seeds) — synthetic, not model evidence</text>",
        '<text x="20" y="302" font-size="10"><tspan fill="#1f5fa8">● product</tspan>  '
        '<tspan fill="#d06000">● state-aware</tspan>  y: observed rate; dashed: '
        "perfect calibration</text>",
    ]
    for i, (condition, target) in enumerate(_PANELS):
        cells = [c for c in result.cells if c.condition == condition and c.target == target]
        parts += _panel(30 + i * 230, cells, f"{condition}, {target.replace('_', '-')}")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
