"""The confirmatory layer (issue 36): hypotheses frozen in a study receipt before the data,
one verdict each (supported / not supported / inconclusive), Holm's correction, post-hoc
hypotheses never judged, the receipt's checks, and the model-identity residual test's size
and power (a seeded 100-replication version of bench/residuals.py, with binomial bounds)."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pyapp.cli.main import main
from pyapp.errors import InputError
from pyapp.matrix import (
    RECEIPT_NAME,
    FrozenHypothesis,
    Hypothesis,
    check_hypotheses,
    check_receipt,
    expand,
    hypothesis_sha256,
    make_receipt,
    read_plan,
    read_receipt,
    require_receipt,
    seed_values,
)
from pyapp.predict import ScoredTask, exact_binomial_p, holm, residual_permutation
from pyapp.study import judge_hypotheses

ROOT = Path(__file__).resolve().parents[1]
PLAN = """
name = "two synthetic subjects"
[axes]
models = ["size-dependent", "independent"]
seeds = [31]
presets = ["subject-ladder/1"]
conditions = [["model-only", "controlled-chain"]]

[options]
sealed = "study"  # the two subjects share each seed's held-out tasks, drawn after both froze

[[hypotheses]]
id = "aware-skill"
statement = "state-aware beats climatology on chains"
metric = "skill"
predictor = "state-aware"
model = "size-dependent"
condition = "controlled-chain"
direction = "greater"
min_n = 20

[[hypotheses]]
id = "rate-diff"
statement = "size-dependent succeeds more often than independent on chains"
metric = "rate-difference"
model = "size-dependent"
versus = "independent"
condition = "controlled-chain"
direction = "greater"
margin = 0.1

[[prior_exposure]]
source = "a pilot"
seeds = [1, 2]
"""


def hypothesis(**kw: Any) -> Hypothesis:
    base: dict[str, Any] = {
        "id": "h",
        "statement": "s",
        "metric": "skill",
        "model": "A",
        "condition": "controlled-chain",
        "direction": "greater",
        "predictor": "state-aware",
        "min_n": 50,
    }
    return Hypothesis(**(base | kw))


def tasks(n: int, skill: bool, seed: int, rate_shift: float = 0.0) -> list[ScoredTask]:
    """n tasks whose outcomes are Bernoulli(q); the state-aware forecast is q (skill) or an
    uninformative draw (no skill)."""
    rng = random.Random(seed)
    found = []
    for i in range(n):
        q = rng.uniform(0.1, 0.9)
        outcome = rng.random() < min(1.0, q + rate_shift)
        forecast = q if skill else rng.uniform(0.1, 0.9)
        found.append(
            ScoredTask(
                f"recurrence-{i}", "c", 1, "r", "affine_recurrence", 2, outcome, 0.5, forecast, 0.5
            )
        )
    return found


def source_of(data: dict[str, list[ScoredTask]], exploratory: bool = False) -> Any:
    return lambda model, condition, family, rung: (data.get(model, []), exploratory)


def judged(hs: list[Hypothesis], data: dict[str, list[ScoredTask]], **kw: Any) -> list[Any]:
    receipt = make_fake_receipt(hs)
    return list(judge_hypotheses(hs, receipt, source_of(data, **kw), 200, 7))


def make_fake_receipt(hs: list[Hypothesis]) -> Any:
    """A receipt freezing `hs` (the study's judging reads only its hypotheses)."""

    class Fake:
        hypotheses = tuple(FrozenHypothesis(h, hypothesis_sha256(h), 200, 11) for h in hs)

    return Fake()


def test_each_verdict_on_constructed_data() -> None:
    skilled = judged([hypothesis()], {"A": tasks(400, True, 1)})[0]
    assert skilled.verdict == "supported" and skilled.p_corrected <= 0.05
    null = judged([hypothesis()], {"A": tasks(400, False, 2)})[0]
    assert null.verdict == "not supported"
    tiny = judged([hypothesis()], {"A": tasks(12, True, 3)})[0]
    assert tiny.verdict == "inconclusive" and tiny.reason.startswith("underpowered")
    none = judged([hypothesis()], {})[0]
    assert none.verdict == "inconclusive" and none.reason.startswith("undefined")
    seen = judged([hypothesis()], {"A": tasks(400, True, 1)}, exploratory=True)[0]
    assert seen.verdict == "inconclusive" and "exploratory" in seen.reason


def test_a_true_effect_is_supported_at_the_stated_power() -> None:
    """Exact binomial, n = 200, true rate 0.62 against a margin of 0.5 (power ≈ 0.93 at α
    0.05): over 40 seeded replications at least 31 supported (P(fewer) < 0.01 at 0.93);
    at a true rate of exactly 0.5, at most 6 (P(more) < 0.01 at α 0.05)."""
    h = hypothesis(metric="success-rate", predictor=None, method="exact", pairing="unpaired")
    h = replace(h, margin=0.5, min_n=100)
    hits = {0.62: 0, 0.5: 0}
    for rate in hits:
        for rep in range(40):
            rng = random.Random(1000 + rep)
            data = [replace(t, outcome=rng.random() < rate) for t in tasks(200, True, rep)]
            hits[rate] += judged([h], {"A": data})[0].verdict == "supported"
    assert hits[0.62] >= 31 and hits[0.5] <= 6, hits


def test_holm_by_hand_and_across_hypotheses() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert exact_binomial_p(7, 10, 0.5, "greater") == pytest.approx(176 / 1024)
    # three hypotheses on weak data: raw p below 0.05 for one, above after Holm (m = 3)
    data = {"A": tasks(400, True, 1), "B": tasks(400, False, 2)}
    hs = [hypothesis(id="a"), hypothesis(id="b", model="B"), hypothesis(id="c", model="B")]
    found = judged(hs, data)
    ps = [v.p_value for v in found]
    assert [v.p_corrected for v in found] == pytest.approx(holm(ps))
    assert found[0].verdict == "supported" and found[1].verdict == "not supported"


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN, encoding="utf-8")
    return path


def test_a_hypothesis_changed_after_the_receipt_is_post_hoc(
    plan_file: Path, tmp_path: Path
) -> None:
    plan = read_plan(plan_file)
    receipt = make_receipt(plan, plan_file, expand(plan, plan_file), "t", ROOT / "build" / "site")
    edited = replace(plan.hypotheses[0], margin=-0.5)  # easier after seeing the data
    added = hypothesis(id="new", model="size-dependent")
    data = {"size-dependent": tasks(400, True, 1)}
    found = judge_hypotheses([edited, added], receipt, source_of(data), 200, 3)
    post = [v for v in found if v.registration == "post hoc"]
    assert [v.id for v in post] == ["aware-skill", "new"]
    assert all(v.verdict is None and v.p_corrected is None for v in post)
    assert all(v.text.startswith(f"{v.id}: POST HOC") for v in post)
    lines = check_receipt(receipt, replace(plan, hypotheses=(edited, added)))
    assert lines == [
        "aware-skill: POST HOC (edited after the study receipt)",
        "new: POST HOC (added after the study receipt)",
        "rate-diff: frozen in the receipt, no longer in the plan",
    ]


def test_the_receipts_checks(plan_file: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    assert main(["matrix", str(plan_file), "--out", str(out)]) == 1  # no receipt: refused
    assert "freeze them first" in capsys.readouterr().err and not (out / "cells").exists()
    assert main(["study-receipt", str(plan_file), "--out", str(out)]) == 0
    receipt = read_receipt(out / RECEIPT_NAME)
    assert receipt.seeds == (31,) and {c.model for c in receipt.cells} == {
        "size-dependent",
        "independent",
    }
    assert all(c.config_sha256 for c in receipt.cells)
    assert main(["study-receipt", str(plan_file), "--out", str(out)]) == 1  # written once
    assert "never rewritten" in capsys.readouterr().err
    # an edited receipt is found by its fingerprint
    text = (out / RECEIPT_NAME).read_text(encoding="utf-8")
    (tmp_path / "edited.json").write_text(text.replace('"margin": 0.1', '"margin": 0.0'))
    with pytest.raises(InputError, match="edited after it was"):
        read_receipt(tmp_path / "edited.json")
    # another plan's receipt: refused by the matrix and by --check
    other = tmp_path / "other.toml"
    other.write_text(PLAN.replace("seeds = [31]", "seeds = [32]"), encoding="utf-8")
    with pytest.raises(InputError, match="another plan's receipt"):
        require_receipt(out, read_plan(other))
    assert main(["study-receipt", str(other), "--check", str(out / RECEIPT_NAME)]) == 1
    assert main(["study-receipt", str(plan_file), "--check", str(out / RECEIPT_NAME)]) == 0
    # a seed observed before is refused as confirmatory
    seen = tmp_path / "seen.toml"
    seen.write_text(PLAN.replace("seeds = [31]", "seeds = [2]"), encoding="utf-8")
    assert main(["study-receipt", str(seen), "--out", str(tmp_path / "o2")]) == 1
    assert "observed before" in capsys.readouterr().err


def null_and_shifted(n: int, shift: float, rng: random.Random) -> list[float]:
    """Residual differences of two synthetic subjects on the same n tasks: the same frozen
    prediction q; B's success probability q + shift (0: they differ in nothing)."""
    found = []
    for _ in range(n):
        q = rng.uniform(0.2, 0.7)
        a = float(rng.random() < q) - q
        b = float(rng.random() < q + shift) - q
        found.append(a - b)
    return found


def test_the_residual_tests_size_and_power() -> None:
    """100 seeded replications, n = 100 tasks, 199 permutations, α 0.05. Size: at most 12
    rejections (P(X > 12) < 0.002 for Binomial(100, 0.05)); power against an identity
    effect of 0.25: at least 80."""
    rejections = {0.0: 0, 0.25: 0}
    for shift in rejections:
        rng = random.Random(36)
        for rep in range(100):
            result = residual_permutation(null_and_shifted(100, shift, rng), 199, rep)
            assert result is not None
            rejections[shift] += result[1] <= 0.05
    assert rejections[0.0] <= 12 and rejections[0.25] >= 80, rejections
    assert rejections[0.0] >= 1  # it can reject at all


def test_the_study_judges_the_receipts_hypotheses_first(plan_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["study-receipt", str(plan_file), "--out", str(out)]) == 0
    assert main(["matrix", str(plan_file), "--out", str(out), "--jobs", "2"]) == 0
    edited = tmp_path / "edited.toml"
    edited.write_text(PLAN.replace("margin = 0.1", "margin = 0.0"), encoding="utf-8")
    args = ["study", str(out), "--resamples", "200", "--plan", str(edited)]
    assert main([*args, "--markdown", str(tmp_path / "s.md")]) == 0
    doc = json.loads((out / "study.json").read_text(encoding="utf-8"))
    assert list(doc)[:5] == ["schema_version", "kind", "receipt", "hypotheses", "residuals"]
    regs = [(v["id"], v["registration"], v["verdict"] is None) for v in doc["hypotheses"]]
    assert regs == [
        ("aware-skill", "preregistered", False),
        ("rate-diff", "preregistered", False),
        ("rate-diff", "post hoc", True),
    ]
    assert {r["verdict"] for r in doc["residuals"]} <= {
        "supported",
        "not supported",
        "inconclusive",
    }
    markdown = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert markdown.index("confirmatory verdicts") < markdown.index("## Answer")
    html = (out / "study.html").read_text(encoding="utf-8")
    assert html.index('id="hypotheses"') < html.index('id="answer"')
    shutil.rmtree(out / "cells")


def test_the_comparison_plan_is_frozen_before_it_runs() -> None:
    """examples/comparison-subjects.toml: both subjects, the study's ladder, three seeds no
    earlier run observed, native, hypotheses written down (checked against its own axes;
    expanding its cells needs the second subject in the catalogue)."""
    path = ROOT / "examples" / "comparison-subjects.toml"
    plan = read_plan(path)
    assert plan.axes.models == ("subject", "subject2") and plan.axes.backends == ("native",)
    assert plan.axes.presets == ("subject-ladder",) and len(seed_values(plan)) >= 3
    assert len(plan.hypotheses) >= 3 and all(h.informed_by for h in plan.hypotheses)
    rungs = [f"subject-ladder/{i}" for i in range(1, 5)]
    conditions = plan.axes.conditions[0]
    check_hypotheses(
        plan.hypotheses, plan.prior_exposure, ["subject", "subject2"], conditions,
        seed_values(plan), rungs, path,
    )  # fmt: skip
    observed = {s for p in plan.prior_exposure for s in p.seeds}
    assert not observed & set(seed_values(plan))


def test_the_receipt_names_each_bundled_subjects_config_without_a_built_site(
    tmp_path: Path,
) -> None:
    """A study receipt of subject cells records each subject's own config.json digest even
    where no site is built (it reads the source catalogue, which the build copies): the
    first start of the comparison froze `None` for both subjects."""
    from pyapp.matrix import expand, make_receipt
    from pyapp.records import SUBJECTS

    path = tmp_path / "plan.toml"
    path.write_text(
        '[axes]\nmodels = ["subject", "subject2"]\nseeds = [31]\npresets = ["design"]\n'
        'backends = ["native"]\n[options]\nconsent = true\n',
        encoding="utf-8",
    )
    plan = read_plan(path)
    cells = expand(plan, path)
    receipt = make_receipt(plan, path, cells, "2026-12-05T00:00:00Z", tmp_path / "no-site")
    digests = {c.model: c.config_sha256 for c in receipt.cells}
    assert digests == {"subject": SUBJECTS[0].config_sha256, "subject2": SUBJECTS[1].config_sha256}


def test_a_one_model_brier_difference_hypothesis_is_judged() -> None:
    """`brier-difference` of one model (product − state-aware) has its own column: the
    comparison's study crashed on an assertion when the metric's name was cut to `brier`."""
    from pyapp.matrix import Hypothesis
    from pyapp.study.verdicts import _statistic

    h = Hypothesis(
        id="product-worse", statement="s", metric="brier-difference", model="m",
        condition="controlled-chain", direction="greater", margin=0.0,
    )  # fmt: skip
    assert _statistic(h, [])[1] is not None
