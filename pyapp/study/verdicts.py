"""Each hypothesis's verdict and each model-identity residual test (docs/comparison.md).

A hypothesis is judged on its slice — the cells of its model (and `versus`), its condition,
its family, its rung or every rung (pooled: each task's climatology its rung's) — with the
test it names (`pyapp.predict.confirm`), the resamples and seed the study receipt froze, and
Holm's correction across the receipt's hypotheses. The verdict is one of three words:

| verdict        | when                                                               |
|----------------|--------------------------------------------------------------------|
| supported      | corrected p ≤ α                                                    |
| not supported  | corrected p > α                                                    |
| inconclusive   | underpowered (n < min_n) or undefined (no tasks, a skill whose      |
|                | outcomes are all equal, no state-aware prediction, an exploratory  |
|                | profile in the slice, a statistic undefined in every resample)      |

A post-hoc hypothesis (not in the receipt, or edited since) gets its estimate, interval and
uncorrected p-value, labelled POST HOC, and no verdict; it is outside Holm's family.

The residual test: for every two models of the study, per condition and family, the tasks
both answered (the same seed, rung and task id) and d = (o_A − p_A) − (o_B − p_B), with p
each subject's frozen state-aware prediction; a stratified permutation test of the subject
label within each task (`pyapp.predict.confirm.residual_permutation`), Holm across the
residual tests. "supported" here says the subject's identity explains composed outcomes
beyond its frozen prediction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pyapp.matrix import (
    ALL_FAMILIES,
    POOLED,
    RESIDUAL_ALPHA,
    RESIDUAL_MIN_N,
    RESIDUAL_PERMUTATIONS,
    TWO_MODELS,
    Hypothesis,
    StudyReceipt,
    registration,
)
from pyapp.predict import (
    NamedInterval,
    ScoredTask,
    TaskColumns,
    bootstrap,
    bootstrap_p,
    exact_binomial_p,
    holm,
    resample_indices,
    residual_permutation,
    scored_tasks,
)
from pyapp.study.cells import ReadCell

Word = Literal["supported", "not supported", "inconclusive"]
_INDEX: dict[tuple[str, str | None], int] = {("brier", "product"): 0, ("brier", "state-aware"): 1}
_INDEX |= {("skill", "product"): 2, ("skill", "state-aware"): 3, ("brier-difference", None): 4}
"""A metric's place in `TaskColumns.statistics`."""


@dataclass(frozen=True)
class Verdict:
    """One hypothesis, judged (or, post hoc, only described)."""

    id: str
    """The hypothesis's id."""
    statement: str
    """The claim in words."""
    registration: Literal["preregistered", "post hoc"]
    """`preregistered` (frozen unchanged in the study receipt) or `post hoc`."""
    claim: str
    """The metric, slice, direction and margin in words."""
    test: str
    """The test in words (pairing, method, one-sided, α, correction)."""
    verdict: Word | None
    """supported, not supported, inconclusive; null for a post-hoc hypothesis."""
    reason: str | None
    """Why inconclusive (underpowered / undefined …) or post hoc; null otherwise."""
    estimate: float | None
    """The metric over the slice; null when undefined."""
    interval: NamedInterval | None
    """Its 95 % percentile-bootstrap interval (two-sided, descriptive)."""
    p_value: float | None
    """The one-sided p-value before correction."""
    p_corrected: float | None
    """After Holm's correction across the preregistered hypotheses (the uncorrected one
    when `correction` is none); null post hoc or when inconclusive."""
    n: int
    """Tasks (pairs of tasks for a paired difference of models)."""
    alpha: float
    """The level."""
    informed_by: str | None
    """What earlier observation suggested it."""
    text: str
    """The verdict in one line."""


@dataclass(frozen=True)
class ResidualTest:
    """Whether subject identity explains composed outcomes beyond the frozen prediction."""

    condition: str
    """The condition."""
    family: str
    """`all families` or one family."""
    models: tuple[str, str]
    """The two models (A, B), as the plan writes them."""
    n: int
    """Tasks both answered."""
    estimate: float | None
    """Mean residual of A − mean residual of B over those tasks."""
    p_value: float | None
    """Two-sided permutation p-value."""
    p_corrected: float | None
    """After Holm across the study's residual tests."""
    verdict: Word
    """supported (identity explains outcomes), not supported, inconclusive."""
    reason: str | None
    """Why inconclusive."""
    text: str
    """The verdict in one line."""


Source = Callable[[str, str, str, str], tuple[list[ScoredTask], bool]]
"""(model, condition, family, rung) → the slice's tasks and whether a profile in it is
exploratory: the study's cells (`cell_source`) or constructed data (the tests)."""


def cell_source(cells: Sequence[ReadCell]) -> Source:
    """The slices of the study's cells."""
    return lambda model, condition, family, rung: _tasks(cells, model, condition, family, rung)


def _tasks(
    cells: Sequence[ReadCell], model: str, condition: str, family: str, rung: str
) -> tuple[list[ScoredTask], bool]:
    """The slice's tasks (each task's stratum its rung) and whether a profile is exploratory."""
    found: list[ScoredTask] = []
    exploratory = False
    for c in cells:
        preset = c.preset or c.cell.preset
        if c.cell.model != model or (rung != POOLED and preset != rung):
            continue
        for result in c.doc.conditions:
            if result.frozen.profile.condition == condition:
                exploratory |= bool(result.frozen.exploratory)
                chosen = scored_tasks(result, c.cell.name, c.seed, preset)
                found += [t for t in chosen if family in (ALL_FAMILIES, t.family)]
    return found, exploratory


def _statistic(h: Hypothesis, tasks: Sequence[ScoredTask]) -> tuple[TaskColumns, int | None]:
    # a one-model brier-difference is its own column; a two-model skill-difference or
    # brier... difference is the difference of the metric's column between the models
    metric = h.metric if (h.metric, h.predictor) in _INDEX else h.metric.replace("-difference", "")
    return TaskColumns(tasks), _INDEX.get((metric, h.predictor))


def _value(
    h: Hypothesis, cols: TaskColumns, index: int | None, chosen: Sequence[int]
) -> float | None:
    if not chosen:
        return None
    if h.metric in ("success-rate", "rate-difference"):
        return math.fsum(cols.outcome[i] for i in chosen) / len(chosen)
    assert index is not None
    value = cols.statistics(chosen)[index]
    return None if value is None or math.isinf(value) else value


def _pairs(
    a: Sequence[ScoredTask], b: Sequence[ScoredTask]
) -> tuple[list[ScoredTask], list[ScoredTask]]:
    """The tasks both models answered (the same seed, rung and task id), aligned."""
    of_b = {(t.seed, t.stratum, t.task_id): t for t in b}
    kept = [(t, of_b[k]) for t in a if (k := (t.seed, t.stratum, t.task_id)) in of_b]
    return [x for x, _ in kept], [y for _, y in kept]


def _strata(tasks: Sequence[ScoredTask], offset: int = 0) -> list[list[int]]:
    names = sorted({t.stratum for t in tasks})
    return [[offset + i for i, t in enumerate(tasks) if t.stratum == s] for s in names]


@dataclass(frozen=True)
class _Figures:
    estimate: float | None
    values: list[float | None]
    n: int
    why: str | None


def _figures(
    h: Hypothesis, a: list[ScoredTask], b: list[ScoredTask] | None, resamples: int, seed: int
) -> _Figures:
    """The estimate and its bootstrap values (one per resample) over the slice."""
    if b is None:
        cols, index = _statistic(h, a)
        everything = list(range(len(a)))
        values = [_value(h, cols, index, d) for d in resample_indices(_strata(a), resamples, seed)]
        return _Figures(_value(h, cols, index, everything), values, len(a), None)
    first = len(a)
    if h.pairing == "paired":
        a, b = _pairs(a, b)
        if not a:
            return _Figures(None, [], 0, "no task answered by both models")
        strata, n = _strata(a), len(a)
    else:
        strata, n = _strata(a) + _strata(b, offset=first), min(len(a), len(b))

    def split(chosen: Sequence[int]) -> tuple[Sequence[int], Sequence[int]]:
        if h.pairing == "paired":  # the same tasks for both
            return chosen, chosen
        return [i for i in chosen if i < first], [i - first for i in chosen if i >= first]

    ca, ia = _statistic(h, a)
    cb, ib = _statistic(h, b)

    def diff(chosen: Sequence[int]) -> float | None:
        da, db = split(chosen)
        va, vb = _value(h, ca, ia, da), _value(h, cb, ib, db)
        return None if va is None or vb is None else va - vb

    everything = list(range(len(a) + (0 if h.pairing == "paired" else len(b))))
    values = [diff(d) for d in resample_indices(strata, resamples, seed)]
    return _Figures(diff(everything), values, n, None)


def _words(h: Hypothesis) -> tuple[str, str]:
    of = f"{h.predictor} " if h.predictor else ""
    subject = h.model + (f" − {h.versus}" if h.versus else "")
    where = f"{h.condition} · {h.family} · {'pooled over rungs' if h.rung == POOLED else h.rung}"
    sign = ">" if h.direction == "greater" else "<"
    claim = f"{of}{h.metric} ({subject}; {where}) {sign} {h.margin:g}"
    method = "exact binomial" if h.method == "exact" else "percentile bootstrap"
    test = f"{h.pairing} {method}, one-sided, α {h.alpha:g}, correction {h.correction}"
    return claim, test


def _judge(
    h: Hypothesis, source: Source, resamples: int, seed: int
) -> tuple[_Figures, NamedInterval | None, float | None, str | None]:
    a, exploratory = source(h.model, h.condition, h.family, h.rung)
    b = None
    if h.metric in TWO_MODELS:
        assert h.versus is not None
        b, other = source(h.versus, h.condition, h.family, h.rung)
        exploratory |= other
    fig = _figures(h, a, b, resamples, seed)
    why = fig.why
    needs_aware = h.predictor == "state-aware" or h.metric == "brier-difference"
    if fig.n == 0:
        why = why or "no tasks in the slice"
    elif needs_aware and any(t.state_aware is None for t in a + (b or [])):
        why = "no state-aware prediction in part of the slice"
    elif fig.estimate is None:
        why = "the statistic is undefined (every outcome equal: climatology is perfect)"
    elif exploratory:
        why = "an exploratory profile is in the slice (held-out tasks seen before a freeze)"
    if why is not None:
        return fig, None, None, f"undefined: {why}"
    interval = bootstrap(fig.values, fig.n, resamples, seed)
    p: float | None = bootstrap_p(fig.values, h.margin, h.direction)
    if h.method == "exact":
        p = exact_binomial_p(sum(1 for t in a if t.outcome), len(a), h.margin, h.direction)
    if p is None:
        return fig, interval, None, "undefined: the statistic is undefined in every resample"
    if fig.n < h.min_n:
        return fig, interval, p, f"underpowered: n {fig.n} < {h.min_n}"
    return fig, interval, p, None


def judge_hypotheses(
    current: Sequence[Hypothesis],
    receipt: StudyReceipt | None,
    source: Source,
    resamples: int,
    seed: int,
) -> tuple[Verdict, ...]:
    """Every hypothesis: the receipt's (preregistered, judged with its frozen seeds), then the
    plan's others (post hoc, described only)."""
    frozen = [] if receipt is None else [f.hypothesis for f in receipt.hypotheses]
    settings = (
        {}
        if receipt is None
        else {f.hypothesis.id: (f.resamples, f.bootstrap_seed) for f in receipt.hypotheses}
    )
    post_hoc = [h for h in current if registration(h, receipt) == "post hoc"]
    judged = [(h, *_judge(h, source, *settings[h.id])) for h in frozen]
    judged += [(h, *_judge(h, source, resamples, seed)) for h in post_hoc]
    family = [i for i, (h, *_) in enumerate(judged[: len(frozen)]) if h.correction == "holm"]
    p_family = [judged[i][3] if judged[i][4] is None else None for i in family]
    corrected = dict(zip(family, holm([1.0 if q is None else q for q in p_family]), strict=True))
    found = []
    for i, (h, fig, interval, p, why) in enumerate(judged):
        claim, test = _words(h)
        pre = i < len(frozen)
        if not pre:
            word: Word | None = None
            reason = "post hoc: added or edited after the study receipt; no confirmatory verdict"
            p_corr = None
        elif why is not None:
            word, reason, p_corr = "inconclusive", why, None
        else:
            p_corr = corrected.get(i, p)
            word = "supported" if p_corr is not None and p_corr <= h.alpha else "not supported"
            reason = None
        found.append(
            Verdict(
                h.id,
                h.statement,
                "preregistered" if pre else "post hoc",
                claim,
                test,
                word,
                reason,
                fig.estimate,
                interval,
                p,
                p_corr,
                fig.n,
                h.alpha,
                h.informed_by,
                _line(h.id, word, reason, fig.estimate, interval, p, p_corr, fig.n),
            )
        )
    return tuple(found)


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _line(
    name: str,
    word: Word | None,
    reason: str | None,
    estimate: float | None,
    interval: NamedInterval | None,
    p: float | None,
    p_corr: float | None,
    n: int,
) -> str:
    head = "POST HOC (no verdict)" if word is None else word.upper()
    if word == "inconclusive":
        head += f" ({reason})"
    span = "" if interval is None else f" [{_num(interval.low)}, {_num(interval.high)}]"
    figures = f"estimate {_num(estimate)}{span}, p {_num(p)}"
    figures += "" if word is None else f", corrected p {_num(p_corr)}"
    return f"{name}: {head} — {figures}, n {n}"


@dataclass(frozen=True)
class ResidualSettings:
    """The residual tests' settings (the receipt's, or the defaults without one)."""

    permutations: int = RESIDUAL_PERMUTATIONS
    seed: int = 0
    alpha: float = RESIDUAL_ALPHA
    min_n: int = RESIDUAL_MIN_N


def settings_of(receipt: StudyReceipt | None) -> ResidualSettings:
    if receipt is None:
        return ResidualSettings()
    return ResidualSettings(
        receipt.residual_permutations,
        receipt.residual_seed,
        receipt.residual_alpha,
        receipt.residual_min_n,
    )


def residual_tests(
    source: Source, models: Sequence[str], conditions: Sequence[str], receipt: ResidualSettings
) -> tuple[ResidualTest, ...]:
    """Per two models, condition and family: the model-identity residual test."""
    rows: list[tuple[str, str, tuple[str, str], int, float | None, float | None, str | None]] = []
    for i, ma in enumerate(models):
        for mb in models[i + 1 :]:
            for condition in conditions:
                a_all, ea = source(ma, condition, ALL_FAMILIES, POOLED)
                b_all, eb = source(mb, condition, ALL_FAMILIES, POOLED)
                for family in [ALL_FAMILIES, *sorted({t.family for t in a_all + b_all})]:
                    a = [t for t in a_all if family in (ALL_FAMILIES, t.family)]
                    b = [t for t in b_all if family in (ALL_FAMILIES, t.family)]
                    rows.append((condition, family, (ma, mb), *_residual(a, b, ea or eb, receipt)))
    family_ = [k for k, r in enumerate(rows) if r[6] is None]
    adjusted = dict(zip(family_, holm([rows[k][5] or 1.0 for k in family_]), strict=True))
    found = []
    for k, (condition, fam, pair, n, est, p, why) in enumerate(rows):
        p_corr = adjusted.get(k)
        word: Word = (
            "inconclusive"
            if why
            else (
                "supported" if p_corr is not None and p_corr <= receipt.alpha else "not supported"
            )
        )
        text = (
            f"{pair[0]} vs {pair[1]}, {condition} · {fam}: {word.upper()}"
            + (f" ({why})" if why else "")
            + f" — mean residual difference {_num(est)}, p {_num(p)}, corrected p "
            f"{_num(p_corr)}, n {n}"
        )
        found.append(ResidualTest(condition, fam, pair, n, est, p, p_corr, word, why, text))
    return tuple(found)


def _residual(
    a: Sequence[ScoredTask], b: Sequence[ScoredTask], exploratory: bool, receipt: ResidualSettings
) -> tuple[int, float | None, float | None, str | None]:
    pa, pb = _pairs(a, b)
    if any(t.state_aware is None for t in pa + pb):
        return len(pa), None, None, "undefined: no state-aware prediction in part of the slice"
    d = [
        (float(x.outcome) - (x.state_aware or 0.0)) - (float(y.outcome) - (y.state_aware or 0.0))
        for x, y in zip(pa, pb, strict=True)
    ]
    result = residual_permutation(d, receipt.permutations, receipt.seed)
    if result is None:
        return 0, None, None, "undefined: no task answered by both models"
    if exploratory:
        return len(d), result[0], result[1], "undefined: an exploratory profile is in the slice"
    if len(d) < receipt.min_n:
        return len(d), result[0], result[1], f"underpowered: n {len(d)} < {receipt.min_n}"
    return len(d), result[0], result[1], None
