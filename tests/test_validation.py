"""The validation's machinery on tiny runs (the full run is bench/validation.py): checks
against committed expectations with bands that can be missed, intervals over seeds, power,
the refusal of a seed list without expectations, and a committed docs/validation.md whose
structure a quick regeneration reproduces."""

import importlib.util
import math
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from asyncrun import in_thread

from pyapp.errors import InputError
from pyapp.records import DESIGN_CHAIN, EXTENDED_CHAIN
from pyapp.report import calibration_svg
from pyapp.synthetic import (
    SEED_LISTS,
    findings,
    interval,
    list_protocol,
    parse_spec,
    plans,
    power_at,
    read_expectations,
    render_markdown,
    report_skeleton,
    result_checks,
    seed_targets,
    seeds_for_80,
    validate_structure,
    verdict,
)
from pyapp.tasks import preset_params

ROOT = Path(__file__).resolve().parents[1]


def smoke(model, preset="design"):
    first, last = SEED_LISTS["smoke"][preset]
    return in_thread(
        validate_structure,
        parse_spec(model),
        preset,
        preset_params(preset),
        range(first, last + 1),
        lambda: 0.0,
    )


def test_verdicts_need_the_interval_inside_or_outside_the_band():
    assert verdict(0.10, 0.12, 0.08, 0.14) == "holds"
    assert verdict(0.10, 0.20, 0.08, 0.14) == "consistent"
    assert verdict(0.15, 0.20, 0.08, 0.14) == "contradicted"
    assert verdict(-0.02, 0.01, 0.27, 0.33) == "contradicted"  # an absent effect, claimed
    low, high = interval([1.0, 1.0, 1.0], 0.3)  # three agreeing seeds: the planned spread
    assert low == pytest.approx(1.0 - 1.96 * 0.3 / math.sqrt(3), abs=1e-3) and high > 1.0
    assert interval([0.0, 1.0], 0.0)[1] - interval([0.0, 1.0], 0.0)[0] > 1.0


def test_power_grows_with_seeds_and_names_the_seeds_needed():
    assert power_at(0.10, 0.03, 0.35, 400) > power_at(0.10, 0.03, 0.35, 40)
    n = seeds_for_80(0.10, 0.03, 0.35, 5000)
    assert power_at(0.10, 0.03, 0.35, n) >= 0.8 > power_at(0.10, 0.03, 0.35, n - 1)
    assert seeds_for_80(0.10, 0.03, 0.35, 50) is None  # unaffordable: descriptive
    assert power_at(1.0, 0.0, 0.0, 2) == 1.0  # a statistic without spread


def test_a_seed_list_or_structure_without_committed_expectations_is_refused():
    data = read_expectations()
    with pytest.raises(InputError, match="no committed expectations for seed list 'nope'"):
        plans(data, "nope", "independent", "design")
    changed = dict(data, structures={**data["structures"], "depth": "0" * 64})
    with pytest.raises(InputError, match="structure 'depth' as it is now") as caught:
        plans(changed, "smoke", "depth", "design")
    assert caught.value.code == "no_expectations"


@pytest.mark.parametrize(("model", "preset"), [("format", "design"), ("encoding", "design")])
def test_the_committed_expectations_are_what_the_targets_give(model, preset):
    """The committed file holds the mean over the list's seeds of `seed_targets` (the one
    script writes it; this re-derives the smoke list's numbers for cheap structures)."""
    data = read_expectations()
    first, last = SEED_LISTS["smoke"][preset]
    per_seed = [
        seed_targets(parse_spec(model), preset_params(preset, s)) for s in range(first, last + 1)
    ]
    committed = data["expected"]["smoke"][model][preset]
    for statistic, (value, _) in committed.items():
        mine = math.fsum(t.values[statistic] for t in per_seed) / len(per_seed)
        assert mine == pytest.approx(value, abs=1e-12), statistic


def test_a_smoke_run_renders_its_report():
    result = smoke("cancelling")
    keys = {(c.condition, c.predictor, c.target) for c in result.cells}
    assert ("controlled-chain", "state-aware", "all_steps") in keys
    assert ("model-only", "product-shrunk", "final") in keys
    ET.fromstring(calibration_svg(result))  # well-formed
    checks = result_checks(result, plans(read_expectations(), "smoke", "cancelling", "design"))
    assert any(c.statistic == "controlled-chain/-/cancel" for c in checks)
    assert all(c.verdict != "contradicted" for c in checks), [
        c.statistic for c in checks if c.verdict == "contradicted"
    ]
    text = render_markdown([result], "test", {"seeds": 3}, ["x.svg"], checks)
    assert text.index("Expected outcomes") < text.index("Checks of the expectations")
    assert text.index("Margins and effect sizes") < text.index("## Findings")
    assert "never model evidence" in text and "| seeds | 3 |" in text
    assert "## Mutation testing of the validation" in text


def test_a_biased_product_is_contradicted():
    # Fault injection on the observations: every product prediction raised by 0.7 (three
    # seeds: the interval is wide, at the pilot's spread).
    result = smoke("independent")
    found = plans(read_expectations(), "smoke", "independent", "design")
    statistic = "model-only/final/calibration"
    honest = {c.statistic: c for c in result_checks(result, found)}
    observed = dict(result.observed)
    observed[statistic] = {s: v + 0.7 for s, v in observed[statistic].items()}
    biased = {c.statistic: c for c in result_checks(replace(result, observed=observed), found)}
    assert honest[statistic].verdict != "contradicted"
    assert biased[statistic].verdict == "contradicted"
    gone = dict(result.observed)
    del gone[statistic]  # a statistic the run no longer produces
    vanished = {c.statistic: c for c in result_checks(replace(result, observed=gone), found)}
    assert vanished[statistic].verdict == "contradicted"


def test_findings_are_templated_from_the_numbers():
    result = smoke("depth")
    checks = result_checks(result, plans(read_expectations(), "smoke", "depth", "design"))
    lines = findings(checks)
    depth = next(c for c in checks if c.statistic == "model-only/final/calibration")
    assert any(f"observed {depth.estimate:+.3f}" in line for line in lines)
    moved = [replace(c, estimate=c.estimate - 0.5) if c is depth else c for c in checks]
    assert findings(moved) != lines


def test_the_committed_report_has_the_structure_of_a_quick_regeneration(tmp_path):
    path = ROOT / "bench" / "validation.py"
    spec = importlib.util.spec_from_file_location("bench_validation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert in_thread(module.main, ["--quick", "--out", str(tmp_path)]) == 0
    fresh = report_skeleton((tmp_path / "validation.md").read_text(encoding="utf-8"))
    committed = report_skeleton((ROOT / "docs" / "validation.md").read_text(encoding="utf-8"))
    assert committed == fresh
    figures = sorted(p.name for p in (tmp_path / "validation").glob("*.svg"))
    assert figures == sorted(p.name for p in (ROOT / "docs" / "validation").glob("*.svg"))


NEW_ROUTES = ("triangle_determinant", "cubic_derivative")


def _success_statistics(names):
    return {
        n
        for n in names
        if n.startswith("controlled-chain/") and any(n.endswith(f"success:{f}") for f in NEW_ROUTES)
    }


def test_the_extended_list_is_checked_under_its_protocol_and_refused_under_another():
    """`ci-extended` holds committed expectations made under chain-extended/1, with a check
    of the chain's final and all-step success on each new route; the design's lists have
    none; a list recorded under another protocol than its own is refused."""
    data = read_expectations()
    assert list_protocol("ci-extended") == EXTENDED_CHAIN
    assert data["list_protocols"]["ci-extended"] == "chain-extended/1"
    assert {data["list_protocols"][n] for n in SEED_LISTS if n != "ci-extended"} == {
        "chain-design/1"
    }
    for structure in data["structures"]:
        for preset in ("design", "calibration-60"):
            extended = plans(data, "ci-extended", structure, preset)
            assert len(_success_statistics(extended)) == 4, (structure, preset)
            assert not _success_statistics(plans(data, "ci", structure, preset))
    moved = dict(data, list_protocols={**data["list_protocols"], "ci-extended": "chain-design/1"})
    with pytest.raises(InputError, match="under chain protocol chain-extended/1") as caught:
        plans(moved, "ci-extended", "independent", "design")
    assert caught.value.code == "no_expectations"
    gone = dict(data, expected={k: v for k, v in data["expected"].items() if k != "ci-extended"})
    with pytest.raises(InputError, match="no committed expectations for seed list"):
        plans(gone, "ci-extended", "independent", "design")


@pytest.mark.parametrize(
    ("model", "preset"), [("independent", "design"), ("cancelling", "calibration-60")]
)
def test_the_committed_extended_expectations_are_what_the_targets_give(model, preset):
    """The `ci-extended` numbers are the mean over its seeds of `seed_targets` under
    chain-extended/1 (re-derived for two structures), not the design protocol's."""
    data = read_expectations()
    first, last = SEED_LISTS["ci-extended"][preset]
    spec = parse_spec(model)
    per_seed = [
        seed_targets(spec, preset_params(preset, s), EXTENDED_CHAIN.version)
        for s in range(first, last + 1)
    ]
    committed = data["expected"]["ci-extended"][model][preset]
    for statistic, (value, _) in committed.items():
        mine = math.fsum(t.values[statistic] for t in per_seed) / len(per_seed)
        assert mine == pytest.approx(value, abs=1e-12), statistic
    design = data["expected"]["ci"][model][preset]  # the same seeds, chains under design
    calibration = "controlled-chain/all_steps/calibration"
    assert committed[calibration][0] != pytest.approx(design[calibration][0], abs=1e-3)


def test_an_extended_run_observes_the_new_routes_and_its_checks_hold():
    """The `ci-extended` list's validation (chains under chain-extended/1) reads each new
    route's success from the run, and none of its checks is contradicted; a run under the
    design's protocol has no chain trials of the new routes."""
    first, last = SEED_LISTS["ci-extended"]["design"]
    spec = parse_spec("independent")

    def run(protocol):
        return in_thread(
            lambda: validate_structure(
                spec,
                "design",
                preset_params("design"),
                range(first, last + 1),
                lambda: 0.0,
                protocol=protocol,
            )
        )

    result = run(EXTENDED_CHAIN)
    assert len(_success_statistics(result.observed)) == 4
    checks = result_checks(
        result, plans(read_expectations(), "ci-extended", "independent", "design")
    )
    assert len(_success_statistics(c.statistic for c in checks)) == 4
    assert all(c.verdict != "contradicted" for c in checks), [
        c.statistic for c in checks if c.verdict == "contradicted"
    ]
    assert not _success_statistics(run(DESIGN_CHAIN).observed)


def test_the_degenerate_flag_and_the_skill_against_climatology_are_under_a_verdict():
    """Both are read through the functions `score`, the page and the study call
    (`slice_figures`, `flags_of`) and checked against closed-form expectations: a seed's
    P(every held-out outcome equal) = Π q + Π(1 − q), and the pooled skill's
    1 − E[Brier] / E[ō(1 − ō)]. On the smoke list the constant flag is checked; the skill
    needs more seeds than three (`SKILL_OUTCOMES`), so the ci list plans it."""
    data = read_expectations()
    result = smoke("encoding")  # every composition is right: every seed is flagged constant
    found = plans(data, "smoke", "encoding", "design")
    constant = "model-only/final/constant"
    assert found[constant].expected == pytest.approx(1.0)
    assert set(result.observed[constant].values()) == {1.0}
    checks = {c.statistic: c for c in result_checks(result, found)}
    assert checks[constant].verdict != "contradicted"
    assert "model-only/final/skill" not in found  # every outcome 1: no skill to expect
    few = plans(data, "smoke", "independent", "design")["model-only/final/skill"]
    assert few.descriptive and "no claim" in few.claim  # 18 tasks: too few outcomes
    unflagged = dict(result.observed, **{constant: dict.fromkeys(result.observed[constant], 0.0)})
    moved = {c.statistic: c for c in result_checks(replace(result, observed=unflagged), found)}
    assert moved[constant].verdict == "contradicted"
    ci = plans(data, "ci", "independent", "calibration-60")
    skill = ci["model-only/final/skill"]
    assert skill.low < skill.expected < skill.high and not math.isnan(skill.expected)


def test_the_skill_expectation_is_its_closed_form_and_needs_outcomes_of_both_kinds():
    from pyapp.synthetic import SKILL_OUTCOMES, skill_expected

    parts = {"brier": 0.2, "base-rate": 0.3, "floor": 0.18, "heldout-n": 6.0}
    expected = {f"c/final/{k}": [v, 0.001 if k == "brier" else 0.0] for k, v in parts.items()}
    value, bound, enough = skill_expected(expected, "c", 100)
    reference = 0.3 * 0.7 - 0.18 / 600
    assert value == pytest.approx(1 - 0.2 / reference) and bound == pytest.approx(0.001 / reference)
    assert enough
    rare = dict(expected, **{"c/final/base-rate": [SKILL_OUTCOMES / 600 - 1e-9, 0.0]})
    assert skill_expected(rare, "c", 100)[2] is False  # judged descriptive
    perfect = dict(expected, **{"c/final/base-rate": [1.0, 0.0], "c/final/floor": [0.0, 0.0]})
    assert skill_expected(perfect, "c", 100) is None
    assert skill_expected({}, "c", 100) is None


def test_the_pooled_skill_pseudo_values_average_to_the_shipped_skill():
    from pyapp.predict import ScoredTask, slice_figures
    from pyapp.synthetic import POOLED, pooled_skill

    def task(seed, i, outcome, p):
        return ScoredTask(f"t{seed}-{i}", "c", seed, "s", "add", 1, outcome, p, None, 0.5)

    tasks = [task(s, i, (s + i) % 3 == 0, 0.2 + 0.1 * i) for s in range(1, 6) for i in range(4)]
    pseudo = pooled_skill("model-only", tasks)
    shipped = slice_figures(tasks, condition="model-only", scope=POOLED).product.skill
    assert sorted(pseudo) == [1, 2, 3, 4, 5]
    assert math.fsum(pseudo.values()) / 5 == pytest.approx(shipped, abs=1e-12)
    assert len(set(pseudo.values())) > 1  # a spread over seeds, not one value
    assert pooled_skill("model-only", [task(s, 0, False, 0.3) for s in range(3)]) == {}
