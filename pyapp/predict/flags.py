"""What scores may not be read as, and what they do say, in words — written once for every
place scores are shown: `python -m pyapp score`, the report, Compare (CLI and page), the
page's step 4 and `python -m pyapp study`.

**Degenerate flags** (`degenerate_flags`, one slice; `headline`, a whole run or study):

- constant outcomes — every held-out outcome 0 (or 1): skill against climatology is
  undefined, and a skill against any other reference says nothing about prediction (a
  forecast near 0 "beats" a reference of 0.47 on outcomes that are all 0);
- an undefined skill (pooled over rungs: every rung's outcomes constant);
- too few tasks — n < `MIN_TASKS`: intervals of zero width or none at all;
- a zero-width interval at any n;
- a frozen reference forecast at 0 or 1 (skill against it is meaningless).

A run or study whose held-out outcomes are all 0 says so in its first line (`headline`).

**Answer templates** (`answer`, `difference_answer`): per condition and predictor, from the
slice's numbers only — *beats climatology* when the skill's percentile-bootstrap interval
lies above 0, *fails against climatology* when it lies below 0, *cannot say* when it spans 0,
when the outcomes are constant or when n < `MIN_TASKS`. Every answer is labelled descriptive
(`ANSWER_LABEL`): the confirmatory hypotheses are the test, not these sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pyapp.predict.intervals import (
    DEFAULT_BOOTSTRAP_SEED,
    RUN_RESAMPLES,
    NamedInterval,
)
from pyapp.predict.predictions import ConditionResult, PredictionsDocument
from pyapp.predict.slices import (
    ALL_FAMILIES,
    RUN_SCOPE,
    PredictorFigures,
    SliceFigures,
    scored_tasks,
    slice_figures,
)

MIN_TASKS = 10
"""Below this many held-out tasks a slice gets no answer and a flag."""
ANSWER_LABEL = (
    "Descriptive answer, templated from the numbers below only (the confirmatory "
    "hypotheses are the test):"
)
Verdict = Literal["beats climatology", "fails against climatology", "cannot say"]
VERDICTS: tuple[Verdict, ...] = ("beats climatology", "fails against climatology", "cannot say")


def signed(value: float | None, digits: int = 3) -> str:
    """`+0.123`, `−0.456`, `0.000`; `—` for None."""
    if value is None:
        return "—"
    if abs(value) < 0.5 * 10**-digits:
        return f"{0.0:.{digits}f}"
    return f"{value:+.{digits}f}".replace("-", "−")


def interval_text(interval: NamedInterval | None, digits: int = 3) -> str:
    """`[low, high] (method, details)` or why there is none."""
    if interval is None:
        return "(no interval)"
    if interval.high is None:
        return f"(no interval: {interval.note})"
    low = "−∞" if interval.unbounded_below else signed(interval.low, digits)
    if interval.resamples is not None:
        how = f"{interval.method}, {interval.resamples} resamples, seed {interval.seed}"
    else:
        how = f"{interval.method}, {interval.n} seeds"
    return f"[{low}, {signed(interval.high, digits)}] ({how})"


def _constant(fig: SliceFigures) -> str | None:
    if fig.successes == 0:
        return f"all {fig.n} held-out outcomes are 0 (every task failed)"
    if fig.successes == fig.n:
        return f"all {fig.n} held-out outcomes are 1 (every task right)"
    return None


def _intervals(fig: SliceFigures) -> list[tuple[str, NamedInterval]]:
    found: list[tuple[str, NamedInterval]] = []
    for p in (fig.product, fig.state_aware):
        if p is not None:
            found += [(f"{p.predictor} Brier", p.brier_bootstrap)]
            found += [(f"{p.predictor} skill", p.skill_bootstrap)]
    return found  # the difference is left out: zero width there means identical forecasts


FlagKind = Literal["constant", "undefined", "few", "zero-width", "reference-end"]
"""What a degenerate flag says: constant outcomes, an undefined skill, too few tasks, a
zero-width interval, a frozen reference forecast at 0 or 1."""


@dataclass(frozen=True)
class Flag:
    """One degenerate flag: its kind and its sentence."""

    kind: FlagKind
    words: str


def flags_of(fig: SliceFigures) -> list[Flag]:
    """Why this slice's scores may not be read as they look, each flag with its kind (empty
    when nothing is degenerate). The validation counts them by kind
    (`pyapp.synthetic.validation`); every other reader takes the words (`degenerate_flags`)."""
    flags: list[Flag] = []
    constant = _constant(fig)
    if constant is not None:
        flags.append(
            Flag(
                "constant",
                f"{fig.label}: {constant}: Brier skill against climatology is undefined, and a "
                "skill against any other reference says nothing about prediction.",
            )
        )
    elif fig.product.skill_undefined is not None:
        flags.append(
            Flag(
                "undefined",
                f"{fig.label}: Brier skill against climatology is {fig.product.skill_undefined}.",
            )
        )
    if fig.n < MIN_TASKS:
        flags.append(
            Flag(
                "few",
                f"{fig.label}: only n = {fig.n} held-out tasks (fewer than {MIN_TASKS}): its "
                "intervals are of zero width or missing, and it gets no answer.",
            )
        )
    else:
        zero = [name for name, i in _intervals(fig) if i.width == 0]
        if zero:
            flags.append(
                Flag(
                    "zero-width",
                    f"{fig.label}: zero-width interval ({', '.join(zero)}): every resample "
                    "gives the same value, which shows identical tasks, not certainty.",
                )
            )
    ends = [v for v in (fig.frozen_reference_low, fig.frozen_reference_high) if v in (0.0, 1.0)]
    if ends:
        flags.append(
            Flag(
                "reference-end",
                f"{fig.label}: the frozen reference forecast (the profile's pooled rate) is "
                f"{ends[0]:g}: skill against it is undefined or meaningless.",
            )
        )
    return flags


def degenerate_flags(fig: SliceFigures) -> list[str]:
    """Why this slice's scores may not be read as they look, each in one sentence (empty
    when nothing is degenerate)."""
    return [flag.words for flag in flags_of(fig)]


def headline(figures: Sequence[SliceFigures]) -> str | None:
    """The first line a reader must see: every held-out outcome 0 (or 1) across all the
    slices, or how many slices are flagged; None when none is."""
    if not figures:
        return None
    n = sum(f.n for f in figures)
    if all(f.successes == 0 for f in figures):
        return (
            f"DEGENERATE: all {n} held-out outcomes are 0 — no held-out task was answered right "
            "under any condition. Skill against climatology is undefined and every other skill "
            "score here is meaningless: these scores say nothing about prediction."
        )
    if all(f.successes == f.n for f in figures):
        return (
            f"DEGENERATE: all {n} held-out outcomes are 1 — every held-out task was answered "
            "right. Skill against climatology is undefined: these scores say nothing about "
            "prediction."
        )
    flagged = [f for f in figures if degenerate_flags(f)]
    if not flagged:
        return None
    names = ", ".join(f.label for f in flagged[:4]) + (" …" if len(flagged) > 4 else "")
    return f"DEGENERATE scores in {len(flagged)} of {len(figures)} slices ({names}): see the flags."


@dataclass(frozen=True)
class Answer:
    """One predictor's answer for one slice, in words, from its numbers only."""

    condition: str
    """The condition."""
    scope: str
    """What the slice pools (a run, a rung, a ladder)."""
    predictor: str
    """`product` or `state-aware`."""
    verdict: Verdict
    """`beats climatology`, `fails against climatology` or `cannot say`."""
    reason: str | None
    """Why it cannot say (constant outcomes, n too small, the interval spans 0); null
    otherwise."""
    text: str
    """The sentence."""


def _verdict(fig: SliceFigures, p: PredictorFigures) -> tuple[Verdict, str | None]:
    constant = _constant(fig)
    if constant is not None:
        return "cannot say", f"the held-out outcomes are constant: {constant}"
    if p.skill_undefined is not None:
        return "cannot say", "the held-out outcomes are constant within each rung"
    if fig.n < MIN_TASKS:
        return "cannot say", f"n = {fig.n} is too small (fewer than {MIN_TASKS} tasks)"
    interval = p.skill_bootstrap
    if interval.high is None:
        return "cannot say", f"no interval ({interval.note})"
    if interval.low is not None and interval.low > 0:
        return "beats climatology", None
    if interval.high < 0:
        return "fails against climatology", None
    return "cannot say", "its interval spans 0"


def answer(fig: SliceFigures, predictor: str) -> Answer | None:
    """`predictor`'s answer for this slice (None when the slice has no such predictor)."""
    p = fig.product if predictor == "product" else fig.state_aware
    if p is None:
        return None
    verdict, reason = _verdict(fig, p)
    family = "" if fig.family == ALL_FAMILIES else f", {fig.family}"
    seeds = f"{len(fig.seeds)} seed{'' if len(fig.seeds) == 1 else 's'}"
    numbers = (
        f"Brier skill against {'rung-aware ' if fig.pooled_over_rungs else ''}climatology "
        f"{signed(p.skill)} {interval_text(p.skill_bootstrap)}"
        if p.skill is not None
        else "Brier skill against climatology undefined"
    )
    text = (
        f"{fig.condition}, {predictor} predictor ({fig.scope}{family}): {verdict}"
        f"{f' — {reason}' if reason else ''}. {numbers}; n = {fig.n} tasks, {seeds}, "
        f"{fig.successes} right (base rate {fig.base_rate:.3f})."
    )
    return Answer(fig.condition, fig.scope, predictor, verdict, reason, text)


def difference_answer(fig: SliceFigures) -> str | None:
    """Which predictor's Brier score is lower on this slice, only as far as the paired
    difference's interval says; None without the state-aware predictor."""
    interval = fig.difference_bootstrap
    if interval is None or fig.difference is None:
        return None
    shown = f"{signed(fig.difference, 4)} {interval_text(interval, 4)}"
    if fig.n < MIN_TASKS or interval.high is None or interval.low is None:
        said = "cannot say which predictor's Brier score is lower"
    elif interval.low > 0:
        said = "the state-aware predictor's Brier score is lower than the product's"
    elif interval.high < 0:
        said = "the product's Brier score is lower than the state-aware predictor's"
    else:
        said = "cannot say which predictor's Brier score is lower (the interval spans 0)"
    return f"{fig.condition} ({fig.scope}): {said}: Brier(product) − Brier(state-aware) {shown}."


def run_seed(doc: PredictionsDocument, result: ConditionResult) -> int:
    """The task seed of a run's condition."""
    return doc.task_set.seed if doc.task_set is not None else result.frozen.seed


def run_figures(
    doc: PredictionsDocument,
    resamples: int = RUN_RESAMPLES,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> list[SliceFigures]:
    """One slice per condition of one run that has scored held-out tasks."""
    figures = []
    for result in doc.conditions:
        tasks = scored_tasks(result, doc.trace_run_id, run_seed(doc, result), RUN_SCOPE)
        if tasks:
            condition = result.frozen.profile.condition
            figures.append(
                slice_figures(
                    tasks, condition=condition, scope=RUN_SCOPE, resamples=resamples, seed=seed
                )
            )
    return figures


def climatology_line(fig: SliceFigures) -> str:
    """A run condition's skill against climatology, beside the frozen reference's skill."""
    parts = [f"climatology (the held-out base rate {fig.base_rate:.3f}, n = {fig.n})"]
    for p in (fig.product, fig.state_aware):
        if p is None:
            continue
        skill = (
            f"{signed(p.skill)} {interval_text(p.skill_bootstrap)}"
            if p.skill is not None
            else p.skill_undefined
        )
        parts.append(f"{p.predictor} skill {skill}")
    return "skill against " + "; ".join(parts)


def flag_lines(figures: Sequence[SliceFigures]) -> list[str]:
    """The headline, then every slice's flags: what a reader must see first."""
    first = headline(figures)
    return ([] if first is None else [first]) + [w for f in figures for w in degenerate_flags(f)]


def answer_lines(figures: Sequence[SliceFigures]) -> list[str]:
    """`ANSWER_LABEL`, then each slice's answers per predictor and the difference; empty
    without slices."""
    answers = [a for fig in figures for p in ("product", "state-aware") if (a := answer(fig, p))]
    if not answers:
        return []
    differences = [d for fig in figures if (d := difference_answer(fig)) is not None]
    return [ANSWER_LABEL, *(a.text for a in answers), *differences]


def lines_of(figures: Sequence[SliceFigures]) -> list[str]:
    """What a reader sees first above scores: the flags, then the answers."""
    return flag_lines(figures) + answer_lines(figures)


def run_lines(doc: PredictionsDocument) -> list[str]:
    """`lines_of` one run's conditions (`score`, the report, Compare, the page's step 4)."""
    return lines_of(run_figures(doc))
