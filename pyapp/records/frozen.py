"""Records a freeze commits to besides the profile: the task set's identity and the
state-aware predictor's fit.

They live here, below `pyapp.predict`, because the trace's `FreezeRecord` carries them
(`records` knows nothing of `predict`); `pyapp.predict.state_aware` fits the model and
re-exports its records.

**Task-set identity.** The seed, the canonical task parameters (every count and range;
the preset a person chose is only a label for them) and the generator version: two runs
with the same identity regenerate the same tasks. `sha256` covers all three;
`params_sha256` covers the parameters without the seed, so runs of different seeds under
the same parameters can be pooled (`pyapp.predict.compare`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from pyapp.records.chain import canonical, sha256_of
from pyapp.tasks import TaskParams

STATE_AWARE_VERSION = "state-aware/1"
"""Version of the state-aware predictor (features, prior, estimator, clamping)."""


@dataclass(frozen=True)
class TaskSetIdentity:
    """What makes two task sets the same: seed, canonical parameters, generator version."""

    seed: int
    """The task seed."""
    task_params: TaskParams
    """Every count and operand range (the seed included), as generated."""
    generator_version: str
    """Task generator version."""
    params_sha256: str
    """SHA-256 of the canonical parameters without the seed (same value: poolable)."""
    sha256: str
    """SHA-256 of the canonical seed, parameters and generator version together."""


def task_set_identity(params: TaskParams, generator_version: str) -> TaskSetIdentity:
    without_seed = {k: v for k, v in _canonical_params(params).items() if k != "seed"}
    return TaskSetIdentity(
        seed=params.seed,
        task_params=params,
        generator_version=generator_version,
        params_sha256=sha256_of({"task_params": without_seed}),
        sha256=sha256_of(
            {"seed": params.seed, "task_params": params, "generator_version": generator_version}
        ),
    )


def _canonical_params(params: TaskParams) -> dict[str, object]:
    value = canonical(params)
    assert isinstance(value, dict)
    return value


@dataclass(frozen=True)
class OpStateModel:
    """One primitive's fitted success and cost as functions of state."""

    op: Literal["add", "sub", "mul"]
    """The primitive."""
    trials: int
    """Profile trials the fit used."""
    successes: int
    """Of which right."""
    coefficients: tuple[float, ...]
    """Logistic coefficients, in the order of `features`; null fit → all zero (p = ½)."""
    cost_coefficients: tuple[float, ...] | None
    """Cost regression coefficients (ms), in the order of `features`; null with no costs."""
    feature_low: tuple[float, ...]
    """Smallest value of each feature among the profile trials (empty with no trials)."""
    feature_high: tuple[float, ...]
    """Largest value of each feature among the profile trials: a step's features are
    clamped into [low, high] before use, so the fit is never extrapolated."""


@dataclass(frozen=True)
class StateAwareModel:
    """The state-aware predictor as frozen: features, prior and per-op fits."""

    features: tuple[str, ...]
    """Names of the state features, in coefficient order."""
    prior: str
    """The stated prior and estimator."""
    ops: tuple[OpStateModel, ...]
    """add, sub, mul in that order."""
    sha256: str
    """SHA-256 of the canonical JSON of `features`, `prior` and `ops`."""
    version: str | None = dataclasses.field(default=None, metadata={"optional_on_read": True})
    """The predictor's version (`state-aware/1`); absent in documents older than
    predictions/4."""
