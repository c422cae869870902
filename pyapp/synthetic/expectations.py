"""What the validation expects, written before any number is run (docs/validation.md).

Each structure's expectation says where the product *should* be wrong and by about how much;
the exact expected value of every statistic is also computed from the structure itself
(`checks.Check.expected`) and printed beside the estimate. The margins and effect sizes are
those of `pyapp.synthetic.checks`, justified here.
"""

from __future__ import annotations

from pyapp.synthetic.checks import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    MARGIN_BRIER,
    MARGIN_P,
    POWER_TARGET,
    STATE_INFORMATIVE,
)

EXPECTATIONS: dict[str, str] = {
    "independent": (
        "The product's assumptions hold. It is calibrated for all-step correctness except for "
        "its plug-in bias E[p̂ᵏ] ≥ pᵏ (docs/predictor.md §2): too optimistic by about +0.04 to "
        "+0.08 on the design preset (6 trials per op), under +0.01 on calibration-60. Once "
        f"that known bias is removed it is calibrated within ±{MARGIN_P}. State carries no "
        f"information: the state-aware predictor gains nothing over the product with the same "
        f"prior (within ±{MARGIN_BRIER} Brier)."
    ),
    "size-dependent": (
        "A2 fails: composition steps see operands of other sizes than the probes, so the "
        "product is miscalibrated in the direction of the size difference (printed per row as "
        "the expected value). With the digit-stratified calibration-60 set the state-aware "
        f"predictor beats the product with the same prior by at least {MARGIN_BRIER} Brier; "
        "with the design's 6 narrow-range probes per op no claim is made."
    ),
    "correlated": (
        "A1 fails with positive dependence: a trial's steps fail together, so P(all steps "
        "right) is above the product of the marginal rates: the product (and the naive proxy "
        "built on it) is too pessimistic for whole tasks and chains, by more for longer tasks. "
        "State carries no information."
    ),
    "cancelling": (
        "After a wrong step the next compensates with probability 0.8. All-step correctness "
        "stays as under `independent` (the first wrong step settles it); final correctness is "
        "more frequent than all-step correctness in chains, so the naive proxy is too "
        "pessimistic for chains and model-only answers. Written programs do not cancel (only "
        "computed values are compensated): model-program behaves as `independent`."
    ),
    "depth": (
        "The failure the instrument exists to catch. Perfect on every primitive and every "
        "chain (one step per call): the product predicts 1 and chains are exactly calibrated. "
        "A whole task of n ≥ 3 steps is right with 0.5^(n−2) only, so the product over-predicts "
        "model-only and model-program success by about 0.9; only the gap between chains and "
        "whole tasks reveals it. Digits carry no information: no gain from state."
    ),
    "carry": (
        "Add and sub steps drop each carry or borrow with probability 0.1; mul is perfect. "
        "On the design preset a probe's add or sub has 2.7 carries on average (task seeds "
        "1–100, counted from the generator, not from any outcome) while a composition's add "
        "and sub steps have 1.4 (determinants, derivatives) to 1.9 (recurrences): the profile "
        "rates are too low for the compositions, so the product is too pessimistic in every "
        "condition (the exact expected value per row is computed). Digit counts bound the "
        "carries: on calibration-60 the state-aware predictor beats the product with the same "
        "prior."
    ),
    "encoding": (
        "A4 fails: a step of a prose-rendered task is wrong with 0.3, a JSON one never. The "
        "profile includes the prose halves of the encoding probes (2 of 6 trials per op on "
        "the design preset: rate ≈ 0.9) while every composition is rendered in JSON and is "
        "perfect, so the product is too pessimistic by about 1 − 0.9ⁿ (0.3 to 0.6 for n = 4 "
        "to 9 ops) in every condition. Digits carry no information."
    ),
    "format": (
        "One draw per generation makes a reply unparseable (0.15). A probe and a whole task are "
        "both one generation (right with 0.85), but the product multiplies per op: too "
        "pessimistic for model-only and model-program by 0.85 − 0.85ⁿ (about 0.3 to 0.5). "
        "Chains make one call per step, so there the product is right up to its plug-in bias."
    ),
    "program": (
        "Each written node deviates with 0.2 on top of the base rates, in probes and "
        "compositions alike, so the product stays calibrated for model-program up to its "
        "plug-in bias (larger here: lower rates); model-only and chains are as under "
        "`independent`."
    ),
}
COST_EXPECTATION = (
    "Synthetic cost = `call_ms` per generation + (`step_ms` + `digit_ms`·digits of the step's "
    "output) per step. Chains make one call per step, so the product's per-op mean costs are "
    "right up to the digit term. A whole-task answer makes one call for all its steps while "
    "each profile trial paid one call, so summing per-op costs over n steps over-predicts by "
    "about (n − 1)·`call_ms` (A3 fails by construction): ≈ +240 ms for model-only and +200 ms "
    "for model-program with the default cost model. Not tested with an interval: the cost "
    "model is deterministic given the steps."
)
WILSON_EXPECTATION = (
    "The 95% Wilson intervals of the profile rates hold the true rate in about 95% of "
    "repetitions; at 6 trials per op the exact coverage for the true rate (printed when the "
    "rate is the same in every seed) can differ from 95% by a few points."
)
MARGINS_TEXT: tuple[str, ...] = (
    f"- **Unit and interval.** The task seed is the unit (a seed's held-out trials share one "
    f"frozen profile). Each statistic is a mean over seeds of a per-seed value with a 95% "
    f"percentile bootstrap interval over seeds ({BOOTSTRAP_RESAMPLES} resamples, fixed "
    f"seed {BOOTSTRAP_SEED}).",
    f"- **Calibrated** means the whole 95% interval of mean p − observed lies inside "
    f"±{MARGIN_P}. Justification: {MARGIN_P} is below the product's own plug-in bias on "
    "the design preset (+0.04 and more), so that bias cannot pass as calibration, and below "
    "the smallest error any shipped structure is built to produce in a condition it "
    "targets; it is above the plug-in bias of calibration-60 (under 0.01).",
    f"- **Brier differences** (product − product-shrunk: gain from shrinkage; product-shrunk "
    f"− state-aware: gain from state) have the margin and stated effect {MARGIN_BRIER}: a "
    "smaller difference changes no ranking a reader would act on.",
    "- **Holds** (a direction check) needs the interval to exclude zero on the stated side. "
    "Its effect size is the statistic's expected value computed from the structure itself: "
    "the expected product E[Π p̂] from the true probe rates (binomial profile) minus the Monte "
    "Carlo truth q of each held-out trial, on the seeds with a Monte Carlo truth. Where that "
    f"expected gap is under {MARGIN_P} the expectation is *calibrated* instead.",
    f"- **Power** at the stated effect (direction) or at the expected value (equivalence), "
    f"from the run's own between-seed standard deviation; the target is "
    f"{POWER_TARGET:.0%}, and each check prints the seeds it would need.",
    "- **The known plug-in bias** is tested as what it is: under `independent` the "
    "uncorrected check expects the product too optimistic by the bias, and a second check "
    "removes each point's exact expected bias E[Π p̂] − Π p and expects calibration.",
    f"- **State versus shrinkage.** `product-shrunk` is the product with each op's rate under "
    f"the state-aware predictor's prior on its bias (logistic MAP, N(0, 2.5²)), scored "
    f"here only. The gain from state is expected only under "
    f"{', '.join(f'`{s}`' for s in STATE_INFORMATIVE)} with calibration-60; everywhere else "
    f"it is expected to be zero within ±{MARGIN_BRIER}.",
)
SHARED_DRAWS = (
    "Every structure draws from its own stream: each draw hashes the SHA-256 of the whole "
    "specification with the task seed, the trial id and the step, so no two structures, "
    "presets or Monte Carlo model seeds share a draw, and each structure's rows are separate "
    "evidence. Common random numbers are used on purpose in two places, each counted once: "
    "(1) the three predictors of one structure × preset × condition are scored on the same "
    "trials, so their Brier differences are paired per seed and each comparison is one "
    "check; (2) a chain's final and all-step verdicts come from the same trials: without "
    "cancellation they are the same row and only all-step is checked; under `cancelling` "
    "their paired difference is the check."
)
