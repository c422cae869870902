"""What the validation expects, fixed before any run: committed data and its reasons.

The numbers live in one file, `docs/validation/expectations.json`, written only by
`scripts/validation_expectations.py` (whose diff a reviewer reads): for each named seed list
(`SEED_LISTS`), structure, preset and statistic, the expected value — the mean over the
list's seeds of `pyapp.synthetic.targets.seed_targets`, computed from the structure's
parameters alone — with its truncation bound; and, from a pilot run on other seeds
(`PILOT`), each statistic's between-seed standard deviation, the seeds it needs for 80%
power, and whether it is descriptive (more than `MAX_SEEDS` needed). The file names the
task generator, the chain step prompt and each structure's SHA-256, and each seed list's
chain protocol version (`list_protocols`: `chain-design/1` for every list but those of
`LIST_PROTOCOLS`; a list under `chain-extended/1` has its expected values made with the
extended routes and its pilot run under that protocol, `protocol_pilot_sd`); `plans`
refuses a seed list, structure or preset it does not hold, or one whose structure or
protocol changed since (`InputError`, code `no_expectations`): a run is never checked
against numbers made from itself.

The words below say what each structure is expected to do; the report prints them beside
the numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyapp.errors import InputError
from pyapp.records import (
    CHAIN_STEP,
    DEFAULT_CHAIN_PROTOCOL,
    ChainProtocol,
    chain_protocol,
    read_document,
)
from pyapp.synthetic.checks import (
    FAMILIES,
    MARGIN_GAIN,
    POWER_TARGET,
    Plan,
    family_of,
    seeds_for_80,
)
from pyapp.synthetic.language import shipped
from pyapp.synthetic.targets import STATE_INFORMATIVE
from pyapp.tasks import GENERATOR_VERSION

EXPECTATIONS_PATH = (
    Path(__file__).resolve().parents[2] / "docs" / "validation" / "expectations.json"
)
KIND = "composition-lab-validation-expectations"
SEED_LISTS: dict[str, dict[str, tuple[int, int]]] = {
    "full": {"design": (1, 200), "calibration-60": (1, 40)},
    "reduced": {"design": (1, 100), "calibration-60": (1, 16)},
    "ci": {"design": (1, 16), "calibration-60": (1, 12)},
    "smoke": {"design": (1, 3), "calibration-60": (1, 2)},
    "ci-extended": {"design": (1, 16), "calibration-60": (1, 12)},
}
"""The named seed lists (first, last) per preset: the committed report's, the mutation
bench's, the CI subset's and the smoke test's (all under the design's chain protocol), and
the CI-sized list under the extended chain protocol (`LIST_PROTOCOLS`)."""
LIST_PROTOCOLS: dict[str, str] = {"ci-extended": "extended"}
"""Seed list → the chain protocol (`pyapp.records.terms`) its expectations are made and its
validation is run under; a list not named here is under the design's protocol. Only under
the extended protocol do determinants and derivatives have a chain route, and so checks."""
PILOT: dict[str, tuple[int, int]] = {"design": (1001, 1040), "calibration-60": (1001, 1012)}
"""Seeds of the pilot that sizes each check (disjoint from every seed list)."""
MAX_SEEDS: dict[str, int] = {"design": 2000, "calibration-60": 400}
"""The most seeds a check may need and still count: beyond, it is descriptive."""
HELPERS = ("shrunk-brier", "floor", "base-rate", "heldout-n")
"""Expected values that make another check's expectation (the gain from state, the skill
against climatology), not checks."""
SKILL_OUTCOMES = 10
"""The skill against climatology is judged only where the seed list expects at least this
many held-out successes and as many failures per condition: below, the pooled outcomes can
all be equal and the skill undefined, and its row is descriptive."""
MAX_FILE_BYTES = 4 * 1024 * 1024
MAIN_TARGET = {"controlled-chain": "all_steps"}
"""The target the gain from state is judged on (final correctness elsewhere)."""


def refused(message: str) -> InputError:
    """No committed expectations for what was asked (code `no_expectations`)."""
    return InputError("no_expectations", message)


def list_protocol(seed_list: str) -> ChainProtocol:
    """The chain protocol of a named seed list (`LIST_PROTOCOLS`; the design's otherwise)."""
    name = LIST_PROTOCOLS.get(seed_list)
    return DEFAULT_CHAIN_PROTOCOL if name is None else chain_protocol(name)


def pilot_spreads(data: Mapping[str, Any], protocol: str) -> dict[str, Any]:
    """structure → preset → statistic → the pilot's between-seed sd, under the chain
    protocol version `protocol` (`pilot_sd` for the design's, `protocol_pilot_sd` else)."""
    if protocol == DEFAULT_CHAIN_PROTOCOL.version:
        return dict(data.get("pilot_sd", {}))
    return dict(data.get("protocol_pilot_sd", {}).get(protocol, {}))


def read_expectations(path: Path = EXPECTATIONS_PATH) -> dict[str, Any]:
    """The committed expectations file, its identity checked against this checkout."""
    data = read_document(path, MAX_FILE_BYTES)
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise refused(f"{path}: not a validation expectations file")
    if data.get("generator_version") != GENERATOR_VERSION:
        raise refused(f"{path}: made for task generator {data.get('generator_version')}")
    if data.get("chain_protocol") != CHAIN_STEP:
        raise refused(f"{path}: made for chain protocol {data.get('chain_protocol')}")
    return data


def plans(data: Mapping[str, Any], seed_list: str, structure: str, preset: str) -> dict[str, Plan]:
    """Each statistic's band and power for one structure and preset under a named seed list
    (`InputError` when the file holds none, or holds them for another structure)."""
    lists = data.get("expected", {})
    if seed_list not in lists:
        known = ", ".join(sorted(lists)) or "none"
        raise refused(
            f"no committed expectations for seed list {seed_list!r} (committed: {known}); "
            "regenerate with scripts/validation_expectations.py"
        )
    protocol = list_protocol(seed_list).version
    recorded = data.get("list_protocols", {}).get(seed_list, DEFAULT_CHAIN_PROTOCOL.version)
    if recorded != protocol:
        raise refused(
            f"no committed expectations for seed list {seed_list!r} under chain protocol "
            f"{protocol} (committed under {recorded}; regenerate with "
            "scripts/validation_expectations.py)"
        )
    digest = data.get("structures", {}).get(structure)
    if digest is None or digest != shipped(structure).sha256:
        raise refused(
            f"no committed expectations for structure {structure!r} as it is now "
            "(regenerate with scripts/validation_expectations.py)"
        )
    expected = lists[seed_list].get(structure, {}).get(preset)
    pilot = pilot_spreads(data, protocol).get(structure, {}).get(preset, {})
    if expected is None:
        raise refused(f"no committed expectations for {structure} under {preset}")
    seeds = data["seed_lists"][seed_list][preset]
    n = seeds[1] - seeds[0] + 1
    found: dict[str, Plan] = {}
    for statistic, (value, bound) in sorted(expected.items()):
        condition, target, name = statistic.split("/")
        if name == "shrunk-brier" and target == MAIN_TARGET.get(condition, "final"):
            gain = f"{condition}/{target}/state-gain"
            found[gain] = _plan(gain, 0.0, bound, pilot, expected, structure, preset, n)
        if name not in HELPERS:
            found[statistic] = _plan(statistic, value, bound, pilot, expected, structure, preset, n)
        if name == "base-rate":
            skill = f"{condition}/{target}/skill"
            made = skill_expected(expected, condition, n)
            if made is not None:
                value, bound, enough = made
                plan = _plan(skill, value, bound, pilot, expected, structure, preset, n)
                if not enough:
                    few = f"no claim: fewer than {SKILL_OUTCOMES} expected successes or failures"
                    plan = replace(plan, claim=few, descriptive=True)
                found[skill] = plan
    return dict(sorted(found.items()))


def skill_expected(
    expected: Mapping[str, list[float]], condition: str, seeds: int
) -> tuple[float, float, bool] | None:
    """The product's expected skill against climatology (final correctness) pooled over
    `seeds` seeds, its truncation bound, and whether the list expects at least
    `SKILL_OUTCOMES` successes and as many failures (else the skill may be undefined: the
    check is descriptive): 1 − E[Brier] / E[ō(1 − ō)], where over N tasks E[ō(1 − ō)] =
    Q̄(1 − Q̄) − mean q(1 − q) / N (Q̄ the mean q). None when climatology is expected
    perfect (every q 0 or every q 1: the `constant` check covers it)."""
    parts = [f"{condition}/final/{name}" for name in ("brier", "base-rate", "floor", "heldout-n")]
    if any(part not in expected for part in parts):
        return None
    (brier, brier_bound), (base, _), (floor, _), (per_seed, _) = (expected[p] for p in parts)
    tasks = per_seed * seeds
    reference = base * (1.0 - base) - floor / tasks
    if reference <= 0.0:
        return None
    enough = min(base, 1.0 - base) * tasks >= SKILL_OUTCOMES
    return 1.0 - brier / reference, brier_bound / reference, enough


def _plan(
    statistic: str,
    value: float,
    bound: float,
    pilot: Mapping[str, float],
    expected: Mapping[str, list[float]],
    structure: str,
    preset: str,
    n: int,
) -> Plan:
    family = FAMILIES[family_of(statistic)]
    sd = float(pilot.get(statistic, 0.0))
    if family_of(statistic) in ("coverage", "constant"):  # per seed 0 or 1: Bernoulli(value)
        sd = max(sd, math.sqrt(max(value * (1.0 - value), 0.0)))
    elif family_of(statistic) in ("rate", "reference"):  # at most the binomial spread
        ops = ("add", "sub", "mul")
        name = statistic.replace("rate:", "trials:")
        trials = (
            expected.get(name, [0.0])[0]
            if "rate:" in statistic
            else sum(
                expected.get(statistic.replace("reference", f"trials:{op}"), [0.0])[0] for op in ops
            )
        )
        if trials:
            sd = max(sd, math.sqrt(max(value * (1.0 - value), 0.0) / trials))
    unit = family.unit
    if family_of(statistic) == "state-gain":
        base = statistic.rsplit("/", 1)[0]
        room = expected[f"{base}/shrunk-brier"][0] - expected[f"{base}/floor"][0]
        if structure not in STATE_INFORMATIVE:
            low, high = -MARGIN_GAIN, MARGIN_GAIN
            claim = f"state carries no information: gain within ±{MARGIN_GAIN}"
            value = 0.0
        else:
            low, high = MARGIN_GAIN, room + bound
            claim = f"state helps: gain ≥ {MARGIN_GAIN}, ≤ {room:.3f} (room above the Bayes floor)"
            value = MARGIN_GAIN
        descriptive = structure in STATE_INFORMATIVE and preset == "design"
        if descriptive:
            claim = "no claim: 6 probes per op from a narrow size range"
    else:
        half = family.margin + bound
        low, high = value - half, value + half
        claim = f"{value:+.3f}{unit} ± {half:.3f}{unit}"
        descriptive = False
    needed = seeds_for_80(family.deviation, (high - low) / 2, sd, MAX_SEEDS[preset])
    return Plan(
        expected=value,
        low=low,
        high=high,
        claim=claim,
        pilot_sd=sd,
        seeds_for_80=needed,
        descriptive=descriptive or needed is None,
    )


def write_expectations(path: Path, data: Mapping[str, Any]) -> None:
    """The one writer of the file (`scripts/validation_expectations.py`)."""
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


EXPECTATIONS: dict[str, str] = {
    "independent": (
        "The product's assumptions hold; it is calibrated for all-step correctness up to its "
        "plug-in bias E[Π p̂ᵏ] ≥ Π pᵏ (docs/predictor.md §2): too optimistic by several "
        "hundredths on the design preset (6 trials per op), under 0.01 on calibration-60. "
        "State carries no information."
    ),
    "size-dependent": (
        "A2 fails: composition steps see operands of other sizes than the probes, so the "
        "product is miscalibrated in the direction of the size difference. With the "
        "digit-stratified calibration-60 set the state-aware predictor beats the product "
        f"with the same prior by at least {MARGIN_GAIN} Brier (and by no more than the room "
        "above the Bayes floor); with the design's 6 narrow-range probes per op no claim."
    ),
    "correlated": (
        "A1 fails with positive dependence: with probability ρ a trial's steps share one "
        "draw, so P(all steps right) = ρ(1 − max eᵢ) + (1 − ρ)Π(1 − eᵢ) is above the "
        "product: too pessimistic for whole tasks and chains. State carries no information."
    ),
    "cancelling": (
        "After a wrong step the next compensates with probability 0.8. All-step correctness "
        "stays as under `independent`; final correctness is more frequent than all-step "
        "correctness in chains (the `cancel` statistic), so the naive proxy is too "
        "pessimistic for chains and model-only answers. Written programs do not cancel."
    ),
    "depth": (
        "The failure the instrument exists to catch. Primitives and chains (one step per "
        "call) see only the base rates (0.03, 0.05, 0.08: below 1, so the product, a mean "
        "and the first two rates differ); a whole task fails from its 3rd step on with 0.5, "
        "so the product over-predicts model-only and model-program success by about 0.5 to "
        "0.9; only the gap between chains and whole tasks reveals it. No gain from state."
    ),
    "carry": (
        "Add and sub steps drop each carry or borrow with probability 0.1; mul is perfect. "
        "Probes and compositions carry differently, so the product is miscalibrated by the "
        "exact amount each row states. Digit counts bound the carries: on calibration-60 the "
        "state-aware predictor beats the product with the same prior."
    ),
    "encoding": (
        "A4 fails: a step of a prose-rendered task is wrong with 0.3, a JSON one never. The "
        "profile includes the prose halves of the encoding probes while every composition is "
        "rendered in JSON and is perfect, so the product is too pessimistic in every "
        "condition; the profile rates' true values include the prose probes."
    ),
    "format": (
        "One draw per generation makes a reply unparseable (0.15). A probe and a whole task "
        "are both one generation, but the product multiplies per op: too pessimistic for "
        "model-only and model-program. Chains make one call per step."
    ),
    "program": (
        "Each written node deviates with 0.2 on top of the base rates, in probes and "
        "compositions alike (a corrupted node that happens to give the same value counts as "
        "right), so the product stays calibrated for model-program up to its plug-in bias; "
        "model-only and chains are as under `independent`."
    ),
}
MARGINS_TEXT: tuple[str, ...] = (
    "- **Unit and interval.** The task seed is the unit (a seed's held-out trials share one "
    "frozen profile). Each statistic is a mean over seeds of a per-seed value with a 95% "
    "normal interval whose spread is the larger of the run's between-seed standard "
    "deviation and the one planned before it (the pilot's; for a rate or a coverage at least "
    "the binomial spread its expectation implies), so a few agreeing seeds never give an "
    "interval of width zero.",
    "- **Expected values** come from the structure's parameters alone "
    "(`pyapp/synthetic/closed_form.py`, `closed_chain.py`, `targets.py`): each trial's "
    "success probability by "
    "enumerating the model's finite choices, the profile's Poisson-binomial sampling, the "
    "cost model. They are committed data (`docs/validation/expectations.json`), written "
    "by `scripts/validation_expectations.py` only; a seed list without them is refused.",
    "- **Bands.** expected ± (margin + truncation bound). Margins and the deviation D each "
    "check must detect: "
    + "; ".join(
        f"{name} ±{f.margin:g}{f.unit} (D = {f.deviation:g}{f.unit})"
        for name, f in FAMILIES.items()
    )
    + ". The margins are below the smallest error any shipped structure is built to "
    "produce in a condition it targets, and D is an error a reader would act on.",
    "- **Verdicts.** *holds*: the interval lies inside the band; *consistent*: it overlaps "
    "the band; *contradicted*: it misses the band (an absent effect where one is claimed "
    "is contradicted); *descriptive*: no verdict.",
    f"- **Power**, stated before the run: P(contradicted) when the statistic is off by D, "
    f"from the pilot's between-seed spread; a check that needs more than the affordable "
    f"seeds for {POWER_TARGET:.0%} is *descriptive* and not counted.",
    f"- **State versus shrinkage.** `product-shrunk` is the product with each op's rate at "
    f"the MAP of the state-aware predictor's prior on its bias, N(0, 2.5²) (solved in "
    f"`targets.shrunk`), scored here only. The gain from state is claimed only under "
    f"{', '.join(f'`{s}`' for s in STATE_INFORMATIVE)} with calibration-60 (at least "
    f"{MARGIN_GAIN}, at most the same-prior product's expected Brier minus the Bayes floor "
    f"E q(1 − q)); elsewhere it is expected within ±{MARGIN_GAIN}.",
)
SHARED_DRAWS = (
    "Every structure draws from its own stream: each draw hashes the SHA-256 of the whole "
    "specification with the task seed, the trial id and the step, so no two structures or "
    "presets share a draw, and each structure's rows are separate evidence. The three "
    "predictors of one structure × preset × condition are scored on the same trials, so "
    "the gain from state is paired per seed; a chain's final and all-step verdicts come "
    "from the same trials, and their paired difference is the `cancel` check."
)
