"""Which recorded trials are never scored, written once for whoever reads a trace.

The code that writes a trace keeps these out of `trials` (`pyapp.experiment.phases`: an
infrastructure failure or a Cancel becomes an interruption; a sweep refuses task parameters
the chain cannot run). A trace is a file, though, and a file can be edited: `reproduce` and
`score` apply the same rules themselves, so such a trial placed among the scored ones is a
mismatch that names its rule, never an observation.

| rule                      | a trial in `trials` that ...                                   |
|---------------------------|----------------------------------------------------------------|
| `stalled`                 | failed `stalled`: the worker sent no token for longer than the |
|                           | stall window (an infrastructure interruption, §4a)             |
| `interrupted`             | failed `cancelled`: the user's Cancel cut it short             |
| `infrastructure`          | failed with a code of kind `infrastructure` (worker error,     |
|                           | reload failure, busy, bad reply, ...)                          |
| `capacity refusal`        | halted `route_call_budget`: its route needs more calls than a  |
|                           | route allows (protocol capacity, never the model's failure)    |
| `zero-call budget failure`| halted on a route budget before any model call was made        |

An `unsupported` chain route (zero calls, kind `not_attempted`) is recorded as a trial and is
never predicted, so it never enters a score: it is not a mismatch.
"""

from __future__ import annotations

from pyapp.conditions import kind_of
from pyapp.records import Trial

ROUTE_BUDGETS = ("route_call_budget", "route_input_budget", "route_output_budget")
"""The route's own budgets: refused before a call is made."""

RULES: dict[str, str] = {
    "stalled": (
        "the worker sent no token for longer than the stall window: an infrastructure "
        "interruption, kept under `interruptions` and attempted again"
    ),
    "interrupted": (
        "the user's Cancel cut it short: an interruption, kept under `interruptions` and "
        "attempted again"
    ),
    "infrastructure": (
        "the machinery failed, not the model: kept under `interruptions` and attempted again"
    ),
    "capacity refusal": (
        "its route needs more calls than a route allows: protocol capacity is never the "
        "model's failure (a sweep refuses such task parameters at its start)"
    ),
    "zero-call budget failure": (
        "its route was refused on a budget before any model call: nothing of the model was observed"
    ),
}
"""Each rule's name and why a trial it names is never an observation."""


def never_scored(trial: Trial) -> str | None:
    """The name of the rule (`RULES`) that keeps `trial` out of every score; None when the
    trial is an observation (or an unsupported route, which nothing predicts)."""
    failure = trial.failure
    if failure is None:
        return None
    code = failure.code
    if code == "stalled":
        return "stalled"
    kind = kind_of(code)
    if kind == "cancelled":
        return "interrupted"
    if kind == "infrastructure":
        return "infrastructure"
    if code == "route_call_budget":
        return "capacity refusal"
    calls = trial.chain.calls if trial.chain is not None else None
    if code in ROUTE_BUDGETS and calls == ():
        return "zero-call budget failure"
    return None


def never_scored_line(trial: Trial) -> str | None:
    """What `reproduce` and `score` say of such a trial (None: it may be scored)."""
    rule = never_scored(trial)
    if rule is None:
        return None
    code = trial.failure.code if trial.failure is not None else None
    return (
        f"{trial.trial_id} failed {code!r}: never scored ({rule}: {RULES[rule]}), but it is "
        "recorded among the scored trials"
    )
