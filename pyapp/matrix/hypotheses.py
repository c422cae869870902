"""A study plan's `[[hypotheses]]` and `[[prior_exposure]]`: claims written before the data.

    [[hypotheses]]
    id = "aware-skill-chains-subject"
    statement = "the state-aware predictor beats climatology on controlled chains"
    metric = "skill"                 # brier, skill, brier-difference, success-rate,
                                     # skill-difference, rate-difference
    predictor = "state-aware"        # brier, skill (and skill-difference)
    model = "subject"                # a model of axes.models, as written
    condition = "controlled-chain"
    family = "all families"          # or one family (affine_recurrence, …)
    rung = "pooled"                  # or one rung (subject-ladder/2) or preset
    direction = "greater"            # the claim: estimate > margin ("less": < margin)
    margin = 0.0
    pairing = "paired"               # paired (the same tasks) or unpaired
    method = "bootstrap"             # bootstrap, or exact (success-rate only: binomial)
    alpha = 0.05
    correction = "holm"              # Holm across the plan's preregistered hypotheses
    min_n = 100                      # fewer tasks: inconclusive (underpowered)
    informed_by = "the shipped study (seeds 11-13, docs/study.md)"

    [[prior_exposure]]
    source = "docs/study.md: the shipped subject study"
    models = ["subject"]
    seeds = [11, 12, 13]
    presets = ["subject-ladder"]

A difference (`brier-difference`: Brier(product) − Brier(state-aware); `skill-difference`,
`rate-difference`: `model`'s figure − `versus`'s) is paired over the same held-out tasks.
Every test is one-sided. `check_hypotheses` refuses (one line naming the key) what does not
fit: an unknown model or condition, `exact` on a metric it has no exact test for, a repeated
id, a confirmatory seed the prior exposure says was already observed. The study receipt
(`pyapp.matrix.study_receipt`) freezes them; `python -m pyapp study` judges them
(`pyapp.study.verdicts`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pyapp.errors import InputError
from pyapp.records import canonical_text

OPTIONAL = {"optional_on_read": True}
Metric = Literal[
    "brier", "skill", "brier-difference", "success-rate", "skill-difference", "rate-difference"
]
POOLED = "pooled"
"""The `rung` of a hypothesis over every rung of the ladder (or the plan's one preset)."""
ALL_FAMILIES = "all families"
TWO_MODELS = ("skill-difference", "rate-difference")
WITH_PREDICTOR = ("brier", "skill", "skill-difference")


@dataclass(frozen=True)
class Hypothesis:
    """One claim, fixed before the data: metric, slice, direction, margin, test."""

    id: str
    """Its name (unique in the plan; letters, digits, `-`, `_`, `.`)."""
    statement: str
    """The claim in words."""
    metric: Metric
    """`brier`, `skill` (against climatology; rung-aware when pooled), `brier-difference`
    (Brier(product) − Brier(state-aware)), `success-rate`, `skill-difference` or
    `rate-difference` (`model`'s − `versus`'s)."""
    model: str
    """A model of `axes.models`, as written (its `id`)."""
    condition: str
    """The condition (`model-only`, `model-program`, `controlled-chain`)."""
    direction: Literal["greater", "less"]
    """The claim: the estimate is greater (less) than `margin`."""
    predictor: Literal["product", "state-aware"] | None = field(default=None, metadata=OPTIONAL)
    """The predictor of `brier`, `skill` and `skill-difference`."""
    versus: str | None = field(default=None, metadata=OPTIONAL)
    """The second model of a `skill-difference` or `rate-difference`."""
    family: str = field(default=ALL_FAMILIES, metadata=OPTIONAL)
    """`all families` or one task family."""
    rung: str = field(default=POOLED, metadata=OPTIONAL)
    """`pooled` (every rung, rung-aware climatology) or one rung or preset."""
    margin: float = field(default=0.0, metadata=OPTIONAL)
    """The threshold the claim is about."""
    pairing: Literal["paired", "unpaired"] = field(default="paired", metadata=OPTIONAL)
    """`paired`: resample the same tasks for both figures; `unpaired`: each on its own."""
    method: Literal["bootstrap", "exact"] = field(default="bootstrap", metadata=OPTIONAL)
    """`bootstrap` (percentile, one-sided) or `exact` (binomial; `success-rate` only)."""
    sided: Literal["one-sided"] = field(default="one-sided", metadata=OPTIONAL)
    """Every test is one-sided, in `direction`."""
    alpha: float = field(default=0.05, metadata=OPTIONAL)
    """The level the corrected p-value is compared with."""
    correction: Literal["holm", "none"] = field(default="holm", metadata=OPTIONAL)
    """`holm`: Holm's step-down correction across the plan's preregistered hypotheses."""
    min_n: int = field(default=100, metadata=OPTIONAL)
    """Fewer tasks (pairs, for a difference of models) than this: inconclusive
    (underpowered)."""
    informed_by: str | None = field(default=None, metadata=OPTIONAL)
    """What earlier observation suggested the claim (the exploratory run, a shipped study);
    null when nothing did."""


@dataclass(frozen=True)
class PriorExposure:
    """Seeds and task sets already observed before the study (no confirmatory cell may
    repeat them)."""

    source: str
    """Where they were observed, in words."""
    seeds: tuple[int, ...]
    """The task seeds observed."""
    models: tuple[str, ...] = field(default=(), metadata=OPTIONAL)
    """The models that saw them (empty: every model)."""
    presets: tuple[str, ...] = field(default=(), metadata=OPTIONAL)
    """The presets or ladders observed (empty: every task set)."""


def hypothesis_sha256(h: Hypothesis) -> str:
    """SHA-256 of the hypothesis's canonical JSON: an edit of any field changes it."""
    return hashlib.sha256(canonical_text(h).encode("utf-8")).hexdigest()


def _bad(path: Path, key: str, message: str) -> InputError:
    return InputError("bad_plan", f"{key}: {message}", path=str(path))


def check_hypotheses(
    hypotheses: Sequence[Hypothesis],
    exposure: Sequence[PriorExposure],
    models: Sequence[str],
    conditions: Sequence[str],
    seeds: Sequence[int],
    presets: Sequence[str],
    path: Path,
) -> None:
    """Refuse, in one line naming the key, a hypothesis the plan cannot judge, or a plan
    whose cells repeat a seed its prior exposure lists."""
    seen: set[str] = set()
    for i, h in enumerate(hypotheses):
        key = f"hypotheses[{i}]"
        if not h.id or not all(c.isalnum() or c in "-_." for c in h.id) or len(h.id) > 80:
            raise _bad(path, f"{key}.id", "letters, digits, '-', '_' or '.' (1..80)")
        if h.id in seen:
            raise _bad(path, f"{key}.id", f"{h.id!r} is used twice")
        seen.add(h.id)
        for name, value in (("model", h.model), ("versus", h.versus)):
            if value is not None and value not in models:
                raise _bad(path, f"{key}.{name}", f"{value!r} is not a model of axes.models")
        if (h.versus is not None) != (h.metric in TWO_MODELS):
            raise _bad(path, f"{key}.versus", f"given exactly for {' and '.join(TWO_MODELS)}")
        if h.versus == h.model:
            raise _bad(path, f"{key}.versus", "the same model as `model`")
        if (h.predictor is not None) != (h.metric in WITH_PREDICTOR):
            raise _bad(path, f"{key}.predictor", f"given exactly for {', '.join(WITH_PREDICTOR)}")
        if conditions and h.condition not in conditions:
            raise _bad(path, f"{key}.condition", f"{h.condition!r} is not a condition of the plan")
        if h.rung != POOLED and h.rung not in presets:
            raise _bad(path, f"{key}.rung", f"{h.rung!r} is not a rung or preset of the plan")
        if h.method == "exact" and h.metric != "success-rate":
            raise _bad(path, f"{key}.method", "exact is the binomial test of a success-rate")
        if h.metric == "brier-difference" and h.pairing != "paired":
            raise _bad(path, f"{key}.pairing", "both predictors score the same tasks: paired")
        if h.method == "exact" and h.pairing != "unpaired":
            raise _bad(path, f"{key}.pairing", "the exact binomial test is unpaired")
        if not 0 < h.alpha < 1:
            raise _bad(path, f"{key}.alpha", "must lie in (0, 1)")
        if not -1e6 < h.margin < 1e6:
            raise _bad(path, f"{key}.margin", "must be a finite number")
        if h.min_n < 1:
            raise _bad(path, f"{key}.min_n", "must be at least 1")
    for i, p in enumerate(exposure):
        for seed in seeds:
            hit = seed in p.seeds and (not p.models or any(m in models for m in p.models))
            if hit and (not p.presets or any(x in presets for x in p.presets)):
                raise _bad(
                    path,
                    f"prior_exposure[{i}].seeds",
                    f"seed {seed} was observed before ({p.source}): a confirmatory cell uses "
                    "seeds never run before",
                )
