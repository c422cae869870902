"""The study's figures on hand-built outcomes (issue 34): Brier skill against climatology and
its undefined cases, rung-aware climatology, the two named intervals, the degenerate flags,
the answer templates (beats / fails / cannot say), and the flags shown first by `score`, the
report, Compare and what Python hands the page's step 4."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from asyncrun import in_thread

from pyapp.browser import run_plots
from pyapp.cli.main import main
from pyapp.predict import (
    ScoredTask,
    answer,
    degenerate_flags,
    difference_answer,
    flags,
    flags_of,
    headline,
    intervals,
    read_predictions,
    skill,
    slice_figures,
    tasks_needed,
)

ROOT = Path(__file__).resolve().parents[1]


def task(
    i: int,
    outcome: bool,
    product: float,
    aware: float | None = None,
    *,
    seed: int = 1,
    stratum: str = "r",
    reference: float | None = 0.5,
) -> ScoredTask:
    return ScoredTask(
        f"recurrence-{i}", "cell", seed, stratum, "affine_recurrence", 2, outcome, product,
        product if aware is None else aware, reference,
    )  # fmt: skip


def figures(tasks: list[ScoredTask], **kw: object) -> flags.SliceFigures:
    return slice_figures(tasks, condition="controlled-chain", scope="rung", resamples=300, **kw)  # type: ignore[arg-type]


def test_skill_against_climatology_by_hand() -> None:
    outcomes = [True, False, True, False, True, False, False, False, True, False]
    p = [0.8, 0.3, 0.6, 0.1, 0.9, 0.2, 0.4, 0.3, 0.7, 0.1]
    fig = figures([task(i, o, q) for i, (o, q) in enumerate(zip(outcomes, p, strict=True))])
    brier = sum((q - o) ** 2 for q, o in zip(p, outcomes, strict=True)) / 10
    assert fig.base_rate == 0.4 and fig.climatology_brier == pytest.approx(0.24)
    assert fig.product.brier == pytest.approx(brier)
    assert fig.product.skill == pytest.approx(1 - brier / 0.24)
    assert fig.product.skill_frozen_reference == pytest.approx(1 - brier / 0.25)  # beside it
    assert skill.climatology_brier(outcomes, ["r"] * 10) == pytest.approx(0.24)


def test_rung_aware_climatology_uses_each_rungs_base_rate() -> None:
    easy = [task(i, o, 0.7, stratum="rung-1") for i, o in enumerate([1, 1, 1, 0])]
    hard = [task(10 + i, o, 0.2, stratum="rung-2") for i, o in enumerate([0, 0, 0, 1])]
    fig = figures(easy + hard, pooled_over_rungs=True)
    assert fig.climatology == skill.RUNG_AWARE
    assert fig.climatology_brier == pytest.approx(0.75 * 0.25)  # both rungs: 3/4 and 1/4
    assert fig.product.skill == pytest.approx(1 - fig.product.brier / (0.75 * 0.25))
    pooled = figures(easy + hard)  # one stratum: the pooled base rate 1/2
    assert pooled.climatology_brier == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("outcomes", "words"),
    [
        ([False] * 12, "all 12 held-out outcomes are 0 (every task failed)"),
        ([True] * 12, "all 12 held-out outcomes are 1 (every task right)"),
    ],
)
def test_skill_is_undefined_in_words_when_outcomes_are_constant(
    outcomes: list[bool], words: str
) -> None:
    fig = figures([task(i, o, 0.05 + 0.01 * i) for i, o in enumerate(outcomes)])
    assert fig.product.skill is None and words in (fig.product.skill_undefined or "")
    assert fig.product.tasks_needed is None
    assert fig.product.skill_frozen_reference is not None  # the number that used to mislead
    said = degenerate_flags(fig)
    assert words in said[0] and "says nothing about prediction" in said[0]
    reply = answer(fig, "product")
    assert reply is not None and reply.verdict == "cannot say"
    assert "constant" in (reply.reason or "")


def test_every_rung_constant_makes_rung_aware_skill_undefined() -> None:
    tasks = [task(i, True, 0.9, stratum="rung-1") for i in range(6)]
    tasks += [task(10 + i, False, 0.1, stratum="rung-2") for i in range(6)]
    fig = figures(tasks, pooled_over_rungs=True)
    assert fig.product.skill is None
    assert "rung-aware climatology is perfect" in (fig.product.skill_undefined or "")
    assert any("rung-aware climatology is perfect" in w for w in degenerate_flags(fig))


def test_flags_for_few_tasks_zero_width_and_a_reference_at_0() -> None:
    few = figures([task(i, i % 2 == 0, 0.5) for i in range(6)])
    assert any("only n = 6 held-out tasks (fewer than 10)" in w for w in degenerate_flags(few))
    assert answer(few, "product").verdict == "cannot say"  # type: ignore[union-attr]
    flat = figures([task(i, i % 2 == 0, 0.5) for i in range(20)])  # every error 0.25
    assert flat.product.brier_bootstrap.width == 0
    assert any("zero-width interval (product Brier" in w for w in degenerate_flags(flat))
    at_zero = figures([task(i, i % 3 == 0, 0.3, reference=0.0) for i in range(20)])
    assert any("frozen reference forecast" in w and "is 0" in w for w in degenerate_flags(at_zero))
    assert degenerate_flags(figures([task(i, i % 3 == 0, 0.3 + 0.01 * i) for i in range(20)])) == []


def test_the_headline_says_all_zero_first() -> None:
    zero = figures([task(i, False, 0.01) for i in range(6)])
    first = headline([zero, zero])
    assert first is not None and first.startswith("DEGENERATE: all 12 held-out outcomes are 0")
    mixed = figures([task(i, i % 3 == 0, 0.3 + 0.01 * i) for i in range(20)])
    assert headline([mixed]) is None
    assert (headline([mixed, zero]) or "").startswith("DEGENERATE scores in 1 of 2 slices")


def constructed(n: int, state_sd: float, product: float, seeds: int = 3) -> list[ScoredTask]:
    """Outcomes drawn from a known chance q per task: the state-aware forecast is q plus
    noise, the product a constant."""
    rng = random.Random(5)
    found = []
    for i in range(n):
        q = rng.random()
        aware = min(1.0, max(0.0, q + rng.gauss(0, state_sd)))
        found.append(task(i, rng.random() < q, product, aware, seed=11 + i % seeds))
    return found


def test_answer_templates_beats_fails_and_cannot_say() -> None:
    fig = figures(constructed(300, 0.05, 0.05))
    beats, fails = answer(fig, "state-aware"), answer(fig, "product")
    assert beats is not None and beats.verdict == "beats climatology"
    assert (beats.text.startswith("controlled-chain, state-aware predictor (rung): beats "
            "climatology. Brier skill against climatology +"))  # fmt: skip
    assert "percentile bootstrap over tasks, 300 resamples, seed 34" in beats.text
    assert fails is not None and fails.verdict == "fails against climatology"
    assert fig.product.skill_bootstrap.high is not None and fig.product.skill_bootstrap.high < 0
    said = difference_answer(fig)
    assert said is not None and "the state-aware predictor's Brier score is lower" in said
    noisy = figures(constructed(30, 0.4, 0.45))  # informative, but 30 tasks and much noise
    spans = answer(noisy, "state-aware")
    assert spans is not None and spans.verdict == "cannot say"
    assert spans.reason == "its interval spans 0"
    lines = flags.lines_of([fig])
    assert lines[0] == flags.ANSWER_LABEL and "Descriptive" in lines[0]


def test_intervals_are_named_seeded_and_recorded() -> None:
    tasks = constructed(120, 0.1, 0.3)
    a = figures(tasks, seed=7)
    assert a == figures(tasks, seed=7)  # the same seed, the same figures
    boot = a.state_aware.skill_bootstrap  # type: ignore[union-attr]
    assert (boot.method, boot.resamples, boot.seed) == (intervals.BOOTSTRAP, 300, 7)
    seeds = a.state_aware.skill_seeds  # type: ignore[union-attr]
    assert seeds.method == intervals.ACROSS_SEEDS and seeds.n == 3 and seeds.low is not None
    one = figures([t for t in tasks if t.seed == 11])
    assert one.product.brier_seeds.low is None and "needs two or more" in (
        one.product.brier_seeds.note or ""
    )
    assert figures(tasks, seed=8).product.brier_bootstrap != a.product.brier_bootstrap


def test_binned_decomposition_adds_up_and_tasks_needed_follows_the_delta_method() -> None:
    tasks = constructed(200, 0.2, 0.3)
    p = [t.state_aware or 0.0 for t in tasks]
    o = [t.outcome for t in tasks]
    d = skill.binned_decomposition(p, o)
    assert d is not None
    brier = sum((x - y) ** 2 for x, y in zip(p, o, strict=True)) / len(p)
    assert d.reliability - d.resolution + d.uncertainty + d.within_bins == pytest.approx(brier)
    # the delta method by hand on a tiny case: e = (0, 1), r = (0.25, 0.25)
    e, r = [0.0, 1.0], [0.25, 0.25]
    u = [(x - 2.0 * y) / 0.25 for x, y in zip(e, r, strict=True)]  # E/R = 2
    sd = math.sqrt(sum((x - sum(u) / 2) ** 2 for x in u))
    assert tasks_needed(e, r) == (math.ceil((1.959963984540054 * sd / 0.1) ** 2), None)
    fig = figures(tasks)
    assert fig.state_aware is not None and fig.state_aware.tasks_needed is not None


def test_success_by_steps() -> None:
    tasks = [
        ScoredTask(f"recurrence-{i}", "c", 1, "r", "affine_recurrence", 2 * (1 + i % 3),
                   i % 3 == 0, 0.5, 0.4, 0.5)
        for i in range(9)
    ]  # fmt: skip
    rows = figures(tasks).by_steps
    assert [(r.steps, r.n, r.successes) for r in rows] == [(2, 3, 3), (4, 3, 0), (6, 3, 0)]


# ---- the flags first, wherever scores are shown ------------------------------------------


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic run whose every step fails: every held-out outcome is 0."""
    out = tmp_path_factory.mktemp("all-zero") / "sim"
    model = "independent:p_add=1,p_sub=1,p_mul=1"
    argv = ["simulate", "--model", model, "--seeds", "3..3", "--out", str(out)]
    assert in_thread(main, argv) == 0  # asyncio inside: not in the browser tests' loop
    return out / "seed-3"


ALL_ZERO = "DEGENERATE: all 14 held-out outcomes are 0"


def test_score_says_all_zero_in_its_first_line(
    failing_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["score", str(failing_run / "trace.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(ALL_ZERO), out[:2]
    assert any("skill against climatology (the held-out base rate 0.000" in ln for ln in out)


def test_the_report_says_it_under_its_title(failing_run: Path, tmp_path: Path) -> None:
    assert main(["report", str(failing_run), "--out", str(tmp_path / "r.html")]) == 0
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    body = text[text.index("<h1>") :]
    assert body.index(ALL_ZERO) < body.index("</header>") < body.index("Reproduction")
    assert "Brier skill against climatology [95%]" in text


def test_compare_and_the_page_show_the_flags_first(
    failing_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(failing_run / "predictions.json")
    capsys.readouterr()
    assert main(["compare", path, str(ROOT / "tests/fixtures/predictions-1.json"),
                 "--describe-anyway"]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    # a predictions document alone is said to be unverified first (issue 41: the page says the
    # same lines), then what the comparison is, then the flags
    assert out[0].startswith("WARNING: task set unverified: predictions-1 ")
    assert out[1].startswith("DESCRIBED ANYWAY")
    assert out[2].startswith(f"seed-3: {ALL_ZERO}")
    assert main(["compare", path, path]) == 0  # the same task set: the flags come first
    assert capsys.readouterr().out.startswith(f"{path}: {ALL_ZERO}")
    doc = read_predictions(json.loads((failing_run / "predictions.json").read_text()))
    drawn = run_plots(doc, doc.evidence)
    assert drawn is not None and drawn.flags[0].startswith(ALL_ZERO)
    assert drawn.answers[0] == flags.ANSWER_LABEL


def test_each_flag_has_its_kind_and_the_words_are_the_flags_words() -> None:
    """The validation counts flags by kind (`flags_of`); every reader gets the same words."""
    cases = [
        (figures([task(i, False, 0.1) for i in range(12)]), ["constant", "zero-width"]),
        (figures([task(i, i % 2 == 0, 0.5) for i in range(6)]), ["few"]),
        (figures([task(i, i % 2 == 0, 0.5) for i in range(20)]), ["zero-width"]),
        (figures([task(i, i % 3 == 0, 0.3, reference=0.0) for i in range(20)]), ["reference-end"]),
    ]
    rungs = [task(i, True, 0.9, stratum="rung-1") for i in range(6)]
    rungs += [task(10 + i, False, 0.1, stratum="rung-2") for i in range(6)]
    cases.append((figures(rungs, pooled_over_rungs=True), ["undefined", "zero-width"]))
    for fig, kinds in cases:
        flags = flags_of(fig)
        assert [f.kind for f in flags] == kinds
        assert degenerate_flags(fig) == [f.words for f in flags]
